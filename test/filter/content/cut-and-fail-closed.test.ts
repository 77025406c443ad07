// Nothing partial at the cut, and fail closed (issue 21, deliverables 2 and 3), in the real content
// module (emulated Envoy host, real OTLP receiver on 127.0.0.1): where spans.content.maxBytes or the
// buffer cuts a value, its beginning never leaves (a JWT is known by its header alone; a token open
// at the cut is masked whole); a message whose text cannot be read whole or decoded is dropped and
// counted, never exported as it is.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../../support/otlp-receiver.js";
import { countingRandom, loadContentFilter } from "../support.js";

/** A JWT of about `size` bytes whose payload decodes to an e-mail address, as OIDC id tokens are. */
function jwt(size: number): string {
  const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString("base64url");
  const header = b64({ alg: "RS256", kid: "k1", typ: "JWT" });
  const payload = b64({ email: "ana.silva@example.org", pad: "x".repeat(Math.max(0, Math.floor((size - 200) * 0.75))) });
  return `${header}.${payload}.${Buffer.alloc(96, 7).toString("base64url")}`;
}

/** Every 8 characters of `secret`. */
const windows = (secret: string): string[] => Array.from({ length: Math.max(0, secret.length - 7) }, (_, i) => secret.slice(i, i + 8));

describe("nothing partial at the cut, fail closed (content module, emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  async function setup(content: Record<string, unknown>, llm: Record<string, unknown> = {}): Promise<FilterVm> {
    return loadContentFilter({ clock: new ManualClock(), random: countingRandom(), config: { sampling: { defaultRate: 1 }, llm, spans: { cluster: "otel", content: { enabled: true, ...content } } }, clusters: { otel: receiver.url } });
  }

  /** Sends `requestBody` (raw bytes, in `chunks` pieces) and a streamed answer of `completion`; the span. */
  async function send(vm: FilterVm, requestBody: Buffer, completion = "ok", chunks = 1): Promise<OtlpSpan> {
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false);
    const size = Math.ceil(requestBody.length / chunks);
    for (let i = 0; i < requestBody.length; i += size) s.requestBody(requestBody.subarray(i, i + size), i + size >= requestBody.length);
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    s.responseBody(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: completion }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`, true);
    s.end();
    vm.tick();
    await vm.settle();
    assert.deepEqual(receiver.problems, []);
    assert.equal(receiver.spans.length, 1);
    return receiver.spans[0]!;
  }

  const chat = (...contents: string[]): Buffer => Buffer.from(JSON.stringify({ model: "m", stream: true, messages: contents.map((content) => ({ role: "user", content })) }));
  const content = (span: OtlpSpan, key: string): string[] => {
    const a = span.attributes.find((x) => x.key === key);
    if (a === undefined) return [];
    const v = anyValue(a.value) as Array<{ parts: Array<{ content: string }> }>;
    return v.flatMap((m) => m.parts.map((p) => p.content));
  };

  it("a JWT longer than the detection margin is masked from its eyJ header wherever the 256-byte window cuts it", async () => {
    const vm = await setup({ maxBytes: 256 });
    for (const size of [600, 900, 1500]) {
      const token = jwt(size);
      for (let start = 200; start <= 256; start++) {
        const text = "w ".repeat(start / 2) + (start % 2 === 1 ? " " : "") + token + " tail";
        const span = await send(vm, chat(text), text);
        const shown = [...content(span, "gen_ai.input.messages"), ...content(span, "gen_ai.output.messages")].join("\n");
        for (const w of windows(token)) assert.ok(!shown.includes(w), `a ${size}-byte JWT at ${start}: ${JSON.stringify(shown.slice(-40))}`);
        assert.ok(!shown.includes("eyJhbG"), `the header at ${start}`);
      }
    }
  });

  it("a value of several words (a phone, a grouped card) the window cuts anywhere is replaced whole", async () => {
    const vm = await setup({ maxBytes: 256 });
    for (const value of ["+33 6 12 34 56 78", "4111 1111 1111 1111", "110105 19491231 002X", "DE89 3704 0044 0532 0130 00"]) {
      for (let start = 256 - value.length - 1; start <= 256; start++) {
        const text = "y".repeat(start - 1) + " " + value + " and more text after the value";
        const span = await send(vm, chat(text));
        const shown = content(span, "gen_ai.input.messages").join("");
        assert.ok(!shown.includes(value.slice(0, 4)) || start >= 256, `${value} at ${start}: ${JSON.stringify(shown.slice(-30))}`);
        for (const w of windows(value)) assert.ok(!shown.includes(w), `${value} at ${start}: ${JSON.stringify(shown.slice(-30))}`);
      }
    }
  });

  it("a message the body stops inside (llm.maxRequestBodyBytes) is dropped and counted, the messages before it kept", async () => {
    const vm = await setup({}, { maxRequestBodyBytes: 256 });
    const body = chat("kept: short and whole", "the second message is long " + "z".repeat(400) + " and holds sk-proj-AbCdEf0123456789AbCdEf0123");
    const span = await send(vm, body, "ok", 8);
    assert.deepEqual(content(span, "gen_ai.input.messages"), ["kept: short and whole"]);
    assert.equal(span.attributes.find((a) => a.key === "tokentrace.content.dropped")?.value.boolValue, true);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_dropped_unterminated" }), 1);
    assert.ok(!JSON.stringify(span).includes("zzzzzzzz"));
  });

  it("a lone surrogate escape (decodes to no character) drops its message and counts it; a paired one decodes", async () => {
    const vm = await setup({});
    const raw = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"ok \\ud83d\\ude00"},{"role":"user","content":"ana\\ud800@example.org"}]}`);
    const span = await send(vm, raw);
    assert.deepEqual(content(span, "gen_ai.input.messages"), ["ok \u{1f600}"]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_dropped_bad_escape" }), 1);
  });

  it("bytes that are no UTF-8 drop their message and count it", async () => {
    const vm = await setup({});
    const raw = Buffer.concat([Buffer.from(`{"model":"m","messages":[{"role":"user","content":"fine"},{"role":"user","content":"ana`), Buffer.from([0xff, 0xfe]), Buffer.from(`silva@example.org"}]}`)]);
    const span = await send(vm, raw);
    assert.deepEqual(content(span, "gen_ai.input.messages"), ["fine"]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_dropped_malformed_utf8" }), 1);
    assert.ok(!JSON.stringify(span).includes("silva"));
  });

  it("an escape JSON does not have ends the document: the message it is in is dropped", async () => {
    const vm = await setup({});
    const raw = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"first"},{"role":"user","content":"pass \\q hunter2"}]}`);
    const span = await send(vm, raw);
    assert.deepEqual(content(span, "gen_ai.input.messages"), ["first"]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_dropped_bad_escape" }), 1);
    assert.ok(!JSON.stringify(span).includes("hunter2"));
  });
});
