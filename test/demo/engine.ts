// The simulated model server's engine: continuous batching with an explicit FCFS waiting queue and a
// GPU that is busy only while a step computes, after vLLM's V1 scheduler (vllm-project/vllm
// 00024d31, vllm/v1/core/sched/scheduler.py Scheduler.schedule). Each step first gives every running
// request its next tokens (one decode token, or the next chunk of its prompt) within the step's token
// budget, then admits waiting requests in arrival order while a slot (max_num_seqs), budget and KV
// cache space remain. A request's first token comes from the step that finishes its prefill. A step
// costs host time (scheduling, detokenising: the GPU idles) plus GPU time (weights read once per
// step, KV reads per sequence, compute per prefilled token), so TTFT grows with the queue while the
// GPU stays busy, and a slow host leaves the GPU idle. Not modelled: preemption (a request that finds
// no KV space waits instead), prefix caching, speculative decoding.

/** Timers the engine runs on (tests drive a fake one). */
export interface EngineClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: EngineClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The engine's shape and costs; see ENGINE_DEFAULTS. */
export interface EngineParams {
  /** vLLM --max-num-seqs: requests running at once. */
  maxNumSeqs: number;
  /** vLLM --max-num-batched-tokens: tokens one step computes (decodes plus prefill chunks). */
  maxNumBatchedTokens: number;
  /** KV cache capacity in tokens (prompt plus generated tokens of running requests). */
  kvCacheTokens: number;
  /** CPU time per step while the GPU waits (scheduling, sampling, detokenising), ms. */
  hostOverheadMs: number;
  /** GPU time of a step that reads the weights once (decode is memory-bound), ms. */
  stepBaseMs: number;
  /** GPU time per running request per step (its KV cache reads), ms. */
  decodeMsPerSeq: number;
  /** GPU time per prompt token prefilled (compute-bound), ms. */
  prefillMsPerToken: number;
}

/** A small model on one H100: about 40 tokens/s for one request alone, a 16-request batch limit. */
export const ENGINE_DEFAULTS: EngineParams = {
  maxNumSeqs: 16,
  maxNumBatchedTokens: 8192,
  kvCacheTokens: 200_000,
  hostOverheadMs: 8,
  stepBaseMs: 16,
  decodeMsPerSeq: 0.8,
  prefillMsPerToken: 0.05,
};

/** What a request asks of the engine. */
export interface EngineRequest {
  promptTokens: number;
  /** Tokens to generate; 0 = prefill only (embeddings). */
  outputTokens: number;
  /** Called for each generated token (index from 0); the first call is the first token. */
  onToken?: (index: number) => void;
  /** Called once when the request is done (after its last token, or its prefill when outputTokens is 0). */
  onDone: () => void;
}

/** Timestamps of a finished request, ms on the engine clock (for vLLM-style latency metrics). */
export interface RequestTimings {
  arrivalMs: number;
  scheduledMs: number;
  firstTokenMs: number;
  finishedMs: number;
  promptTokens: number;
  outputTokens: number;
}

/** A submitted request. */
export interface EngineHandle {
  /** Drops the request (client gone): it leaves the queue or the batch at the next step. */
  cancel(): void;
}

interface Sequence {
  req: EngineRequest;
  arrivalMs: number;
  scheduledMs: number;
  firstTokenMs: number;
  prefilled: number;
  generated: number;
  cancelled: boolean;
}

/** Counters and gauges of the engine. */
export interface EngineState {
  running: number;
  waiting: number;
  /** GPU busy time since start, ms: what a utilisation sample integrates. */
  gpuBusyMs: number;
  kvCacheUsage: number;
  steps: number;
}

/** The engine; `setParams` changes costs and limits live (scenarios). */
export class Engine {
  private params: EngineParams;
  private readonly waiting: Sequence[] = [];
  private running: Sequence[] = [];
  private stepTimer: unknown = undefined;
  private busyMs = 0;
  private steps = 0;
  private stopped = false;
  /** Called when a request finishes (vLLM's per-request timings). */
  onFinished: ((t: RequestTimings) => void) | undefined;

  constructor(
    params: Partial<EngineParams> = {},
    private readonly clock: EngineClock = realClock,
  ) {
    this.params = { ...ENGINE_DEFAULTS, ...params };
  }

  setParams(params: Partial<EngineParams>): void {
    this.params = { ...this.params, ...params };
  }

  get currentParams(): Readonly<EngineParams> {
    return this.params;
  }

