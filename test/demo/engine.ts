// The simulated model server's engine: continuous batching with an explicit FCFS waiting queue, a
// paged KV cache with prefix caching, preemption and speculative decoding, and a GPU that is busy
// only while a step computes, after vLLM's V1 scheduler (vllm-project/vllm b4622cf,
// vllm/v1/core/sched/scheduler.py Scheduler.schedule and _preempt_request). Each step first gives
// every running request its next tokens (the next chunk of its prompt, or one decode token plus its
// speculative drafts) within the step's token budget, allocating KV blocks as they are needed;
// where none are left, the most recently admitted running request is preempted (its blocks freed,
// back to the head of the queue, its prompt and output recomputed later). Only in a step without a
// preemption are waiting requests admitted, in arrival order, while a slot, budget and blocks
// remain; a request whose leading tokens (a system prompt) are cached skips computing those blocks.
// Blocks a finished request leaves keep its prompt's prefix cached until they are evicted (least
// recently used first) for new allocations. A request's first token comes from the step that
// finishes its prefill. A step costs host time (scheduling, detokenising: the GPU idles) plus GPU
// time (weights read once per step, KV reads per sequence, compute per prefilled or verified token),
// so TTFT grows with the queue while the GPU stays busy, a slow host leaves the GPU idle, and a
// cache too small for the batch makes the GPU recompute prompts. Each part of a step's GPU time
// keeps the GPU's units busy its own way (GPU_ACTIVITY below), which the simulated dcgm-exporter
// reports as DCGM's profiling fields: reading weights and KV is memory-bound, computing tokens is
// tensor-bound, and a step of small kernels launched one by one (no CUDA graphs) keeps the GPU
// "utilised" while using little of it.
//
// With a KV connector that offloads to CPU memory (`kvOffloadTokens`, as vLLM's OffloadingConnector
// or LMCache; vllm-project/vllm 5c18b961d, vllm/distributed/kv_transfer/kv_connector/v1/offloading/
// scheduler.py and Scheduler.schedule): a shared prefix the engine computes is also stored in a CPU
// tier (write-through; least recently used out past its size). A waiting request whose prefix the
// GPU cache no longer holds (it was evicted) finds it there: it gets blocks for its prompt and
// waits one step in the deferred queue (vLLM's skipped_waiting, WAITING_FOR_REMOTE_KVS) while the
// prefix loads, then runs without computing it, and the prefix is cached on the GPU again. A
// request with the same prefix waits deferred too while that load runs (the connector delays it).
// A load fits within the step it runs beside (a system prompt's KV, a few hundred MB, crosses PCIe
// in milliseconds), so it costs that step, no GPU time. Only the shared prefixes are in the tier: a
// preempted request recomputes its own tokens, as without a connector.

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
  /** vLLM --max-num-batched-tokens: tokens one step computes (decodes, drafts and prefill chunks). */
  maxNumBatchedTokens: number;
  /** KV cache capacity in tokens (cut into blocks of `blockSize`). */
  kvCacheTokens: number;
  /** vLLM --block-size: tokens per KV block (prefix caching reuses whole blocks). */
  blockSize: number;
  /** vLLM --enable-prefix-caching (on by default in V1). */
  prefixCaching: boolean;
  /** Speculative tokens drafted per decode step (vLLM num_speculative_tokens), 0 = off. */
  numSpeculativeTokens: number;
  /** Chance that each draft token is accepted, given the ones before it were. */
  draftAcceptance: number;
  /** CPU time per step while the GPU waits (scheduling, sampling, detokenising), ms. */
  hostOverheadMs: number;
  /** GPU time of a step that reads the weights once (decode is memory-bound), ms. */
  stepBaseMs: number;
  /** GPU time per running request per step (its KV cache reads), ms. */
  decodeMsPerSeq: number;
  /** GPU time per prompt token prefilled or draft token verified (compute-bound), ms. */
  prefillMsPerToken: number;
  /**
   * GPU time per step in small kernels launched one at a time, ms: what vLLM's --enforce-eager (no
   * CUDA graphs) adds to every step. The GPU counts as busy (a kernel runs) with few SMs in use.
   */
  eagerKernelMsPerStep: number;
  /** Factor on every step's GPU time: 1 at full clocks, more while the GPU's clocks are held down (thermal or power throttling). */
  gpuSlowdown: number;
  /** Tokens the CPU tier of a KV connector holds (vLLM --kv-transfer-config with an offloading connector), 0 = no connector. */
  kvOffloadTokens: number;
}

