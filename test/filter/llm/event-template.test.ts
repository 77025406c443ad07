// A stream event that repeats the last one but for its token's values reuses that event's scan
// (filter/llm/event-template.ts). Every figure must be what a full scan gives: the real filter.wasm
// (emulated Envoy host) is its own oracle, fed each event whole in one chunk (so the last event is
// kept and matched) and, in a second VM, each event cut inside its data line (so nothing is kept
// and every event is scanned in full); both must print the same stats.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { countingRandom, loadFilter } from "../support.js";

interface Protocol {
  name: string;
  path: string;
  request: string;
  /** An event's SSE lines before its data (the event name where the server sends one). */
  head: string;
  /**
   * The event's JSON for a token's text and a number the server changes per event; `variant` picks
   * one of the values the filter keeps (a finish reason, an event type, a special token's flag).
   */
  event: (text: string, n: string, variant?: number) => string;
}

const json = (s: string): string => JSON.stringify(s);
const PROTOCOLS: Protocol[] = [
  {
    name: "OpenAI chat completions", path: "/v1/chat/completions", request: '{"model":"m","stream":true}', head: "",
    event: (t, n, v = 0) => `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":${n},"model":"m","choices":[{"index":0,"delta":{"content":${t}},"logprobs":null,"finish_reason":${["null", '"stop"', '"length"'][v % 3]}}]}`,
  },
  {
    name: "OpenAI Responses", path: "/v1/responses", request: '{"model":"m","stream":true,"input":"hi"}', head: "event: response.output_text.delta\n",
    event: (t, n, v = 0) => `{"content_index":0,"delta":${t},"item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":${n},"type":"${["response.output_text.delta", "response.reasoning_text.delta", "response.refusal.delta"][v % 3]}"}`,
  },
  {
    name: "Anthropic Messages", path: "/v1/messages", request: '{"model":"c","stream":true,"max_tokens":9}', head: "event: content_block_delta\n",
    event: (t, _n, v = 0) => `{"type":"content_block_delta","index":0,"delta":{"type":"${["text_delta", "thinking_delta", "text_delta"][v % 3]}","text":${t}}}`,
  },
  {
    name: "TGI generate_stream", path: "/generate_stream", request: '{"inputs":"hi","parameters":{"details":true}}', head: "",
    event: (t, n, v = 0) => `{"index":${n},"token":{"id":${n},"text":${t},"logprob":-0.${n.replace(/\D/g, "") || "0"},"special":${v % 3 === 1}},"generated_text":null,"details":null}`,
  },
  {
    name: "KServe v2 generate_stream", path: "/v2/models/m/generate_stream", request: '{"text_input":"hi","parameters":{"stream":true}}', head: "",
    event: (t, n, v = 0) => `{"id":"42","model_name":"m","model_version":"1","text_output":${t},"num_output_tokens":${n.length > 3 ? 2 : 1}${v % 3 === 2 ? ',"finish_reason":"stop"' : ""}}`,
  },
];

/** Runs one streamed call; `chunks` are the response body chunks, the clock advancing 1 ms between `events`. */
function run(vm: FilterVm, clock: ManualClock, protocol: Protocol, events: string[][]): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", protocol.path], [":authority", "llm.svc"], ["content-type", "application/json"]], false);
  s.requestBody(protocol.request, true);
  clock.advanceMs(20);
  s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
  for (const chunks of events) {
    clock.advanceMs(1);
    for (const c of chunks) s.responseBody(c, false);
  }
  s.responseBody("", true);
  s.end();
}

async function twoVms(): Promise<{ whole: FilterVm; cut: FilterVm; clocks: [ManualClock, ManualClock] }> {
  const clocks: [ManualClock, ManualClock] = [new ManualClock(1_700_000_000_000_000_000n), new ManualClock(1_700_000_000_000_000_000n)];
  // The same random draws on both sides: the same requests are sampled.
  const [whole, cut] = await Promise.all(clocks.map((clock) => loadFilter({ clock, random: countingRandom() })));
  return { whole: whole!, cut: cut!, clocks };
}

