// The filter's stat-count budget per (route, model) (issue #26 bar; docs/filter.md, Stat budget):
// every series a sidecar exports for one route and one model, each histogram bucket counted, with
// the buckets the mesh's workload patch sets, after one model has been driven through every status
// class, reset and finish reason. Envoy keeps every series for the proxy's life and Prometheus stores
// each, so growth must be a deliberate change: the figure is asserted exactly, and within the budget.
// Real filter.wasm under the emulated Envoy host.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { countingRandom, loadFilter } from "../support.js";
import { ISTIO_DIR, readYaml, type Manifest } from "../../istio/support.js";

/**
 * Series per (route, model) the filter may export: the 196 of the release before length classes
 * (4 histograms x 41 + 4 counters + 28 request outcomes) plus the classes of issue #26 item 4. The
 * TTFT, decode and duration histograms each carry at most five classes (three boundaries, one past
 * the last, `unknown`), four more label sets of 41 series each: 3 x 4 x 41 = 492; and the calls per
 * known input class (tokentrace_llm_prompts_total, for the GenAI token-usage histogram), four.
 */
const STAT_BUDGET_PER_ROUTE_MODEL = 196 + 3 * 4 * 41 + 4;
/** The count for the traffic below, every class reached: 3 histograms x 5 classes x 41 + TPOT's 41 + 4 counters + 4 input classes + 28 request outcomes. */
const STAT_COUNT_TODAY = 692;

const MODEL = "m";
const [patch] = readYaml(join(ISTIO_DIR, "mesh/llm-workload-patch.yaml")) as Manifest[];
const BUCKETS = (JSON.parse(patch!.spec.template.metadata.annotations["sidecar.istio.io/statsHistogramBuckets"]) as { wasmcustom: number[] }).wasmcustom;

const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
const chunk = (finish: string | null): unknown => ({ model: MODEL, choices: [{ index: 0, delta: { content: "a" }, finish_reason: finish }] });
const usage = { prompt_tokens: 3, completion_tokens: 2 };
/** Token counts in every input and output class but `unknown` (the default boundaries 512/2048/8192 and 64/256/1024). */
const CLASS_USAGES = [{ prompt_tokens: 1000, completion_tokens: 100 }, { prompt_tokens: 5000, completion_tokens: 500 }, { prompt_tokens: 9000, completion_tokens: 2000 }];

interface Call { path?: string; stream: boolean; status?: number; body?: string; cut?: boolean }

function call(vm: FilterVm, clock: ManualClock, c: Call): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", c.path ?? "/v1/chat/completions"], [":authority", "llm.svc"], ["content-type", "application/json"]], false);
  s.requestBody(JSON.stringify({ model: MODEL, stream: c.stream, messages: [{ role: "user", content: "hi" }] }), true);
  clock.advanceMs(20);
  if (c.status !== undefined) {
    const type = c.stream && c.body !== undefined ? "text/event-stream" : "application/json";
    s.responseHeaders([[":status", String(c.status)], ["content-type", type]], c.body === undefined);
    if (c.body !== undefined) s.responseBody(c.body, !c.cut);
  }
  s.end();
}

/** A 200 with `finish` (null: none), streamed or whole. */
function finished(stream: boolean, finish: string | null, counts: object | null = usage): Call {
  const body = stream
    ? sse([chunk(null), chunk(finish), { model: MODEL, choices: [], usage: counts }])
    : JSON.stringify({ model: MODEL, choices: [{ index: 0, message: { role: "assistant", content: "a" }, finish_reason: finish }], usage: counts });
  return { stream, status: 200, body };
}

/** A Responses API call that failed (openai/openai-openapi@f85dbe2 `ResponseFailedEvent`, `Response.status`). */
function responsesFailed(stream: boolean): Call {
  const response = { error: { code: "server_error", message: "failed" }, id: "resp_1", model: MODEL, object: "response", output: [], status: "failed", usage: null };
  const body = stream ? `event: response.failed\ndata: ${JSON.stringify({ response, sequence_number: 0, type: "response.failed" })}\n\n` : JSON.stringify(response);
  return { path: "/v1/responses", stream, status: 200, body };
}