/**
 * A small model on one H100: about 40 tokens/s for one request alone, a 16-request batch limit, a
 * KV cache far larger than the load needs, prefix caching on, three speculative tokens a step that
 * the target model mostly accepts.
 */
export const ENGINE_DEFAULTS: EngineParams = {
  maxNumSeqs: 16,
  maxNumBatchedTokens: 8192,
  kvCacheTokens: 200_000,
  blockSize: 16,
  prefixCaching: true,
  numSpeculativeTokens: 3,
  draftAcceptance: 0.95,
  hostOverheadMs: 8,
  stepBaseMs: 16,
  decodeMsPerSeq: 0.8,
  prefillMsPerToken: 0.05,
  eagerKernelMsPerStep: 0,
  gpuSlowdown: 1,
  kvOffloadTokens: 0,
};

/** What a step's GPU time is spent on. */
export type GpuWork = "weights" | "kv" | "compute" | "eager";

/**
 * How busy each of the GPU's units is during each kind of work, as DCGM's profiling fields measure
 * them (NVIDIA/DCGM 72fa3fe dcgmlib/dcgm_fields.h): sm, cycles an SM has a warp (SM_ACTIVE);
 * occupancy, warps resident of the maximum (SM_OCCUPANCY); tensor, cycles the tensor pipe is busy
 * (PIPE_TENSOR_ACTIVE); dram, cycles the memory interface moves data (DRAM_ACTIVE). Reading weights
 * and the KV cache streams memory through every SM; computing prompt and draft tokens is matrix
 * multiplication on the tensor cores; eager small kernels touch a few SMs at a time.
 */
export const GPU_ACTIVITY: Readonly<Record<GpuWork, Readonly<{ sm: number; occupancy: number; tensor: number; dram: number }>>> = {
  weights: { sm: 0.85, occupancy: 0.3, tensor: 0.1, dram: 0.8 },
  kv: { sm: 0.8, occupancy: 0.35, tensor: 0.15, dram: 0.75 },
  compute: { sm: 0.95, occupancy: 0.45, tensor: 0.6, dram: 0.3 },
  eager: { sm: 0.15, occupancy: 0.05, tensor: 0.02, dram: 0.05 },
};

/** GPU time since start, ms: busy in total, and weighted by each unit's activity (sm, occupancy, tensor, dram). */
export interface GpuActivity {
  busyMs: number;
  smMs: number;
  occupancyMs: number;
  tensorMs: number;
  dramMs: number;
}

/** What a request asks of the engine. */
export interface EngineRequest {
  promptTokens: number;
  /** The prompt's leading tokens shared with other requests (a system prompt), by identity. */
  prefix?: { id: string; tokens: number };
  /** Tokens to generate; 0 = prefill only (embeddings). */
  outputTokens: number;
  /** Called for each generated token (index from 0); the first call is the first token. */
  onToken?: (index: number) => void;
  /** Called once when the request is done (after its last token, or its prefill when outputTokens is 0), with its timings. */
  onDone: (timings: RequestTimings) => void;
  /**
   * The LoRA adapter the request names (vLLM's LoRARequest.lora_name), absent for the base model. The
   * scheduler treats it like any other request (with at most --max-loras adapters in use, vLLM's
   * max_loras rule never holds one back); loraAdapters() reports it, as vLLM's LoRA metrics do.
   */
  adapter?: string;
}

/**
 * Timestamps of a finished request, ms on the engine clock, as vLLM's metrics take them
 * (vllm/v1/metrics/stats.py 28ed1fb, IterationStats.update_from_events and
 * update_from_finished_request): scheduled is the first SCHEDULED event (preemptions ignored), so a
 * preemption during prefill counts in prefill, one during decode in decode.
 */
export interface RequestTimings {
  arrivalMs: number;
  scheduledMs: number;
  firstTokenMs: number;
  finishedMs: number;
  promptTokens: number;
  outputTokens: number;
  preemptions: number;
}