/** The same stream fed both ways: each event in one chunk, and each cut after its data line's first byte. */
function both(vms: { whole: FilterVm; cut: FilterVm; clocks: [ManualClock, ManualClock] }, protocol: Protocol, events: string[]): void {
  run(vms.whole, vms.clocks[0], protocol, events.map((e) => [e]));
  run(vms.cut, vms.clocks[1], protocol, events.map((e) => {
    const at = e.indexOf("data:") + 7;
    return [e.slice(0, at), e.slice(at)];
  }));
}

const sse = (protocol: Protocol, data: string, end = "\n\n"): string => `${protocol.head}data: ${data}${end}`;
const chat = PROTOCOLS[0]!;
const responses = PROTOCOLS[1]!;
const kserve = PROTOCOLS[4]!;

describe("a stream event matched against the last one (emulated Envoy host)", () => {
  it("counts what a full scan counts, for each protocol, whatever changes from one event to the next", async () => {
    const vms = await twoVms();
    // Mostly what servers send (a token's text and a changing number), sometimes anything else.
    const text = fc.oneof(
      { weight: 6, arbitrary: fc.string({ maxLength: 8 }).map(json) },
      { weight: 1, arbitrary: fc.constantFrom('""', '"a\\"b"', '"\\u00e9\\ud83d\\ude00"', '"\\\\"', '"a"b"', '"a\\"', '"\\x"', '"a\rb"', "null", "7", '"\u00e9"') },
    );
    const number = fc.oneof(
      { weight: 6, arbitrary: fc.nat({ max: 100_000 }).map(String) },
      { weight: 1, arbitrary: fc.constantFrom("-3", "2.5", "1e5", "1-2", "--", "-", "01", "true", '"9"', "9x", "") },
    );
    const damage = fc.constantFrom("none", "none", "none", "none", "none", "drop-last", "garbage", "space", "second-line", "blank-second-line", "crlf", "cr", "id-line", "comment", "event-cr", "no-space");
    const variant = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat({ max: 2 }) });
    const event = fc.record({ text, number, variant, damage, cut: fc.nat({ max: 300 }) });
    fc.assert(
      fc.property(fc.constantFrom(...PROTOCOLS), fc.array(event, { minLength: 1, maxLength: 12 }), (protocol, picks) => {
        const events = picks.map(({ text: t, number: n, variant: v, damage: d, cut }) => {
          let data = protocol.event(t, n, v);
          if (d === "drop-last") data = data.slice(0, -1);
          if (d === "garbage") data += "x";
          if (d === "space") data += " ";
          if (d === "second-line") return `${protocol.head}data: ${data.slice(0, cut % (data.length + 1))}\ndata: ${data.slice(cut % (data.length + 1))}\n\n`;
          if (d === "blank-second-line") return `${protocol.head}data: ${data}\ndata: \n\n`;
          if (d === "id-line") return `${protocol.head}data: ${data}\nid: 7\n\n`;
          if (d === "comment") return `: keep-alive\n\n${protocol.head}data: ${data}\n\n`;
          if (d === "event-cr") return `${protocol.head.replace("\n", "\r")}data: ${data}\n\n`;
          if (d === "no-space") return `${protocol.head}data:${data}\n\n`;
          return sse(protocol, data, d === "crlf" ? "\r\n\r\n" : d === "cr" ? "\r\r" : "\n\n");
        });
        both(vms, protocol, events);
        assert.equal(vms.whole.stats.prometheus(), vms.cut.stats.prometheus());
      }),
      { numRuns: 1000, seed: 29, endOnFailure: true },
    );
    assert.ok((vms.whole.stats.value("tokentrace_filter_errors_total", { error: "sse_malformed" }) ?? 0) > 0, "the runs included malformed events");
  });

  // Each case: events that match the last one everywhere but in one value, and what a full scan counts.
  const cases: Array<{ name: string; protocol: Protocol; events: string[]; chunks: number; malformed: number }> = [
    {
      name: "a quote inside the token's text ends the string early: the event is malformed",
      protocol: chat, events: [chat.event('"a"', "1"), chat.event('"b"', "1"), chat.event('"c"d"', "1"), chat.event('"e"', "1")], chunks: 3, malformed: 1,
    },
    {
      name: "a backslash escape in the text is read by the scanner: an invalid one is malformed, a valid one is not",
      protocol: chat, events: [chat.event('"a"', "1"), chat.event('"b"', "1"), chat.event('"\\x"', "1"), chat.event('"\\n"', "1")], chunks: 3, malformed: 1,
    },
    {
      name: "an empty text is no content chunk, though every other byte repeats",
      protocol: chat, events: [chat.event('"a"', "1"), chat.event('"b"', "1"), chat.event('""', "1"), chat.event('"c"', "1")], chunks: 3, malformed: 0,
    },
    {
      name: "a number that becomes a literal or a string is still read right",
      protocol: chat, events: [chat.event('"a"', "1"), chat.event('"b"', "12"), chat.event('"c"', "true"), chat.event('"d"', '"x"'), chat.event('"e"', "1x")], chunks: 4, malformed: 1,
    },
    {
      name: "events longer than the 1,024 bytes an event template keeps are scanned each time, and counted alike",
      protocol: chat, events: ["a", "b", "c", "d"].map((t) => chat.event(json(t.repeat(1500)), "1")), chunks: 4, malformed: 0,
    },
    {
      name: "a sequence number that grows a digit and the text beside it change together",
      protocol: responses, events: ["8", "9", "10", "11", "100"].map((n) => responses.event(json(`t${n}`), n)), chunks: 5, malformed: 0,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const vms = await twoVms();
      both(vms, c.protocol, c.events.map((e) => sse(c.protocol, e)));
      for (const vm of [vms.whole, vms.cut]) {
        const labels = { route: "chat", model: "m" };
        assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", labels), c.chunks);
        assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "sse_malformed" }), c.malformed);
      }
    });
  }

  it("a second data line after a matched first one goes on from where that line left the scan", async () => {
    const vms = await twoVms();
    const e = (t: string): string => chat.event(json(t), "1");
    both(vms, chat, [sse(chat, e("a")), sse(chat, e("b")), `data: ${e("c")}\ndata:  \n\n`, `data: ${e("d")}\ndata: }\n\n`, sse(chat, e("e"))]);
    for (const vm of [vms.whole, vms.cut]) {
      assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", { route: "chat", model: "m" }), 4, "whitespace continues a whole document");
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "sse_malformed" }), 1, "anything else after it is malformed");
    }
  });

  it("an event matched after a two-line event in between sets the values that event changed back, as a full scan does", async () => {
    const vms = await twoVms();
    const e = (t: string, finish: number): string => chat.event(json(t), "1", finish);
    // The last one-line event says "stop"; a two-line event (never kept) says "length"; the next matches the first.
    both(vms, chat, [sse(chat, e("a", 1)), sse(chat, e("b", 1)), `data: ${e("c", 2)}\ndata: \n\n`, sse(chat, e("d", 1))]);
    for (const vm of [vms.whole, vms.cut]) {
      assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "m", stream: "true", finish_reason: "stop", status_class: "2xx" }), 1);
    }
  });

  it("sums per-event token counts, which are never template values (KServe num_output_tokens)", async () => {
    const vms = await twoVms();
    both(vms, kserve, ["1", "2", "3", "4444", "5"].map((n) => sse(kserve, kserve.event(json(`t${n}`), n))));
    for (const vm of [vms.whole, vms.cut]) assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model: "m" }), 6);
  });
});
