// Opt-in content capture of the real filter.wasm (emulated Envoy host) to a real OTLP/HTTP receiver
// on 127.0.0.1: off by default; on per policy and per route; sampled LLM calls only; the GenAI
// content attributes (gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages)
// structured as open-telemetry/semantic-conventions-genai defines them (docs/gen-ai/
// gen-ai-input-messages.json and gen-ai-output-messages.json at 8f24f0e: messages {role, parts:
// [{type: "text", content}]}, output messages with a finish_reason); truncated to spans.content.maxBytes;
// every protocol's text; counted; never in stats or logs.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../../support/otlp-receiver.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { countingRandom, loadContentFilter } from "../support.js";

const T0 = 1_700_000_000_000_000_000n;
const fixture = (path: string): string => readFileSync(new URL(`../../fixtures/llm/${path}`, import.meta.url), "utf8");

// The conventions' message shapes, as far as text parts go (gen-ai-input-messages.json,
// gen-ai-output-messages.json: role and parts required, output messages also finish_reason; a
// TextPart is {type: "text", content}; the system instructions are a list of parts).
const textPart = { type: "object", required: ["type", "content"], properties: { type: { const: "text" }, content: { type: "string" } } };
const ajv = new Ajv2020({ strict: true });
const inputMessages = ajv.compile({ type: "array", items: { type: "object", required: ["role", "parts"], properties: { role: { enum: ["system", "user", "assistant", "tool"] }, parts: { type: "array", items: textPart } } } });
const outputMessages = ajv.compile({
  type: "array", minItems: 1, maxItems: 1,
  items: { type: "object", required: ["role", "parts", "finish_reason"], properties: { role: { const: "assistant" }, parts: { type: "array", items: textPart }, finish_reason: { enum: ["stop", "length", "content_filter", "tool_call", "error", "other"] } } },
});
const systemInstructions = ajv.compile({ type: "array", items: textPart });

const CONTENT_KEYS = ["gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"];