/** Tokens a request received in one step: its first, or the gap since its previous ones (vLLM's inter-token latency). */
export interface TokenEvent {
  arrivalMs: number;
  nowMs: number;
  /** When its previous tokens came; undefined for the first token. */
  previousMs: number | undefined;
  count: number;
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
  lastTokenMs: number | undefined;
  /** Tokens to compute before decoding: the prompt, plus the output so far after a preemption. */
  toCompute: number;
  /** Tokens whose KV is in the cache (computed or reused). */
  computed: number;
  generated: number;
  /** Blocks the sequence holds alone; a cached prefix it shares is counted there. */
  ownBlocks: number;
  prefixRef: string | undefined;
  preemptions: number;
  cancelled: boolean;
  /** Its prefix's blocks are being loaded from the connector's CPU tier during the step in flight. */
  loading: boolean;
}

interface CachedPrefix {
  blocks: number;
  refs: number;
  lastUsedMs: number;
}

/** Counters since start, as vLLM's Prometheus logger accumulates them. */
export interface EngineCounters {
  promptTokens: number;
  generationTokens: number;
  /** Tokens of admitted new requests looked up in the prefix cache, and those found (a preempted request's lookups are not counted: PrefixCacheStats.record). */
  prefixCacheQueries: number;
  prefixCacheHits: number;
  /** Tokens of admitted new requests the GPU cache did not have, looked up by the KV connector, and those its CPU tier had (connector_prefix_cache_stats). */
  externalPrefixCacheQueries: number;
  externalPrefixCacheHits: number;
  preemptions: number;
  specDrafts: number;
  specDraftTokens: number;
  specAcceptedTokens: number;
}

/** Adds `share` of a step's GPU time, by kind of work, to activity integrals. */
function addActivity(a: GpuActivity, work: Record<GpuWork, number>, share: number): void {
  for (const kind of Object.keys(work) as GpuWork[]) {
    const ms = work[kind] * share;
    const u = GPU_ACTIVITY[kind];
    a.busyMs += ms;
    a.smMs += ms * u.sm;
    a.occupancyMs += ms * u.occupancy;
    a.tensorMs += ms * u.tensor;
    a.dramMs += ms * u.dram;
  }
}

/** Gauges and counters of the engine. */
export interface EngineState {
  running: number;
  /** Waiting requests: the queue and the deferred (vLLM's num_requests_waiting). */
  waiting: number;
  /** The waiting requests by why (vLLM 5c18b961d SchedulerStats): in the queue for room (capacity), or deferred while their KV loads (deferred). */
  waitingByReason: { capacity: number; deferred: number };
  /** GPU busy time since start, ms: what a utilisation sample integrates. */
  gpuBusyMs: number;
  /** The same time weighted by how busy each unit of the GPU was (what profiling fields integrate). */
  gpu: GpuActivity;
  /** Share of KV blocks in use by running requests (vLLM's kv_cache_usage: cached free blocks count as free). */
  kvCacheUsage: number;
  steps: number;
  counters: EngineCounters;
}

interface Planned {
  seq: Sequence;
  /** Prompt (or recomputed) tokens computed this step. */
  prefill: number;
  decode: boolean;
  drafts: number;
}

/** The engine; `setParams` changes costs and limits live (scenarios). */
export class Engine {
  private params: EngineParams;
  private readonly waiting: Sequence[] = [];
  /** Requests a KV load holds back (vLLM's skipped_waiting): served before the queue at the next step. */
  private deferred: Sequence[] = [];
  /** Requests deferred by the step being planned, joining `deferred` once it is. */
  private deferredNow: Sequence[] = [];
  private running: Sequence[] = [];
  private readonly prefixes = new Map<string, CachedPrefix>();
  /** The connector's CPU tier: prefix id -> blocks, least recently used first (the Map's order). */
  private readonly offloaded = new Map<string, number>();
  private stepTimer: unknown = undefined;
  private readonly activity: GpuActivity = { busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 };
  /** The step on the GPU now: when its kernels start (after the host's overhead) and its work. */
  private inFlight: { gpuStartMs: number; gpuMs: number; work: Record<GpuWork, number> } | undefined;
  private steps = 0;
  private stopped = false;
  private readonly counters: EngineCounters = { promptTokens: 0, generationTokens: 0, prefixCacheQueries: 0, prefixCacheHits: 0, externalPrefixCacheQueries: 0, externalPrefixCacheHits: 0, preemptions: 0, specDrafts: 0, specDraftTokens: 0, specAcceptedTokens: 0 };
  /** Called when a request finishes (vLLM's per-request timings). */
  onFinished: ((t: RequestTimings) => void) | undefined;
  /** Called for every request that got tokens in a step. */
  onTokens: ((e: TokenEvent) => void) | undefined;
  /** Called once a step's outputs are handed out, finished requests gone (vLLM records its iteration stats there). */
  onStepDone: (() => void) | undefined;

