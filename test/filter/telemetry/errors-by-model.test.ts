// Errors by model (issue #26 item 6): an LLM call's request counter carries its response status
// class and OpenTelemetry's error.type, so "which model is failing" is one query; a Responses API
// stream that ends in `response.failed` counts as finish_reason="error". error.type follows
// open-telemetry/semantic-conventions@00e4b4e docs/http/http-spans.md (the status code as a string for
// an error status, a low-cardinality reason when there is none) and @0ebb1a0
// docs/registry/attributes/error.md (`_OTHER` where no custom value is defined). Real filter.wasm under the emulated Envoy host.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { countingRandom, llmSamples, loadFilter } from "../support.js";

const MODEL = "Qwen/Qwen3-8B";

interface Call {
  path?: string;
  stream?: boolean;
  /** Response status; undefined: the stream is reset before any response. */
  status?: number;
  contentType?: string;
  body?: string;
  /** The response body never ends (a reset after the response began). */
  cut?: boolean;
}

/** One LLM call of 30 ms on route "chat" for MODEL. */
function call(vm: FilterVm, clock: ManualClock, c: Call): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", c.path ?? "/v1/chat/completions"], [":authority", "llm.svc"], ["content-type", "application/json"]], false);
  s.requestBody(JSON.stringify({ model: MODEL, stream: c.stream ?? false, messages: [{ role: "user", content: "hi" }] }), true);
  clock.advanceMs(30);
  if (c.status !== undefined) {
    s.responseHeaders([[":status", String(c.status)], ["content-type", c.contentType ?? "application/json"]], false);
    s.responseBody(c.body ?? "", !c.cut);
  }
  s.end();
}

/** OpenAI's error body (openai/openai-openapi@f85dbe2 `ErrorResponse`): the filter reads no finish reason from it. */
const errorBody = (type: string): string => JSON.stringify({ error: { message: "rejected", type, param: null, code: null } });

/** A Responses API stream that fails midway (openai/openai-openapi@f85dbe2 `ResponseFailedEvent`: the response with status "failed"). */
const failedStream = [
  ["response.created", { response: { id: "resp_1", model: MODEL, object: "response", output: [], status: "in_progress", usage: null }, sequence_number: 0 }],
  ["response.output_text.delta", { content_index: 0, delta: "HEL", item_id: "msg_1", output_index: 0, sequence_number: 1 }],
  ["response.failed", { response: { error: { code: "server_error", message: "failed" }, id: "resp_1", model: MODEL, object: "response", output: [], status: "failed", usage: null }, sequence_number: 2 }],
].map(([type, data]) => `event: ${type as string}\ndata: ${JSON.stringify({ ...(data as object), type })}\n\n`).join("");

const chatOk = JSON.stringify({ model: MODEL, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1 } });

/** Every series of `metric` after Istio's tag extraction, as "label=value,... value", sorted. */
function seriesOf(vm: FilterVm, metric: string): string[] {
  const out: string[] = [];
  for (const name of vm.stats.names()) {
    const e = vm.stats.extract(name);
    if (e.extractedName !== metric) continue;
    const labels = [...e.tags].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(",");
    out.push(`${labels} ${vm.stats.counter(name)}`);
  }
  return out.sort();
}

const L = `model=${MODEL},route=chat`;

describe("errors by model: status_class and error_type on tokentrace_llm_requests_total (filter.wasm, emulated Envoy host)", () => {
  const cases: Array<[string, Call, string, string]> = [
    ["a 200 carries its class and no error_type", { status: 200, body: chatOk }, `finish_reason=stop,${L},status_class=2xx,stream=false 1`, "2xx"],
    ["a 429 carries 4xx and error_type 429", { status: 429, body: errorBody("rate_limit_exceeded") }, `error_type=429,finish_reason=none,${L},status_class=4xx,stream=false 1`, "4xx"],
    ["a 500 carries 5xx and error_type 500", { status: 500, body: errorBody("server_error") }, `error_type=500,finish_reason=none,${L},status_class=5xx,stream=false 1`, "5xx"],
    ["a reset before any response carries none and reset_before_response", {}, `error_type=reset_before_response,finish_reason=none,${L},status_class=none,stream=false 1`, "none"],
    ["a stream cut after its 200 began carries 2xx and reset_during_response", { status: 200, stream: true, contentType: "text/event-stream", body: failedStream.slice(0, failedStream.indexOf("event: response.failed")), cut: true },
      `error_type=reset_during_response,finish_reason=none,${L},status_class=2xx,stream=true 1`, "2xx"],
    ["a Responses stream ending in response.failed counts finish_reason error, error_type _OTHER under its 200", { path: "/v1/responses", status: 200, stream: true, contentType: "text/event-stream", body: failedStream },
      `error_type=_OTHER,finish_reason=error,${L},status_class=2xx,stream=true 1`, "2xx"],
  ];
  for (const [name, c, want, routeClass] of cases) {
    it(name, async () => {
      const clock = new ManualClock(1_700_000_000_000_000_000n);
      const vm = await loadFilter({ clock, random: countingRandom() });
      call(vm, clock, c);
      assert.deepEqual(seriesOf(vm, "tokentrace_llm_requests_total"), [want]);
      // The route's own counter has the same class (no model label there).
      assert.deepEqual(seriesOf(vm, "tokentrace_requests_total"), [`route=chat,status_class=${routeClass} 1`]);
      assert.deepEqual(llmSamples(vm, "tokentrace_llm_duration_ms", { route: "chat", model: MODEL }), [30]);
    });
  }

  it("the four failures on one (route, model): one series each beside the successes, summed by model as a dashboard would", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom() });
    for (let i = 0; i < 3; i++) call(vm, clock, { status: 200, body: chatOk });
    for (const c of cases.slice(1)) call(vm, clock, c[1]);
    call(vm, clock, { status: 429, body: errorBody("rate_limit_exceeded") });
    assert.deepEqual(seriesOf(vm, "tokentrace_llm_requests_total"), [
      `error_type=429,finish_reason=none,${L},status_class=4xx,stream=false 2`,
      `error_type=500,finish_reason=none,${L},status_class=5xx,stream=false 1`,
      `error_type=_OTHER,finish_reason=error,${L},status_class=2xx,stream=true 1`,
      `error_type=reset_before_response,finish_reason=none,${L},status_class=none,stream=false 1`,
      `error_type=reset_during_response,finish_reason=none,${L},status_class=2xx,stream=true 1`,
      `finish_reason=stop,${L},status_class=2xx,stream=false 3`,
    ]);
  });

  it("at most 8 distinct error types per (route, model): the 9th and later count as _OTHER", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom() });
    const codes = [400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503];
    for (const code of codes) call(vm, clock, { status: code, body: errorBody("x") });
    call(vm, clock, { status: 429, body: errorBody("x") });
    const got = seriesOf(vm, "tokentrace_llm_requests_total");
    assert.deepEqual(got, [
      `error_type=400,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=401,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=403,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=404,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=408,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=409,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=422,finish_reason=none,${L},status_class=4xx,stream=false 1`,
      `error_type=429,finish_reason=none,${L},status_class=4xx,stream=false 2`,
      `error_type=_OTHER,finish_reason=none,${L},status_class=5xx,stream=false 3`,
    ]);
  });
});
