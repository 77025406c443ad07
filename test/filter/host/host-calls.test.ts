// Host calls the real filter.wasm makes on the headers-only path of a request that is not sampled
// (emulated Envoy host, which counts every import call): reading every trace header value and tail
// keep add none. The ceilings are the counts main made before them (4b42c83) for the same requests,
// except where a combined tracestate must be written: a count, not a timing.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../host/index.js";
import { countingRandom, FILTER_CONTENT_WASM, loadFilter } from "../support.js";

const TRACEPARENT: [string, string] = ["traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"];
const REQUEST: Array<[string, string]> = [[":authority", "llm.svc"], [":path", "/v1/chat/completions"], [":method", "POST"], [":scheme", "http"], ["content-type", "application/json"]];

/** Mean host calls per request (random_get excluded: drawn 4 KiB at a time, it is not per request). */
async function callsPerRequest(extra: Array<[string, string]>, config: unknown, path: string): Promise<number> {
  const clock = new ManualClock();
  // Content capture runs in the content module (the default one has no capture code).
  const wasm = JSON.stringify(config).includes("content") ? FILTER_CONTENT_WASM : undefined;
  const vm = await loadFilter({ clock, random: countingRandom(), ...(wasm === undefined ? {} : { wasm }), config: { ...(config as object), sampling: { defaultRate: 0 }, stats: { flushIntervalMs: 1000 } } });
  const run = (): void => {
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([...REQUEST.map(([k, v]): [string, string] => [k, k === ":path" ? path : v]), ...extra], true);
    clock.advanceMs(5);
    s.responseHeaders([[":status", "200"]], true);
    s.end();
  };
  run(); // stats defined on first use
  const before = vm.hostCallsByName();
  const n = 200;
  for (let i = 0; i < n; i++) run();
  let calls = 0;
  for (const [name, count] of Object.entries(vm.hostCallsByName())) {
    if (!name.endsWith("random_get")) calls += count - (before[name] ?? 0);
  }
  return calls / n;
}

describe("host calls on the headers-only path of an unsampled request (emulated Envoy host)", () => {
  const cases: Array<[string, Array<[string, string]>, unknown, number, string?]> = [
    ["no trace headers", [], {}, 12],
    ["a traceparent", [TRACEPARENT], {}, 11],
    ["a traceparent, a tracestate and a token trace id", [TRACEPARENT, ["tracestate", "a=1"], ["x-token-trace-id", "t-1"]], {}, 10],
    // One more than main's 10, on purpose: the two lines leave as one (main passed them on unread).
    ["a traceparent, two tracestate lines and a token trace id", [TRACEPARENT, ["tracestate", "a=1"], ["tracestate", "b=2"], ["x-token-trace-id", "t-1"]], {}, 11],
    ["a traceparent, span export with tail keep on", [TRACEPARENT], { spans: { cluster: "otel", keep: { errors: true, slowerThanMs: 1000 } } }, 11],
    ["no trace headers, span export with tail keep on", [], { spans: { cluster: "otel", keep: { errors: true, slowerThanMs: 1000 } } }, 12],
    // Not an LLM call (issue 17: per-protocol path matchers and content capture add none; main at 5e2738a made these counts).
    ["a path no protocol matches, no trace headers", [], {}, 11, "/v1/models"],
    ["a path no protocol matches, a traceparent", [TRACEPARENT], {}, 10, "/v1/models"],
    ["a path no protocol matches, content capture on", [], { spans: { cluster: "otel", content: { enabled: true, pseudonyms: {} } } }, 11, "/healthz"],
    ["an LLM call, content capture on", [], { spans: { cluster: "otel", content: { enabled: true } } }, 12, "/v1/chat/completions"],
  ];
  for (const [name, extra, config, ceiling, path] of cases) {
    it(`${name}: at most ${ceiling} calls, as before`, async () => {
      const calls = await callsPerRequest(extra, config, path ?? "/v1/chat/completions");
      assert.ok(calls <= ceiling, `${calls} host calls per request, ceiling ${ceiling}`);
    });
  }
});