  constructor(
    params: Partial<EngineParams> = {},
    private readonly clock: EngineClock = realClock,
    private readonly random: () => number = Math.random,
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
    const seq: Sequence = { req, arrivalMs: this.clock.now(), scheduledMs: -1, firstTokenMs: -1, lastTokenMs: undefined, toCompute: req.promptTokens, computed: 0, generated: 0, ownBlocks: 0, prefixRef: undefined, preemptions: 0, cancelled: false, loading: false };
    this.waiting.push(seq);
    this.kick();
    return {
      cancel: () => {
        seq.cancelled = true;
      },
    };
  }

  state(): EngineState {
    // NVML's utilisation is the share of the sample period a kernel ran, so the step on the GPU now
    // counts for the part already run: counted only at its end, a long prefill step lands whole in
    // one sample and leaves the one before it short (85% and 100% in turn on a saturated GPU).
    const gpu = { ...this.activity };
    const f = this.inFlight;
    if (f !== undefined && f.gpuMs > 0) {
      const share = Math.min(1, Math.max(0, (this.clock.now() - f.gpuStartMs) / f.gpuMs));
      if (share > 0) addActivity(gpu, f.work, share);
    }
    const waitingByReason = { capacity: this.waiting.length, deferred: this.deferred.length };
    return { running: this.running.length, waiting: waitingByReason.capacity + waitingByReason.deferred, waitingByReason, gpuBusyMs: gpu.busyMs, gpu, kvCacheUsage: this.blocksInUse() / this.numBlocks(), steps: this.steps, counters: { ...this.counters } };
  }

  /**
   * The adapters of the running and the waiting requests, each once, in batch and queue order: what
   * vLLM's LoRARequestStates.update_iteration_stats reports as running_lora_adapters and
   * waiting_lora_adapters (vllm-project/vllm vllm/v1/metrics/stats.py, as loggers.py at 005a810 reads them). A cancelled request
   * no longer counts, as vLLM's abort_request drops it at once.
   */
  loraAdapters(): { running: string[]; waiting: string[] } {
    const names = (seqs: readonly Sequence[]): string[] => [...new Set(seqs.filter((s) => !s.cancelled && s.req.adapter !== undefined).map((s) => s.req.adapter!))];
    return { running: names(this.running), waiting: names(this.waiting) };
  }

  /** Stops stepping; requests in flight never finish. */
  stop(): void {
    this.stopped = true;
    this.inFlight = undefined;
    if (this.stepTimer !== undefined) this.clock.clearTimeout(this.stepTimer);
    this.stepTimer = undefined;
  }

  private numBlocks(): number {
    return Math.max(1, Math.floor(this.params.kvCacheTokens / this.params.blockSize));
  }

  private blocksInUse(): number {
    // A deferred request holds the blocks its KV is loaded into.
    let n = [...this.running, ...this.deferred, ...this.deferredNow].reduce((a, s) => a + s.ownBlocks, 0);
    for (const p of this.prefixes.values()) if (p.refs > 0) n += p.blocks;
    return n;
  }

  private cachedFreeBlocks(): number {
    let n = 0;
    for (const p of this.prefixes.values()) if (p.refs === 0) n += p.blocks;
    return n;
  }

  private heldBlocks(seq: Sequence): number {
    return seq.ownBlocks + (seq.prefixRef ? (this.prefixes.get(seq.prefixRef)?.blocks ?? 0) : 0);
  }

  /**
   * KVCacheManager.allocate_slots: blocks for `tokens` more tokens of `seq`; free blocks first, then
   * cached prefixes no running request uses, least recently used first. False where none are left.
   */
  private allocate(seq: Sequence, tokens: number): boolean {
    const need = Math.ceil((seq.computed + tokens) / this.params.blockSize) - this.heldBlocks(seq);
    if (need <= 0) return true;
    const uncachedFree = (): number => this.numBlocks() - this.blocksInUse() - this.cachedFreeBlocks();
    if (uncachedFree() + this.cachedFreeBlocks() < need) return false;
    while (uncachedFree() < need) {
      let lru: [string, CachedPrefix] | undefined;
      for (const e of this.prefixes) if (e[1].refs === 0 && (!lru || e[1].lastUsedMs < lru[1].lastUsedMs)) lru = e;
      this.prefixes.delete(lru![0]);
    }
    seq.ownBlocks += need;
    return true;
  }

