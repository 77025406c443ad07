// The simulated server's /metrics as vLLM's V1 PrometheusStatLogger exports it (vllm-project/vllm):
// the current names, as tests/entrypoints/openai/test_metrics.py at 0419b117 expects them of a server
// without --show-hidden-metrics-for-version; HELP texts, labels model_name and engine, and buckets of
// vllm/v1/metrics/loggers.py at 005a810 (inter_token_latency_seconds has the buckets of the
// time_per_output_token_seconds it renamed); speculative decoding from vllm/v1/spec_decode/metrics.py
// at ee4ceaa; in prometheus_client's text format (labels sorted, counters with _total and _created,
// floats as floatToGoString writes them). test/fixtures/pipeline/vllm-v1-two-engines.prom is written
// from the same sources, and vllm-metrics.test.ts holds this output to it. Values come from the
// simulated engine: gauges from its state, counters from its own counts, histograms from its per-step
// token events (TTFT from arrival, inter-token latency per step) and finished-request timings (queue
// from arrival to first scheduling, prefill to the first token, decode to the last, as
// vllm/v1/metrics/stats.py at 28ed1fb). With LoRA on (vLLM's --enable-lora, `lora` below), also
// vllm:lora_requests_info as loggers.py at 005a810 writes it (see LoraInfo). From loggers.py at
// 5c18b961d (vllm-project/vllm#38435), written for every engine whatever the configuration:
// vllm:num_requests_waiting_by_reason (capacity: the waiting queue; deferred: skipped_waiting, here
// requests waiting for a KV load; num_requests_waiting is their sum) and the KV connector's
// vllm:external_prefix_cache_queries and _hits (registered since #26245, so 0 without a connector).
import type { Engine, RequestTimings, TokenEvent } from "./engine.js";

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];

/** Python's repr of a float: the shortest round-trip digits, fixed from 1e-4 to 1e16, else an exponent of at least two digits. */
function pythonRepr(v: number): string {
  if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = v.toExponential().split("e") as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 16) return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  const s = String(v);
  return s.includes(".") ? s : `${s}.0`;
}