/** Every outcome one model can have, streamed and not: each finish reason, each status class, both resets. */
function everyOutcome(): Call[] {
  const out: Call[] = [];
  for (const stream of [false, true]) {
    for (const finish of ["stop", "length", "tool_calls", "content_filter", "function_call", "eos_token", null]) out.push(finished(stream, finish));
    out.push(responsesFailed(stream));
    for (const status of [101, 302, 429, 500]) out.push({ stream, status });
    out.push({ stream });
    out.push({ ...finished(stream, null), cut: true });
  }
  // Every length class: the calls above reach le512/le64 (and `unknown` for the duration of those
  // without usage); a stream without usage reaches `unknown` for TTFT and decode.
  for (const counts of [...CLASS_USAGES, null]) out.push(finished(true, "stop", counts));
  return out;
}

/** The pair's series in the sidecar's /stats/prometheus text, per metric name. */
function seriesPerName(vm: FilterVm): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of vm.stats.prometheus().split("\n")) {
    if (line === "" || line.startsWith("#") || !line.includes('route="chat"') || !line.includes(`model="${MODEL}"`)) continue;
    const name = line.slice(0, line.indexOf("{"));
    out.set(name, (out.get(name) ?? 0) + 1);
  }
  return out;
}

describe("stat-count budget per (route, model) (filter.wasm, emulated Envoy host, the workload patch's buckets)", () => {
  it(`one model through every status class, reset and finish reason exports ${STAT_COUNT_TODAY} series, within ${STAT_BUDGET_PER_ROUTE_MODEL}`, async () => {
    assert.equal(BUCKETS.length, 38);
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom(), histogramBuckets: BUCKETS });
    for (const c of everyOutcome()) call(vm, clock, c);
    const perName = seriesPerName(vm);
    const histogram = BUCKETS.length + 1; // and +Inf; _sum and _count apart
    assert.deepEqual(Object.fromEntries([...perName].sort(([a], [b]) => a.localeCompare(b))), {
      tokentrace_llm_decode_ms_bucket: 5 * histogram, tokentrace_llm_decode_ms_count: 5, tokentrace_llm_decode_ms_sum: 5,
      tokentrace_llm_duration_ms_bucket: 5 * histogram, tokentrace_llm_duration_ms_count: 5, tokentrace_llm_duration_ms_sum: 5,
      tokentrace_llm_input_tokens_total: 1,
      tokentrace_llm_output_tokens_total: 1,
      // The known input classes only: a call without usage is no observation of token usage.
      tokentrace_llm_prompts_total: 4,
      // 2 streams x (7 finish reasons under a 200, response.failed, 1xx, 3xx, 429, 500, two resets).
      tokentrace_llm_requests_total: 28,
      tokentrace_llm_stream_chunks_total: 1,
      tokentrace_llm_tpot_us_bucket: histogram, tokentrace_llm_tpot_us_count: 1, tokentrace_llm_tpot_us_sum: 1,
      tokentrace_llm_ttft_ms_bucket: 5 * histogram, tokentrace_llm_ttft_ms_count: 5, tokentrace_llm_ttft_ms_sum: 5,
      tokentrace_llm_usage_missing_total: 1,
    });
    const total = [...perName.values()].reduce((a, b) => a + b, 0);
    assert.equal(total, STAT_COUNT_TODAY);
    assert.ok(total <= STAT_BUDGET_PER_ROUTE_MODEL, `${total} series > budget ${STAT_BUDGET_PER_ROUTE_MODEL}`);
  });

  it("the error types of a pair are bounded: 40 distinct error codes add at most 8 types and _OTHER", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom(), histogramBuckets: BUCKETS });
    for (let code = 400; code < 440; code++) call(vm, clock, { stream: false, status: code });
    assert.equal(seriesPerName(vm).get("tokentrace_llm_requests_total"), 9);
  });
});