  /** Frees a sequence's blocks; a shared prefix stays cached, free to evict once no one uses it. */
  private release(seq: Sequence): void {
    seq.ownBlocks = 0;
    const p = seq.prefixRef ? this.prefixes.get(seq.prefixRef) : undefined;
    if (p) {
      p.refs--;
      p.lastUsedMs = this.clock.now();
    }
    seq.prefixRef = undefined;
  }

  /** Scheduler._preempt_request: blocks freed, back to the head of the queue, everything recomputed later. */
  private preempt(seq: Sequence): void {
    this.release(seq);
    seq.toCompute = seq.req.promptTokens + seq.generated;
    seq.computed = 0;
    seq.preemptions++;
    this.counters.preemptions++;
    this.waiting.unshift(seq);
  }

  /**
   * KVCacheManager.get_computed_blocks: whole cached blocks of the prompt's shared prefix (at least
   * one token left to compute); the sequence holds them from here.
   */
  private lookupPrefix(seq: Sequence): number {
    const prefix = seq.req.prefix;
    const p = prefix && this.params.prefixCaching ? this.prefixes.get(prefix.id) : undefined;
    const hits = p ? Math.max(0, Math.min(p.blocks * this.params.blockSize, seq.toCompute - 1)) : 0;
    if (p && hits > 0) {
      p.refs++;
      seq.prefixRef = prefix!.id;
      seq.computed = hits;
    }
    return hits;
  }

  /** PrefixCacheStats.record for an admitted request: a preempted one's lookup is kept apart, out of the exported counters. */
  private countLookup(seq: Sequence, hits: number): void {
    if (seq.preemptions > 0 || !this.params.prefixCaching) return;
    this.counters.prefixCacheQueries += seq.toCompute;
    this.counters.prefixCacheHits += hits;
  }

  /** Once a request has computed (or loaded) its shared prefix's whole blocks, they are cached for the next ones, and stored in the connector's CPU tier. */
  private publishPrefix(seq: Sequence): void {
    const prefix = seq.req.prefix;
    if (!prefix || !this.params.prefixCaching || seq.prefixRef || this.prefixes.has(prefix.id)) return;
    const blocks = Math.floor(prefix.tokens / this.params.blockSize);
    if (blocks === 0 || seq.computed < blocks * this.params.blockSize || seq.ownBlocks < blocks) return;
    seq.ownBlocks -= blocks;
    this.prefixes.set(prefix.id, { blocks, refs: 1, lastUsedMs: this.clock.now() });
    seq.prefixRef = prefix.id;
    this.offload(prefix.id, blocks);
  }

  /** OffloadingConnector's store (write-through): the prefix's blocks kept in the CPU tier, the least recently used dropped past its size. */
  private offload(id: string, blocks: number): void {
    const capacity = Math.floor(this.params.kvOffloadTokens / this.params.blockSize);
    if (capacity <= 0) return;
    this.offloaded.delete(id);
    this.offloaded.set(id, blocks);
    let held = 0;
    for (const b of this.offloaded.values()) held += b;
    for (const [key, b] of this.offloaded) {
      if (held <= capacity) break;
      this.offloaded.delete(key);
      held -= b;
    }
  }

  /**
   * OffloadingConnector.get_num_new_matched_tokens: the tokens of whole blocks of the prompt's shared
   * prefix the CPU tier holds beyond the GPU cache's `localHits` (at least one token left to compute),
   * to load before the request runs. A lookup makes the prefix the most recently used.
   */
  private lookupOffloaded(seq: Sequence, localHits: number): number {
    const prefix = seq.req.prefix;
    const blocks = prefix && this.params.kvOffloadTokens > 0 ? this.offloaded.get(prefix.id) : undefined;
    if (blocks === undefined) return 0;
    this.offloaded.delete(prefix!.id);
    this.offloaded.set(prefix!.id, blocks);
    const tokens = Math.min(blocks, Math.floor((seq.toCompute - 1) / this.params.blockSize)) * this.params.blockSize;
    return Math.max(0, tokens - localHits);
  }