/** The captured content of a span as plain values, checked against the conventions' shapes. */
function contentOf(span: OtlpSpan): { system?: unknown; input?: unknown; output?: unknown; truncated?: unknown } {
  const get = (key: string): unknown => {
    const a = span.attributes.find((x) => x.key === key);
    return a === undefined ? undefined : anyValue(a.value);
  };
  const out = { system: get("gen_ai.system_instructions"), input: get("gen_ai.input.messages"), output: get("gen_ai.output.messages"), truncated: get("tokentrace.content.truncated") };
  if (out.system !== undefined) assert.ok(systemInstructions(out.system), JSON.stringify(systemInstructions.errors));
  if (out.input !== undefined) assert.ok(inputMessages(out.input), JSON.stringify(inputMessages.errors));
  if (out.output !== undefined) assert.ok(outputMessages(out.output), JSON.stringify(outputMessages.errors));
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

const text = (content: string): { type: string; content: string } => ({ type: "text", content });

const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
const chatRequest = JSON.stringify({
  model: "llama-3.1-8b", stream: true,
  messages: [
    { role: "system", content: "You are helpful." },
    { role: "user", content: [{ type: "text", text: "Mail me at ana.silva@example.org" }, { type: "image_url", image_url: { url: "https://x/y.png" } }] },
    { content: "Sure.", role: "assistant" },
    { role: "user", content: "My card: 4111 1111 1111 1111 \u2014 thanks \"quoted\"\n" },
  ],
});
const chatStream = sse([
  { id: "c1", model: "llama-3.1-8b", choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
  { id: "c1", model: "llama-3.1-8b", choices: [{ index: 0, delta: { content: "Call +1 415 555 2671" } }] },
  { id: "c1", model: "llama-3.1-8b", choices: [{ index: 1, delta: { content: "second choice" } }] },
  { id: "c1", model: "llama-3.1-8b", choices: [{ index: 0, delta: { content: " now." }, finish_reason: "stop" }] },
]);

interface Call {
  path?: string;
  route?: string;
  request: string;
  responseType?: string;
  body: string;
  status?: number;
  headers?: Array<[string, string]>;
}

function drive(vm: FilterVm, clock: ManualClock, c: Call): void {
  const s = vm.newStream({ routeName: c.route ?? "chat" });
  assert.equal(s.requestHeaders([[":method", "POST"], [":path", c.path ?? "/v1/chat/completions"], [":authority", "llm.svc:8000"], ...(c.headers ?? [])], false), 0);
  // The request body in two chunks, split inside a string.
  const mid = Math.floor(c.request.length / 2);
  assert.equal(s.requestBody(c.request.slice(0, mid), false), 0);
  assert.equal(s.requestBody(c.request.slice(mid), true), 0);
  clock.advanceMs(50);
  assert.equal(s.responseHeaders([[":status", String(c.status ?? 200)], ["content-type", c.responseType ?? "text/event-stream"]], false), 0);
  const cut = Math.floor(c.body.length / 3);
  assert.equal(s.responseBody(c.body.slice(0, cut), false), 0);
  assert.equal(s.responseBody(c.body.slice(cut), true), 0);
  s.end();
}

describe("content capture on sampled spans (emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  /** Loads a VM exporting to the receiver with `content` as spans.content (undefined: none). */
  async function setup(content: unknown, sampling: unknown = { defaultRate: 1 }, extraSpans: Record<string, unknown> = {}): Promise<{ vm: FilterVm; clock: ManualClock }> {
    receiver.spans.length = 0;
    receiver.problems.length = 0;
    const clock = new ManualClock(T0);
    const spans = { cluster: "otel", ...extraSpans, ...(content === undefined ? {} : { content }) };
    const vm = await loadContentFilter({ clock, random: countingRandom(), config: { sampling, spans }, clusters: { otel: receiver.url } });
    return { vm, clock };
  }

  async function exported(vm: FilterVm): Promise<OtlpSpan[]> {
    vm.tick();
    await vm.settle();
    assert.deepEqual(receiver.problems, [], "the opentelemetry-proto definitions read every span back unchanged");
    return [...receiver.spans];
  }

  it("is off by default: a sampled span carries no text", async () => {
    const { vm, clock } = await setup(undefined);
    drive(vm, clock, { request: chatRequest, body: chatStream });
    const [span] = await exported(vm);
    assert.ok(span);
    assert.deepEqual(span.attributes.filter((a) => CONTENT_KEYS.includes(a.key)), []);
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), undefined, "no content counter exists while nothing is captured");
  });

  it("on: the input messages in order with their roles, the first choice's output with its finish reason, values redacted", async () => {
    const { vm, clock } = await setup({ enabled: true });
    drive(vm, clock, { request: chatRequest, body: chatStream });
    const [span] = await exported(vm);
    assert.deepEqual(contentOf(span!), {
      input: [
        { role: "system", parts: [text("You are helpful.")] },
        { role: "user", parts: [text("Mail me at [EMAIL]")] },
        { role: "assistant", parts: [text("Sure.")] },
        { role: "user", parts: [text("My card: [PAYMENT_CARD] \u2014 thanks \"quoted\"\n")] },
      ],
      output: [{ role: "assistant", parts: [text("Call [PHONE] now.")], finish_reason: "stop" }],
    });
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), 1);
    assert.deepEqual(
      ["email", "phone", "payment_card", "ip_address", "national_id", "credential"].map((t) => vm.stats.value("tokentrace_content_redactions_total", { redacted: t })),
      [1, 1, 1, undefined, undefined, undefined],
    );
    // No text in a stat name or a log line.
    for (const word of ["ana.silva", "example.org", "4111", "helpful", "Call", "555"]) {
      assert.ok(vm.stats.names().every((n) => !n.includes(word)), `no stat name holds "${word}"`);
      assert.ok(vm.logs.every((l) => !l.message.includes(word)), `no log line holds "${word}"`);
    }
  });

  it("only for sampled calls: an unsampled one, or one kept by tail keep (spans.keep), carries none", async () => {
    const { vm, clock } = await setup({ enabled: true }, { defaultRate: 0 }, { keep: { errors: true } });
    drive(vm, clock, { request: chatRequest, body: chatStream });
    drive(vm, clock, { request: chatRequest, body: "{}", status: 503, responseType: "application/json" });
    const spans = await exported(vm);
    assert.equal(spans.length, 1, "the 503 is kept");
    assert.deepEqual(spans[0]!.attributes.filter((a) => CONTENT_KEYS.includes(a.key)), []);
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), undefined);
  });

  it("keeps every token's text when events repeat byte for byte, one per chunk (a captured stream matches no event against the last)", async () => {
    const { vm, clock } = await setup({ enabled: true });
    const event = (content: string, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc:8000"]], false);
    s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "laugh" }] }), true);
    clock.advanceMs(50);
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    for (const chunk of [event("ha"), event("ha"), event("ha"), event("ha"), event("!", "stop"), "data: [DONE]\n\n"]) s.responseBody(chunk, false);
    s.responseBody("", true);
    s.end();
    const [span] = await exported(vm);
    assert.deepEqual(contentOf(span!).output, [{ role: "assistant", parts: [text("hahahaha!")], finish_reason: "stop" }]);
  });

  it("per route: the first rule naming the route wins over the policy's setting, either way", async () => {
    const { vm, clock } = await setup({ enabled: false, routes: [{ routeName: "debug", enabled: true }, { routeName: "chat", enabled: false }] });
    drive(vm, clock, { request: chatRequest, body: chatStream, route: "chat" });
    drive(vm, clock, { request: chatRequest, body: chatStream, route: "debug" });
    drive(vm, clock, { request: chatRequest, body: chatStream, route: "other" });
    const spans = await exported(vm);
    const byRoute = Object.fromEntries(spans.map((s) => [s.attributes.find((a) => a.key === "tokentrace.route")!.value.stringValue, s.attributes.some((a) => CONTENT_KEYS.includes(a.key))]));
    assert.deepEqual(byRoute, { chat: false, debug: true, other: false });
    const second = await setup({ enabled: true, routes: [{ routeName: "chat", enabled: false }] });
    drive(second.vm, second.clock, { request: chatRequest, body: chatStream, route: "chat" });
    drive(second.vm, second.clock, { request: chatRequest, body: chatStream, route: "other" });
    const again = await exported(second.vm);
    assert.deepEqual(again.map((s) => s.attributes.some((a) => CONTENT_KEYS.includes(a.key))), [false, true]);
  });

  it("truncates each attribute to maxBytes of original text, replaces a value the cut falls in whole, and says so", async () => {
    const { vm, clock } = await setup({ enabled: true, maxBytes: 256 });
    const filler = "lorem ipsum ".repeat(20); // 240 bytes
    // The e-mail address begins at byte 250 of the message: the 256-byte window ends inside it.
    const prompt = filler + "mail: j.random.hacker@example.com and then more text past the window";
    const request = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: prompt }, { role: "user", content: "dropped: past the window" }] });
    drive(vm, clock, { request, body: chatStream });
    const [span] = await exported(vm);
    const content = contentOf(span!);
    assert.deepEqual(content.input, [{ role: "user", parts: [text(filler + "mail: [EMAIL]")] }]);
    assert.equal(content.truncated, true);
    assert.ok(!JSON.stringify(span).includes("hacker"), "no part of the address leaves");
  });

  it("maxBytes defaults to 4096 (the schema's default): a 4096-byte message is shown whole, one byte more is cut", async () => {
    const schema = JSON.parse(readFileSync(new URL("../../../filter/config.schema.json", import.meta.url), "utf8")) as { properties: { spans: { properties: { content: { properties: { maxBytes: { default: number } } } } } } };
    assert.equal(schema.properties.spans.properties.content.properties.maxBytes.default, 4096);
    const words = "yyyyyyy ".repeat(512); // 4096 bytes
    for (const [size, truncated] of [[4096, undefined], [4097, true]] as const) {
      const { vm, clock } = await setup({ enabled: true });
      const prompt = (words + "z").slice(0, size);
      drive(vm, clock, { request: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: prompt }] }), body: chatStream });
      const content = contentOf((await exported(vm))[0]!);
      assert.deepEqual(content.input, [{ role: "user", parts: [text(words)] }], `a ${size}-byte message`);
      assert.equal(content.truncated, truncated);
    }
  });

  it("masks the token open at the cut whole: no beginning of a word, key or value the window cuts leaves", async () => {
    const { vm, clock } = await setup({ enabled: true, maxBytes: 256 });
    const filler = "lorem ipsum ".repeat(20); // 240 bytes
    // A token longer than the detection margin, of no known shape, starting 10 bytes before the cut.
    const token = "Zq7" + "x".repeat(600);
    const request = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: filler + "see: " + "abcde " + token }] });
    drive(vm, clock, { request, body: chatStream });
    const [span] = await exported(vm);
    assert.deepEqual(contentOf(span!).input, [{ role: "user", parts: [text(filler + "see: abcde [TRUNCATED]")] }]);
    assert.ok(!JSON.stringify(span).includes("Zq7"), "no part of the open token leaves");
    assert.equal(vm.stats.value("tokentrace_content_redactions_total", { redacted: "truncated" }), 1);
  });

  it("a multi-byte character the window ends in is left out whole (the text stays valid UTF-8)", async () => {
    const { vm, clock } = await setup({ enabled: true, maxBytes: 256 });
    const prompt = "x".repeat(255) + "\u20ac tail"; // the euro sign's 3 bytes straddle byte 256
    drive(vm, clock, { request: JSON.stringify({ model: "m", messages: [{ role: "user", content: prompt }] }), body: chatStream });
    const [span] = await exported(vm);
    assert.deepEqual(contentOf(span!).input, [{ role: "user", parts: [text("x".repeat(255))] }]);
  });

  const protocolCases: Array<{ name: string; call: Call; expect: Record<string, unknown> }> = [
    {
      name: "Responses API: instructions as system instructions, input items, only output_text deltas",
      call: { path: "/v1/responses", request: fixture("responses/request.json"), body: fixture("responses/stream.sse") },
      expect: {
        system: [text("You are a terse assistant.")],
        input: [{ role: "user", parts: [text("Say hello to the world.")] }, { role: "assistant", parts: [text("Hello?")] }, { role: "user", parts: [text("Again, louder.")] }],
        output: [{ role: "assistant", parts: [text("HELLO, WORLD!")], finish_reason: "stop" }],
      },
    },
    {
      name: "Anthropic Messages: system blocks as system instructions, text deltas",
      call: { path: "/v1/messages", request: fixture("anthropic/request.json"), body: fixture("anthropic/stream.sse") },
      expect: {
        system: [text("You answer in one line.")],
        input: [{ role: "user", parts: [text("What is the capital of France?")] }, { role: "assistant", parts: [text("Paris.")] }, { role: "user", parts: [text("And of Italy?")] }],
        output: [{ role: "assistant", parts: [text("The capital of Italy is Rome.")], finish_reason: "stop" }],
      },
    },
    {
      name: "TGI generate_stream: the prompt, the tokens' text without the special end token",
      call: { path: "/generate_stream", request: fixture("tgi/request.json"), body: fixture("tgi/generate_stream.sse") },
      expect: { input: [{ role: "user", parts: [text("My name is Olivier and I")] }], output: [{ role: "assistant", parts: [text("Hello world")], finish_reason: "stop" }] },
    },
    {
      name: "TGI generate: generated_text",
      call: { path: "/generate", request: fixture("tgi/request.json"), body: fixture("tgi/generate.json"), responseType: "application/json" },
      expect: { input: [{ role: "user", parts: [text("My name is Olivier and I")] }], output: [{ role: "assistant", parts: [text(" test test test")], finish_reason: "length" }] },
    },
    {
      name: "KServe generate_stream: text_input, text_output per event",
      call: { path: "/v2/models/llama-3-8b/generate_stream", request: fixture("kserve/request.json"), body: fixture("kserve/generate_stream.sse") },
      expect: { input: [{ role: "user", parts: [text("What is machine learning?")] }], output: [{ role: "assistant", parts: [text("Machine learning is a field of AI.")], finish_reason: "stop" }] },
    },
    {
      name: "OpenAI completions: the prompt; a whole response's first choice",
      call: {
        path: "/v1/completions", request: JSON.stringify({ model: "m", prompt: "Once upon" }), responseType: "application/json",
        body: JSON.stringify({ id: "x", model: "m", choices: [{ index: 0, text: " a time", finish_reason: "length" }, { index: 1, text: " another", finish_reason: "stop" }] }),
      },
      // One finish reason per response, the last one seen (docs/filter.md), as gen_ai.response.finish_reasons has it.
      expect: { input: [{ role: "user", parts: [text("Once upon")] }], output: [{ role: "assistant", parts: [text(" a time")], finish_reason: "stop" }] },
    },
  ];
  for (const c of protocolCases) {
    it(`every protocol: ${c.name}`, async () => {
      const { vm, clock } = await setup({ enabled: true });
      drive(vm, clock, c.call);
      const [span] = await exported(vm);
      assert.deepEqual(contentOf(span!), c.expect);
    });
  }

  it("a call cut before it finished reports finish_reason error in its output message (expected but not received)", async () => {
    const { vm } = await setup({ enabled: true });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false);
    s.requestBody(chatRequest, true);
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    s.responseBody(chatStream.slice(0, chatStream.indexOf(" now.")), false);
    s.end(); // reset during the response
    const [span] = await exported(vm);
    assert.deepEqual((contentOf(span!).output as Array<{ finish_reason: string }>)[0]!.finish_reason, "error");
  });
});