  submit(req: EngineRequest): EngineHandle {
    const seq: Sequence = { req, arrivalMs: this.clock.now(), scheduledMs: -1, firstTokenMs: -1, prefilled: 0, generated: 0, cancelled: false };
    this.waiting.push(seq);
    this.kick();
    return {
      cancel: () => {
        seq.cancelled = true;
      },
    };
  }

  state(): EngineState {
    const kvUsed = this.running.reduce((n, s) => n + s.prefilled + s.generated, 0);
    return { running: this.running.length, waiting: this.waiting.length, gpuBusyMs: this.busyMs, kvCacheUsage: Math.min(1, kvUsed / this.params.kvCacheTokens), steps: this.steps };
  }

  /** Stops stepping; requests in flight never finish. */
  stop(): void {
    this.stopped = true;
    if (this.stepTimer !== undefined) this.clock.clearTimeout(this.stepTimer);
    this.stepTimer = undefined;
  }

  private kick(): void {
    // An idle engine starts its next step on the next turn, so requests that arrive together batch together.
    if (this.stepTimer === undefined && !this.stopped) this.stepTimer = this.clock.setTimeout(() => this.step(), 0);
  }

  /** Plans one step, then completes it after its host plus GPU time. */
  private step(): void {
    const p = this.params;
    this.running = this.running.filter((s) => !s.cancelled);
    for (let i = this.waiting.length - 1; i >= 0; i--) if (this.waiting[i]!.cancelled) this.waiting.splice(i, 1);
    this.stepTimer = undefined;
    if (this.running.length === 0 && this.waiting.length === 0) return;
    let budget = p.maxNumBatchedTokens;
    const planned: { seq: Sequence; prefill: number; decode: boolean }[] = [];
    // Running requests first: the next prompt chunk, or one decode token.
    for (const seq of this.running) {
      if (budget <= 0) break;
      const promptLeft = seq.req.promptTokens - seq.prefilled;
      if (promptLeft > 0) {
        const chunk = Math.min(promptLeft, budget);
        planned.push({ seq, prefill: chunk, decode: false });
        budget -= chunk;
      } else {
        planned.push({ seq, prefill: 0, decode: true });
        budget -= 1;
      }
    }
    // Then waiting requests in arrival order, while a slot, budget and KV space remain.
    let kvUsed = this.running.reduce((n, s) => n + s.prefilled + s.generated, 0);
    while (this.waiting.length > 0 && budget > 0 && this.running.length < p.maxNumSeqs) {
      const seq = this.waiting[0]!;
      const need = seq.req.promptTokens + seq.req.outputTokens;
      if (kvUsed + need > p.kvCacheTokens && this.running.length > 0) break;
      this.waiting.shift();
      seq.scheduledMs = this.clock.now();
      this.running.push(seq);
      kvUsed += need;
      const chunk = Math.min(seq.req.promptTokens, budget);
      planned.push({ seq, prefill: chunk, decode: false });
      budget -= chunk;
    }
    const prefillTokens = planned.reduce((n, x) => n + x.prefill, 0);
    const gpuMs = p.stepBaseMs + p.decodeMsPerSeq * planned.length + p.prefillMsPerToken * prefillTokens;
    this.stepTimer = this.clock.setTimeout(() => this.complete(planned, gpuMs), p.hostOverheadMs + gpuMs);
  }

  private complete(planned: { seq: Sequence; prefill: number; decode: boolean }[], gpuMs: number): void {
    this.stepTimer = undefined;
    if (this.stopped) return;
    this.busyMs += gpuMs;
    this.steps++;
    const now = this.clock.now();
    for (const { seq, prefill, decode } of planned) {
      if (seq.cancelled) continue;
      seq.prefilled += prefill;
      const prefillDone = seq.prefilled >= seq.req.promptTokens;
      // The step that finishes the prompt samples the first token; each decode step one more.
      if ((decode || (prefill > 0 && prefillDone)) && seq.generated < seq.req.outputTokens) {
        if (seq.generated === 0) seq.firstTokenMs = now;
        seq.req.onToken?.(seq.generated);
        seq.generated++;
      }
      if (prefillDone && seq.generated >= seq.req.outputTokens) {
        seq.cancelled = true;
        if (seq.firstTokenMs < 0) seq.firstTokenMs = now;
        seq.req.onDone();
        this.onFinished?.({ arrivalMs: seq.arrivalMs, scheduledMs: seq.scheduledMs, firstTokenMs: seq.firstTokenMs, finishedMs: now, promptTokens: seq.req.promptTokens, outputTokens: seq.generated });
      }
    }
    this.step();
  }
}