  /** The connector's PrefixCacheStats.record in Scheduler.schedule: an admitted request's tokens the GPU cache did not have, and those loaded; a preempted one's kept apart, as for the local cache. */
  private countExternal(seq: Sequence, queries: number, hits: number): void {
    if (this.params.kvOffloadTokens <= 0 || queries === 0 || seq.preemptions > 0) return;
    this.counters.externalPrefixCacheQueries += queries;
    this.counters.externalPrefixCacheHits += hits;
  }

  private kick(): void {
    // An idle engine starts its next step on the next turn, so requests that arrive together batch together.
    if (this.stepTimer === undefined && !this.stopped) this.stepTimer = this.clock.setTimeout(() => this.step(), 0);
  }

  /** Plans one step (Scheduler.schedule), then completes it after its host plus GPU time. */
  private step(): void {
    const p = this.params;
    for (const s of this.running) if (s.cancelled) this.release(s);
    this.running = this.running.filter((s) => !s.cancelled);
    for (let i = this.waiting.length - 1; i >= 0; i--) if (this.waiting[i]!.cancelled) this.waiting.splice(i, 1);
    for (const s of this.deferred) if (s.cancelled) this.release(s);
    this.deferred = this.deferred.filter((s) => !s.cancelled);
    this.stepTimer = undefined;
    if (this.running.length === 0 && this.waiting.length === 0 && this.deferred.length === 0) return;
    let budget = p.maxNumBatchedTokens;
    const planned: Planned[] = [];
    let preempted = false;
    // Running requests first: the next prompt chunk, or a decode token and its drafts.
    for (let i = 0; i < this.running.length && budget > 0; i++) {
      const seq = this.running[i]!;
      const left = seq.toCompute - seq.computed;
      const prefill = left > 0 ? Math.min(left, budget) : 0;
      const drafts = prefill > 0 ? 0 : Math.min(p.numSpeculativeTokens, Math.max(0, budget - 1), Math.max(0, seq.req.outputTokens - seq.generated - 1));
      const tokens = prefill > 0 ? prefill : 1 + drafts;
      let ok = this.allocate(seq, tokens);
      while (!ok) {
        // Preempt the lowest-priority request: the last admitted (FCFS).
        // (Running requests are served in order, so the last one is not planned yet, or is this one.)
        const victim = this.running.pop()!;
        this.preempt(victim);
        preempted = true;
        if (victim === seq) break;
        ok = this.allocate(seq, tokens);
      }
      if (!ok) break;
      planned.push({ seq, prefill, decode: prefill === 0, drafts });
      budget -= tokens;
    }
    // Then waiting requests, unless this step preempted one: first the deferred (vLLM's
    // skipped_waiting, served first under FCFS), then the queue in arrival order.
    const loadingNow = new Set<string>();
    while (!preempted && budget > 0 && this.running.length < p.maxNumSeqs) {
      const queue = this.deferred.length > 0 ? this.deferred : this.waiting;
      const seq = queue[0];
      if (seq === undefined) break;
      // A deferred request whose KV was loaded last step holds it (computed > 0): no lookup again.
      const loaded = seq.computed > 0;
      const hits = loaded ? 0 : this.lookupPrefix(seq);
      if (!loaded && hits === 0 && seq.req.prefix && loadingNow.has(seq.req.prefix.id)) {
        // The connector answers "ask again" for blocks being loaded: deferred, nothing counted.
        this.deferredNow.push(queue.shift()!);
        continue;
      }
      const external = loaded ? 0 : this.lookupOffloaded(seq, hits);
      if (external > 0) {
        // An asynchronous load, no tokens computed this step. vLLM admits it only if its whole prompt
        // fits (scheduler_reserve_full_isl, on by default) and allocates the loaded tokens' blocks;
        // here it takes the blocks of the whole prompt, so loads cannot fill the cache while nothing runs.
        if (!this.allocate(seq, seq.toCompute - hits)) {
          if (hits > 0) this.release(seq);
          seq.computed = 0;
          break;
        }
        this.deferredNow.push(queue.shift()!);
        this.countLookup(seq, hits);
        this.countExternal(seq, seq.toCompute - hits, external);
        seq.computed = hits + external;
        seq.loading = true;
        loadingNow.add(seq.req.prefix!.id);
        continue;
      }
      const chunk = Math.min(seq.toCompute - seq.computed, budget);
      if (!this.allocate(seq, chunk)) {
        if (hits > 0) this.release(seq);
        if (!loaded) seq.computed = 0;
        break;
      }
      queue.shift();
      if (!loaded) {
        this.countLookup(seq, hits);
        this.countExternal(seq, seq.toCompute - hits, 0);
      }
      if (seq.scheduledMs < 0) seq.scheduledMs = this.clock.now();
      this.running.push(seq);
      planned.push({ seq, prefill: chunk, decode: false, drafts: 0 });
      budget -= chunk;
    }
    this.deferred.unshift(...this.deferredNow);
    this.deferredNow = [];
    const computedTokens = planned.reduce((n, x) => n + x.prefill + x.drafts, 0);
    const work: Record<GpuWork, number> = {
      weights: p.stepBaseMs * p.gpuSlowdown,
      kv: p.decodeMsPerSeq * planned.length * p.gpuSlowdown,
      compute: p.prefillMsPerToken * computedTokens * p.gpuSlowdown,
      eager: p.eagerKernelMsPerStep * p.gpuSlowdown,
    };
    const gpuMs = work.weights + work.kv + work.compute + work.eager;
    this.inFlight = { gpuStartMs: this.clock.now() + p.hostOverheadMs, gpuMs, work };
    this.stepTimer = this.clock.setTimeout(() => this.complete(planned, work), p.hostOverheadMs + gpuMs);
  }