/** prometheus_client's floatToGoString: Python's repr, with an exponent where Go uses one (more than 6 integer digits). */
export function floatToGoString(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  const s = pythonRepr(v);
  const dot = s.indexOf(".");
  if (v > 0 && dot > 6) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/0+$/, "").replace(/\.$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

/** Observations per bucket (not cumulative), their count and sum. */
class Histogram {
  readonly counts: number[];
  count = 0;
  sum = 0;
  constructor(readonly bounds: number[]) {
    this.counts = bounds.map(() => 0);
  }
  observe(v: number): void {
    const i = this.bounds.findIndex((b) => v <= b);
    if (i >= 0) this.counts[i]!++;
    this.count++;
    this.sum += v;
  }
}

/** LoRA on the simulated server: vLLM's --enable-lora with --max-loras. */
export interface VllmLoraOptions {
  /** --max-loras: adapters one batch may hold (the gauge's max_lora label). */
  maxLoras: number;
}

/**
 * vllm:lora_requests_info (vllm-project/vllm 005a810 vllm/v1/metrics/loggers.py
 * PrometheusStatLogger.__init__ and record): a gauge with labels max_lora, waiting_lora_adapters and
 * running_lora_adapters (no model_name, no engine), set to the wall-clock time (set_to_current_time,
 * seconds) under the adapters then running and waiting, joined by ",", on every iteration the engine
 * reports; an idle engine reports none, so the newest state stays. prometheus_client keeps every
 * label combination it was given (children in the order they were made), so /metrics lists the past
 * states too, the newest with the largest value. The adapters of a list are in the order vLLM's
 * LoRARequestStates first saw them (its dict of adapters, kept for the server's life; vLLM adds one
 * when its first request arrives, here when a step first reports it, the same order unless two
 * adapters' first requests arrive within one step).
 */
class LoraInfo {
  /** Adapters in the order first seen. */
  private readonly seen: string[] = [];
  /** "running\u0000waiting" -> the last time (s) the state was recorded, in the order the states were first recorded. */
  private readonly states = new Map<string, number>();

  constructor(
    private readonly maxLoras: number,
    private readonly wallMs: () => number,
  ) {}

  /** One iteration's state (LoRARequestStates.update_iteration_stats, then record). */
  record(now: { running: string[]; waiting: string[] }): void {
    for (const name of [...now.running, ...now.waiting]) if (!this.seen.includes(name)) this.seen.push(name);
    const inSeenOrder = (names: string[]): string => names.slice().sort((a, b) => this.seen.indexOf(a) - this.seen.indexOf(b)).join(",");
    this.states.set(`${inSeenOrder(now.running)}\u0000${inSeenOrder(now.waiting)}`, this.wallMs() / 1000);
  }

  render(out: string[]): void {
    out.push("# HELP vllm:lora_requests_info Running stats on lora requests.", "# TYPE vllm:lora_requests_info gauge");
    for (const [key, seconds] of this.states) {
      const [running, waiting] = key.split("\u0000") as [string, string];
      // prometheus_client's exposition (generate_latest sample_line) sorts a sample's labels by name and escapes backslash, newline and double quote.
      const escape = (v: string): string => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
      out.push(`vllm:lora_requests_info{max_lora="${this.maxLoras}",running_lora_adapters="${escape(running)}",waiting_lora_adapters="${escape(waiting)}"} ${floatToGoString(seconds)}`);
    }
  }
}

/** Options of VllmMetrics beyond the engine and the model. */
export interface VllmMetricsOptions {
  /** LoRA on: vllm:lora_requests_info is written; absent: off, as vLLM without --enable-lora. */
  lora?: VllmLoraOptions;
  /** Wall-clock ms for the LoRA gauge's value, default Date.now. */
  wallMs?: () => number;
}

/** vLLM's metrics of one model served by one engine of the simulated server. */
export class VllmMetrics {
  private readonly ttft = new Histogram(TTFT_BUCKETS);
  private readonly itl = new Histogram(ITL_BUCKETS);
  private readonly phases = { queue: new Histogram(REQUEST_LATENCY_BUCKETS), prefill: new Histogram(REQUEST_LATENCY_BUCKETS), decode: new Histogram(REQUEST_LATENCY_BUCKETS), inference: new Histogram(REQUEST_LATENCY_BUCKETS), e2e: new Histogram(REQUEST_LATENCY_BUCKETS) };
  private readonly createdSec: number;
  private readonly lora: LoraInfo | undefined;

  constructor(
    private readonly engine: Engine,
    readonly modelName: string,
    nowEpochMs: number = Date.now(),
    options: VllmMetricsOptions = {},
  ) {
    this.createdSec = nowEpochMs / 1000;
    engine.onTokens = (e) => this.tokens(e);
    engine.onFinished = (t) => this.finish(t);
    if (options.lora) {
      const lora = new LoraInfo(options.lora.maxLoras, options.wallMs ?? Date.now);
      this.lora = lora;
      engine.onStepDone = () => lora.record(engine.loraAdapters());
    }
  }

  private tokens(e: TokenEvent): void {
    // IterationStats.update_from_output: TTFT from the request's arrival at its first tokens; then one inter-token latency per step.
    if (e.previousMs === undefined) this.ttft.observe((e.nowMs - e.arrivalMs) / 1000);
    else this.itl.observe((e.nowMs - e.previousMs) / 1000);
  }

  private finish(t: RequestTimings): void {
    this.phases.queue.observe((t.scheduledMs - t.arrivalMs) / 1000);
    this.phases.prefill.observe((t.firstTokenMs - t.scheduledMs) / 1000);
    this.phases.decode.observe((t.finishedMs - t.firstTokenMs) / 1000);
    this.phases.inference.observe((t.finishedMs - t.scheduledMs) / 1000);
    this.phases.e2e.observe((t.finishedMs - t.arrivalMs) / 1000);
  }

  /** The /metrics text. */
  render(): string {
    const s = this.engine.state();
    const c = s.counters;
    const labels = (extra: [string, string][] = []): string =>
      `{${[["engine", "0"], ["model_name", this.modelName], ...extra].sort(([a], [b]) => (a! < b! ? -1 : 1)).map(([k, v]) => `${k}="${v}"`).join(",")}}`;
    const out: string[] = [];
    const gauge = (name: string, help: string, v: number): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${labels()} ${floatToGoString(v)}`);
    };
    const counter = (name: string, help: string, v: number): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name}_total${labels()} ${floatToGoString(v)}`, `${name}_created${labels()} ${floatToGoString(this.createdSec)}`);
    };
    const histogram = (name: string, help: string, h: Histogram): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
      let cum = 0;
      h.bounds.forEach((b, i) => {
        cum += h.counts[i]!;
        out.push(`${name}_bucket${labels([["le", floatToGoString(b)]])} ${floatToGoString(cum)}`);
      });
      out.push(`${name}_bucket${labels([["le", "+Inf"]])} ${floatToGoString(h.count)}`, `${name}_count${labels()} ${floatToGoString(h.count)}`, `${name}_sum${labels()} ${floatToGoString(h.sum)}`, `${name}_created${labels()} ${floatToGoString(this.createdSec)}`);
    };
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", s.running);
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", s.waiting);
    out.push(
      "# HELP vllm:num_requests_waiting_by_reason Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
      "# TYPE vllm:num_requests_waiting_by_reason gauge",
      // Children in the order made: capacity, then deferred.
      ...(["capacity", "deferred"] as const).map((reason) => `vllm:num_requests_waiting_by_reason${labels([["reason", reason]])} ${floatToGoString(s.waitingByReason[reason])}`),
    );
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kvCacheUsage);
    counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", c.prefixCacheQueries);
    counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", c.prefixCacheHits);
    counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", c.externalPrefixCacheQueries);
    counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", c.externalPrefixCacheHits);
    counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", c.preemptions);
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", c.promptTokens);
    counter("vllm:generation_tokens", "Number of generation tokens processed.", c.generationTokens);
    if (this.engine.currentParams.numSpeculativeTokens > 0) {
      // SpecDecodingProm: only when speculative decoding is configured.
      counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", c.specDrafts);
      counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", c.specDraftTokens);
      counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", c.specAcceptedTokens);
    }
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", this.ttft);
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", this.itl);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", this.phases.e2e);
    histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", this.phases.queue);
    histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", this.phases.inference);
    histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", this.phases.prefill);
    histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", this.phases.decode);
    // Made last in PrometheusStatLogger.__init__.
    this.lora?.render(out);
    return out.join("\n") + "\n";
  }
}