  /** Adds a finished step's GPU time, by kind of work, to the activity integrals. */
  private account(work: Record<GpuWork, number>): void {
    this.inFlight = undefined;
    addActivity(this.activity, work, 1);
  }

  /** Drafted tokens the target model accepts: each in turn with `draftAcceptance`, stopping at the first rejection. */
  private accepted(drafts: number): number {
    let n = 0;
    while (n < drafts && this.random() < this.params.draftAcceptance) n++;
    return n;
  }

  private complete(planned: Planned[], work: Record<GpuWork, number>): void {
    this.stepTimer = undefined;
    if (this.stopped) return;
    this.account(work);
    this.steps++;
    const now = this.clock.now();
    // The loads issued with this step are done: the prefix is cached on the GPU again.
    for (const seq of this.deferred) {
      if (!seq.loading) continue;
      seq.loading = false;
      if (!seq.cancelled) this.publishPrefix(seq);
    }
    for (const { seq, prefill, decode, drafts } of planned) {
      if (seq.cancelled || !this.running.includes(seq)) continue;
      seq.computed += prefill;
      this.counters.promptTokens += prefill;
      this.publishPrefix(seq);
      const prefillDone = seq.computed >= seq.toCompute;
      let emitted = 0;
      if (decode && seq.generated < seq.req.outputTokens) {
        const accepted = drafts > 0 ? this.accepted(drafts) : 0;
        if (drafts > 0) {
          this.counters.specDrafts++;
          this.counters.specDraftTokens += drafts;
          this.counters.specAcceptedTokens += accepted;
        }
        emitted = Math.min(1 + accepted, seq.req.outputTokens - seq.generated);
        seq.computed += emitted;
      } else if (prefill > 0 && prefillDone && seq.generated < seq.req.outputTokens) {
        // The step that finishes the prompt samples the first token (a resumed request its next one).
        emitted = 1;
      }
      for (let k = 0; k < emitted; k++) {
        if (seq.firstTokenMs < 0) seq.firstTokenMs = now;
        seq.req.onToken?.(seq.generated);
        seq.generated++;
      }
      if (emitted > 0) {
        this.counters.generationTokens += emitted;
        this.onTokens?.({ arrivalMs: seq.arrivalMs, nowMs: now, previousMs: seq.lastTokenMs, count: emitted });
        seq.lastTokenMs = now;
      }
      if (prefillDone && seq.generated >= seq.req.outputTokens) {
        seq.cancelled = true;
        if (seq.firstTokenMs < 0) seq.firstTokenMs = now;
        this.release(seq);
        this.running = this.running.filter((s) => s !== seq);
        const timings: RequestTimings = { arrivalMs: seq.arrivalMs, scheduledMs: seq.scheduledMs, firstTokenMs: seq.firstTokenMs, finishedMs: now, promptTokens: seq.req.promptTokens, outputTokens: seq.generated, preemptions: seq.preemptions };
        seq.req.onDone(timings);
        this.onFinished?.(timings);
      }
    }
    this.onStepDone?.();
    this.step();
  }
}
