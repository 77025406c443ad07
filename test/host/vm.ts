// The proxy-wasm host: runs a compiled filter in Node's WebAssembly (V8, Envoy's default runtime)
// with Envoy's start-up sequence, callback order and host-call semantics. Any ABI misuse throws
// AbiViolation; a trap or proc_exit fails the VM for good, as in Envoy.
import { existsSync, readFileSync } from "node:fs";
import {
  BUFFER_TYPE_MAX,
  BufferType,
  HEADER_MAP_TYPE_MAX,
  HeaderMapType,
  LOG_LEVEL_MAX,
  STREAM_TYPE_MAX,
  WasmResult,
} from "./abi.js";
import { realClock, type HostClock } from "./clock.js";
import { AbiViolation, ProcExit, VmFailedError } from "./errors.js";
import { HeaderList } from "./headers.js";
import { startHttpCall, type HttpCallResponse } from "./http-call.js";
import { decodePairs, pairsByteLength, PairsFormatError, writePairs, type Pairs } from "./pairs.js";
import { Memory } from "./memory.js";
import { resolveProperty } from "./properties.js";
import { StatsStore } from "./stats.js";
import { FilterStream, type StreamDriver, type StreamState } from "./stream.js";
import { buildWasi, pooledRandom, WASI_INIT_ALLOWED } from "./wasi.js";
import { Wasm, type WasmInstance, type WasmMemory, type WasmModule } from "./wasm-api.js";

/** Options of FilterVm.load. */
export interface FilterVmOptions {
  /** Path or bytes of the .wasm. */
  wasm: string | Uint8Array;
  /** plugin_root_id property, default "tokentrace". */
  rootId?: string;
  /** Bytes for the first proxy_on_configure, default "". */
  pluginConfig?: string;
  /** Bytes for proxy_on_vm_start, default "". */
  vmConfig?: string;
  /** Default: the process clocks. */
  clock?: HostClock;
  /** WASI random_get source, default crypto.getRandomValues. */
  random?: (out: Uint8Array) => void;
  /** proxy_http_call cluster name -> base URL "http://127.0.0.1:port". */
  clusters?: Record<string, string>;
  /** WASI environ_get (Envoy's vmConfig.env). */
  env?: Record<string, string>;
  /** Istio extraStatTags used by the Prometheus rendering and tagged lookups. */
  statTags?: string[];
  /** Histogram bucket bounds for the Prometheus rendering (Istio's statsHistogramBuckets), default Envoy's. */
  histogramBuckets?: number[];
  /** "envoy" (default): buckets and sums as Envoy's circllhist computes them; "exact": from the raw samples. */
  histogramMode?: "envoy" | "exact";
  /**
   * Histogram values kept for samples() (default 1,000,000 per histogram). Envoy keeps none; a
   * benchmark passes 0 so the host does not grow arrays Envoy would not have.
   */
  maxRetainedSamples?: number;
  /** proxy_get_log_level answer and the level below which logs are dropped, default 2 (info). */
  logLevel?: number;
  /** Called with every log entry kept (the local proxy prints them like Envoy's log). */
  onLog?: (entry: LogEntry) => void;
  /** Log entries kept in FilterVm.logs (oldest dropped first), default 100,000. */
  maxLogEntries?: number;
  /** plugin_name property (Istio: the WasmPlugin's namespace.name), default the root id. */
  pluginName?: string;
  /** plugin_vm_id property, default "". */
  vmId?: string;
  /** Extra VM-wide properties, keyed by the NUL-joined path. */
  properties?: Record<string, Uint8Array>;
}

/** Per-stream facts a test gives newStream. */
export interface StreamProperties {
  /** xds.route_name (the removed top-level "route_name" answers NotFound, as in Envoy >= 1.33). */
  routeName?: string;
  /** xds.cluster_name. */
  clusterName?: string;
  /** request.id (default: the x-request-id request header). */
  requestId?: string;
  /** request.time, default clock.realtimeNs() at newStream. */
  startTimeNs?: bigint;
  /** Any other property, keyed by the NUL-joined path. */
  extra?: Record<string, Uint8Array>;
}

/** One entry of FilterVm.logs. */
export interface LogEntry {
  level: number;
  message: string;
}

const DEFAULT_ROOT_ID = "tokentrace";
const ROOT_CONTEXT_ID = 1;

interface RootState {
  id: number;
  /** active: takes new streams; retired: replaced, waits for its streams; pendingDone: on_done said false. */
  state: "active" | "retired" | "pendingDone" | "deleted";
  streams: number;
}

interface PendingCall {
  token: number;
  promise: Promise<void>;
}

/** A proxy-wasm VM running one plugin (root context id 1), like one Envoy worker's VM. */
export class FilterVm {
  readonly stats: StatsStore;
  private readonly logList: LogEntry[] = [];
  private readonly clock: HostClock;
  private readonly opts: FilterVmOptions;
  private readonly rootId: string;
  private instance!: WasmInstance;
  private mem!: Memory;
  private ex!: Record<string, (...args: number[]) => number>;
  private malloc!: (size: number) => number;
  private abi: "0_2_0" | "0_2_1" = "0_2_0";

  private failure: Error | undefined;
  private initializing = false;
  private depth = 0;
  private currentId = 0;
  private effectiveId = 0;
  private nextContextId = 1;
  private readonly streams = new Map<number, StreamState>();
  private pluginConfigBuffer: Buffer | undefined;
  private readonly vmConfigBuffer: Buffer;
  private httpCallResponse: HttpCallResponse | undefined;
  private nextHttpToken = 1;
  private readonly inflight = new Map<number, PendingCall>();
  private backgroundError: unknown;
  private statusCode = 0;
  private statusMessage = "";
  private tickMs = 0;
  private tickListeners: Array<(ms: number) => void> = [];
  /** Root contexts: 1 from start-up, one more per updatePluginConfig (Envoy's ECDS path). */
  private readonly roots = new Map<number, RootState>();
  private activeRoot = ROOT_CONTEXT_ID;
  private afterCall: Array<() => void> = [];
  private readonly sharedData = new Map<string, { value: Buffer; cas: number }>();
  private nextCas = 1;
  private readonly queues = new Map<number, { name: string; items: Buffer[] }>();
  private readonly queueByName = new Map<string, number>();
  private configureResult = false;
  private hostCallCount = 0;
  private readonly callCounters: Array<{ name: string; n: number }> = [];

  private constructor(opts: FilterVmOptions) {
    validateOptions(opts);
    this.opts = opts;
    this.rootId = opts.rootId ?? DEFAULT_ROOT_ID;
    this.clock = opts.clock ?? realClock;
    this.stats = new StatsStore({ statTags: opts.statTags, histogramBuckets: opts.histogramBuckets, histogramMode: opts.histogramMode, maxRetainedSamples: opts.maxRetainedSamples });
    this.vmConfigBuffer = Buffer.from(opts.vmConfig ?? "", "utf8");
  }

  /** Compiles and instantiates the module, then runs Envoy's start-up: _initialize (else _start), root context 1, proxy_on_vm_start, proxy_on_configure. */
  static async load(opts: FilterVmOptions): Promise<FilterVm> {
    const bytes = loadBytes(opts.wasm);
    const module = await Wasm.compile(bytes);
    const vm = new FilterVm(opts);
    vm.instantiate(module);
    vm.start();
    return vm;
  }

  /** Result of the first proxy_on_configure. */
  get configureAccepted(): boolean {
    return this.configureResult;
  }

  /** True after proc_exit, a trap or an ABI violation: every later call throws, like a failed VM in Envoy. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Why the VM failed, if it did. */
  get failureReason(): string | undefined {
    return this.failure?.message;
  }

  /** proxy_log and WASI fd_write output at or above the log level. */
  get logs(): ReadonlyArray<LogEntry> {
    return this.logList;
  }

  /** The last proxy_set_tick_period_milliseconds (0: no tick). */
  get tickPeriodMs(): number {
    return this.tickMs;
  }

  /** Called with the new period whenever the module sets its tick period. */
  onTickPeriodChange(listener: (ms: number) => void): void {
    this.tickListeners.push(listener);
  }

  /** Current size of linear memory in bytes. */
  memoryBytes(): number {
    return this.mem.byteLength;
  }

  /** How many host calls (env and WASI imports) the module has made so far. */
  get hostCalls(): number {
    return this.hostCallCount;
  }

  /** Host calls made so far per import ("env.proxy_get_header_map_value" ...), the ones made at least once. */
  hostCallsByName(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of this.callCounters) if (c.n > 0) out[c.name] = c.n;
    return out;
  }

  /** A copy of `length` bytes of linear memory at `ptr` (for tests of the host itself). */
  readMemory(ptr: number, length: number): Buffer {
    return Buffer.from(this.mem.bytes(ptr, length, "readMemory"));
  }

  /** proxy_http_call requests still in flight. */
  pendingHttpCalls(): number {
    return this.inflight.size;
  }

  /** A later proxy_on_configure (an ECDS update). */
  configure(pluginConfig: string): boolean {
    return this.runConfigure(pluginConfig);
  }

  /** proxy_on_tick on the root context. */
  tick(): void {
    this.assertAlive("tick");
    if (this.hasExport("proxy_on_tick")) this.invoke(this.activeRoot, "proxy_on_tick", this.activeRoot, 0, 0);
  }

  /** A new stream context (proxy_on_context_create with the root as parent). */
  newStream(props: StreamProperties = {}): FilterStream {
    this.assertAlive("newStream");
    const root = this.roots.get(this.activeRoot)!;
    if (root.state !== "active") throw new Error("newStream after shutdown(): the root context is gone");
    const id = ++this.nextContextId;
    const state: StreamState = {
      id,
      rootId: root.id,
      phase: "new",
      routeName: props.routeName,
      clusterName: props.clusterName,
      requestId: props.requestId,
      startTimeNs: props.startTimeNs ?? this.clock.realtimeNs(),
      monoStartNs: this.clock.monotonicNs(),
      extra: props.extra,
      setProperties: undefined,
      inCallback: undefined,
      continueCalls: [],
      closeCalls: [],
      lastStatus: undefined,
      stops: [],
      lastRequestChunk: EMPTY,
      lastResponseChunk: EMPTY,
      pausedBy: {},
      localResponseInCall: false,
    };
    this.streams.set(id, state);
    root.streams++;
    if (this.hasExport("proxy_on_context_create")) this.invoke(id, "proxy_on_context_create", id, root.id, 0);
    return new FilterStream(this, state, streamDriver);
  }

  /** Awaits every in-flight proxy_http_call and the delivery of its proxy_on_http_call_response. */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) {
      await Promise.allSettled([...this.inflight.values()].map((p) => p.promise));
    }
    if (this.backgroundError !== undefined) {
      const e = this.backgroundError;
      this.backgroundError = undefined;
      throw e;
    }
  }

  /** proxy_on_done on the root context, then proxy_on_delete (at once, or after the module calls proxy_done). */
  shutdown(): void {
    for (const root of this.roots.values()) {
      if (root.state === "active" || root.state === "retired") this.doneRoot(root);
    }
  }

  /**
   * Envoy's ECDS update: a new plugin configuration gets a new root context in the same VM
   * (proxy_on_context_create(new id, 0), proxy_on_configure). Accepted: new streams use it and the
   * old root gets proxy_on_done/proxy_on_delete once its streams have ended. Rejected: the new root
   * is torn down and the old one stays. configure() instead re-runs proxy_on_configure on the same root.
   */
  updatePluginConfig(pluginConfig: string): boolean {
    this.assertAlive("updatePluginConfig");
    const old = this.roots.get(this.activeRoot)!;
    if (old.state !== "active") throw new Error("updatePluginConfig after shutdown(): the root context is gone");
    const id = ++this.nextContextId;
    const root: RootState = { id, state: "active", streams: 0 };
    this.roots.set(id, root);
    // WasmBase::start -> ContextBase::onStart: context create (configuration readable), then on_vm_start.
    this.createRoot(id, pluginConfig);
    const started = this.hasExport("proxy_on_vm_start") ? this.invoke(id, "proxy_on_vm_start", id, this.vmConfigBuffer.length, 0) : 1;
    const accepted = started !== 0 && this.configureRoot(id, pluginConfig);
    if (!accepted) {
      this.doneRoot(root);
      return false;
    }
    this.activeRoot = id;
    old.state = "retired";
    if (old.streams === 0) this.doneRoot(old);
    return true;
  }

  /** The id of the root context new streams get (1 until an accepted updatePluginConfig). */
  get rootContextId(): number {
    return this.activeRoot;
  }

  // ---- start-up -------------------------------------------------------------------------------

  private instantiate(module: WasmModule): void {
    const exportNames = new Set(Wasm.Module.exports(module).map((e) => e.name));
    if (exportNames.has("proxy_abi_version_0_2_1")) this.abi = "0_2_1";
    else if (exportNames.has("proxy_abi_version_0_2_0")) this.abi = "0_2_0";
    else if (exportNames.has("proxy_abi_version_0_1_0")) throw new Error("module exports proxy_abi_version_0_1_0: ABI 0.1.0 is not supported by this host");
    else throw new Error("module exports no proxy_abi_version_0_2_x marker: Envoy refuses it (missing ABI version)");
    if (!exportNames.has("memory")) throw new Error("module exports no memory");
    if (!exportNames.has("malloc") && !exportNames.has("proxy_on_memory_allocate")) {
      throw new Error("module exports neither malloc nor proxy_on_memory_allocate: Envoy fails it (missing malloc function)");
    }

    const provided = this.buildImports();
    for (const imp of Wasm.Module.imports(module)) {
      const mod = Object.hasOwn(provided, imp.module) ? provided[imp.module] : undefined;
      const fn = mod && Object.hasOwn(mod, imp.name) ? mod[imp.name] : undefined;
      if (imp.kind !== "function" || fn === undefined) {
        throw new Error(`module imports ${imp.module}.${imp.name} (${imp.kind}), which the host does not provide (Envoy would fail to link it)`);
      }
    }
    this.instance = new Wasm.Instance(module, provided);
    const exports = this.instance.exports as Record<string, unknown>;
    this.mem = new Memory(exports.memory as WasmMemory);
    this.ex = exports as Record<string, (...args: number[]) => number>;
    const malloc = (exports.malloc ?? exports.proxy_on_memory_allocate) as (size: number) => number;
    this.malloc = malloc;
  }

  private start(): void {
    const ex = this.instance.exports as Record<string, unknown>;
    // Only the calls Envoy allows during start-up may run in _initialize/_start (others trap as restricted).
    this.initializing = true;
    try {
      this.call(0, "_initialize", () => {
        if (typeof ex._initialize === "function") {
          (ex._initialize as () => void)();
          if (typeof ex.main === "function") (ex.main as (a: number, b: number) => number)(0, 0);
          else if (typeof ex.__main_void === "function") (ex.__main_void as () => number)();
        } else if (typeof ex._start === "function") {
          (ex._start as () => void)();
        }
        return 0;
      });
    } finally {
      this.initializing = false;
    }
    // Envoy skips any callback the module does not export (the SDK then manages its own state).
    this.roots.set(ROOT_CONTEXT_ID, { id: ROOT_CONTEXT_ID, state: "active", streams: 0 });
    this.createRoot(ROOT_CONTEXT_ID, this.opts.pluginConfig ?? "");
    const started = this.hasExport("proxy_on_vm_start") ? this.invoke(ROOT_CONTEXT_ID, "proxy_on_vm_start", ROOT_CONTEXT_ID, this.vmConfigBuffer.length, 0) : 1;
    if (started === 0) {
      this.failure = new VmFailedError("proxy_on_vm_start returned false: Envoy fails the VM");
      throw this.failure;
    }
    this.configureResult = this.runConfigure(this.opts.pluginConfig ?? "");
  }

  private runConfigure(pluginConfig: string): boolean {
    this.assertAlive("configure");
    return this.configureRoot(this.activeRoot, pluginConfig);
  }

  private configureRoot(rootId: number, pluginConfig: string): boolean {
    if (!this.hasExport("proxy_on_configure")) return true;
    const cfg = Buffer.from(pluginConfig, "utf8");
    return (
      this.call(rootId, "proxy_on_configure", () => {
        this.pluginConfigBuffer = cfg;
        try {
          return this.fn("proxy_on_configure")(rootId, cfg.length);
        } finally {
          this.pluginConfigBuffer = undefined;
        }
      }) !== 0
    );
  }

  // Envoy sets the plugin (so its configuration is readable) while proxy_on_context_create runs for a root.
  private createRoot(id: number, pluginConfig: string): void {
    if (!this.hasExport("proxy_on_context_create")) return;
    this.call(id, "proxy_on_context_create", () => {
      this.pluginConfigBuffer = Buffer.from(pluginConfig, "utf8");
      try {
        return this.fn("proxy_on_context_create")(id, 0);
      } finally {
        this.pluginConfigBuffer = undefined;
      }
    });
  }

  private doneRoot(root: RootState): void {
    const done = this.hasExport("proxy_on_done") ? this.invoke(root.id, "proxy_on_done", root.id, 0, 0) : 1;
    if (done !== 0) this.deleteRoot(root);
    else root.state = "pendingDone";
  }

  private deleteRoot(root: RootState): void {
    root.state = "deleted";
    if (this.hasExport("proxy_on_delete")) this.invoke(root.id, "proxy_on_delete", root.id, 0, 0);
  }

  private rootOf(contextId: number): RootState | undefined {
    return this.roots.get(this.streams.get(contextId)?.rootId ?? contextId);
  }

  // ---- calls into the module --------------------------------------------------------------

  private fn(name: string): (...args: number[]) => number {
    const f = this.ex[name];
    if (typeof f !== "function") throw new AbiViolation(`module does not export ${name}, which Envoy calls`);
    return f;
  }

  /** True when the module exports `name` (Envoy skips a callback the module lacks). */
  hasExport(name: string): boolean {
    return typeof this.ex[name] === "function";
  }

  private assertAlive(what: string): void {
    if (this.failure) throw new VmFailedError(`${what}: the VM has failed (${this.failure.message})`, { cause: this.failure });
  }

  /** Runs one host->VM call with `contextId` current; a throw fails the VM for good. */
  private call(contextId: number, what: string, body: () => number): number {
    this.assertAlive(what);
    if (this.depth > 0) throw new Error(`${what}: re-entrant call into the VM from a host call`);
    this.depth++;
    this.currentId = contextId;
    this.effectiveId = 0;
    let result: number;
    try {
      result = body();
    } catch (e) {
      throw this.fail(e, what);
    } finally {
      this.depth--;
      this.currentId = 0;
      this.effectiveId = 0;
    }
    this.runAfterCall();
    return result;
  }

  /** `call` for a plain export call with up to three arguments, without a closure per call (the per-request path). */
  private invoke(contextId: number, name: string, a: number, b: number, c: number): number {
    this.assertAlive(name);
    if (this.depth > 0) throw new Error(`${name}: re-entrant call into the VM from a host call`);
    const f = this.fn(name);
    this.depth++;
    this.currentId = contextId;
    this.effectiveId = 0;
    let result: number;
    try {
      result = f(a, b, c);
    } catch (e) {
      throw this.fail(e, name);
    } finally {
      this.depth--;
      this.currentId = 0;
      this.effectiveId = 0;
    }
    if (this.afterCall.length > 0) this.runAfterCall();
    return result;
  }

  private runAfterCall(): void {
    while (this.afterCall.length > 0 && !this.failure) {
      const actions = this.afterCall;
      this.afterCall = [];
      for (const a of actions) a();
    }
  }

  private fail(e: unknown, what: string): Error {
    if (e instanceof AbiViolation) {
      this.failure = e;
      return e;
    }
    if (e instanceof ProcExit) {
      const last = [...this.logList].reverse().find((l) => l.level >= 4);
      this.failure = new VmFailedError(`${what}: the module called proc_exit(${e.code})${last ? `: ${last.message}` : ""}`);
      return this.failure;
    }
    if (e instanceof VmFailedError) {
      this.failure = e;
      return e;
    }
    const msg = e instanceof Error ? e.message : String(e);
    this.failure = new VmFailedError(`${what}: the VM trapped: ${msg}`, { cause: e });
    return this.failure;
  }

  // ---- context helpers ------------------------------------------------------------------------

  private ctxId(): number {
    return this.effectiveId !== 0 ? this.effectiveId : this.currentId;
  }

  private stream(): StreamState | undefined {
    return this.streams.get(this.ctxId());
  }

  private requireStream(call: string): StreamState {
    const s = this.stream();
    if (!s) throw new AbiViolation(`${call} called from the root context (id ${this.ctxId()}), which has no HTTP stream`);
    return s;
  }

  private log(level: number, message: string): void {
    if (level < (this.opts.logLevel ?? 2)) return;
    const entry = { level, message };
    // A long-running proxy logs without end; keep the newest entries only.
    if (this.logList.length >= (this.opts.maxLogEntries ?? 100_000)) this.logList.splice(0, Math.max(1, this.logList.length >> 1));
    this.logList.push(entry);
    this.opts.onLog?.(entry);
  }

  /** Envoy's copyToPointerSize: malloc in the module, copy, write pointer and size (0/0 for empty). */
  private copyOut(data: Buffer | string | bigint, ptrPtr: number, sizePtr: number, what: string): void {
    const size = typeof data === "string" ? Memory.byteLength(data) : typeof data === "bigint" ? 8 : data.length;
    let ptr = 0;
    if (size > 0) {
      ptr = this.alloc(size, what);
      if (typeof data === "string") this.mem.writeString(ptr, data, size, what);
      else if (typeof data === "bigint") this.mem.u64(ptr, data, what);
      else data.copy(this.mem.view(), ptr);
    }
    this.mem.u32(ptrPtr, ptr, what);
    this.mem.u32(sizePtr, size, what);
  }

  private alloc(size: number, what: string): number {
    const ptr = this.malloc(size) >>> 0;
    if (ptr === 0) throw new AbiViolation(`${what}: the module's malloc(${size}) returned 0`);
    this.mem.check(ptr, size, `${what}: malloc(${size}) result`);
    return ptr;
  }

  private readPairs(ptr: number, size: number, what: string): Pairs {
    try {
      return decodePairs(this.mem.bytes(ptr, size, what));
    } catch (e) {
      if (e instanceof PairsFormatError) throw new AbiViolation(`${what}: bad header-map pairs buffer: ${e.message}`);
      throw e;
    }
  }

  // ---- header maps ------------------------------------------------------------------------

  private mapFor(type: number, call: string, write: boolean): HeaderList | undefined {
    if (type > HEADER_MAP_TYPE_MAX || type < 0) throw new AbiViolation(`${call}: header map type ${type} is not 0..${HEADER_MAP_TYPE_MAX}`);
    if (type === HeaderMapType.HttpCallResponseHeaders || type === HeaderMapType.HttpCallResponseTrailers) {
      if (write) throw new AbiViolation(`${call}: HTTP call response maps are immutable`);
      if (!this.httpCallResponse) throw new AbiViolation(`${call}: HTTP call response maps exist only inside proxy_on_http_call_response`);
      return type === HeaderMapType.HttpCallResponseHeaders ? this.httpCallResponse.headers : this.httpCallResponse.trailers;
    }
    if (type === HeaderMapType.GrpcReceiveInitialMetadata || type === HeaderMapType.GrpcReceiveTrailingMetadata) {
      throw new AbiViolation(`${call}: gRPC metadata maps exist only inside gRPC callbacks, which this host does not run`);
    }
    const s = this.requireStream(call);
    if (write && s.phase === "log") throw new AbiViolation(`${call}: header maps are immutable in proxy_on_log`);
    if (write && s.phase === "ended") throw new AbiViolation(`${call}: the stream has ended`);
    switch (type) {
      case HeaderMapType.RequestHeaders:
        return s.requestHeaders;
      case HeaderMapType.RequestTrailers:
        return s.requestTrailers;
      case HeaderMapType.ResponseHeaders:
        return s.responseHeaders;
      default:
        return s.responseTrailers;
    }
  }

  private missingMap(type: number, call: string): number {
    const s = this.stream();
    if (s?.phase === "log") return WasmResult.NotFound; // maps may be absent in the access-log phase
    if (type === HeaderMapType.RequestTrailers || type === HeaderMapType.ResponseTrailers) return WasmResult.BadArgument;
    const which = type === HeaderMapType.RequestHeaders ? "request headers" : "response headers";
    throw new AbiViolation(`${call}: ${which} are not available yet in this callback (Envoy answers BadArgument)`);
  }

  // ---- buffers ----------------------------------------------------------------------------

  private bufferFor(type: number, call: string): Buffer | undefined {
    if (type > BUFFER_TYPE_MAX || type < 0) throw new AbiViolation(`${call}: buffer type ${type} is not 0..${BUFFER_TYPE_MAX}`);
    switch (type) {
      case BufferType.VmConfiguration:
        return this.vmConfigBuffer;
      case BufferType.PluginConfiguration:
        return this.pluginConfigBuffer;
      case BufferType.HttpCallResponseBody:
        return this.httpCallResponse?.body;
      case BufferType.HttpRequestBody: {
        const s = this.requireStream(call);
        return s.requestBody ?? EMPTY;
      }
      case BufferType.HttpResponseBody: {
        const s = this.requireStream(call);
        return s.responseBody ?? EMPTY;
      }
      default:
        return undefined;
    }
  }

  // ---- imports ------------------------------------------------------------------------------

  private buildImports(): Record<string, Record<string, (...args: never[]) => unknown>> {
    const m = (): Memory => this.mem;
    const guard = (name: string, f: (...a: never[]) => unknown): ((...a: never[]) => unknown) => {
      const allowedAtStart = WASI_INIT_ALLOWED.has(name);
      const counter = { name, n: 0 };
      this.callCounters.push(counter);
      const check = (): void => {
        this.hostCallCount++;
        counter.n++;
        if (this.initializing && !allowedAtStart) {
          throw new VmFailedError(`${name} called during _initialize/_start, where Envoy allows only logging, clocks, random, args and environ (restricted_callback trap)`);
        }
      };
      return importWrapper(name, f.length)(check, f);
    };
    const u = (x: number): number => x >>> 0;

    const env: Record<string, (...args: never[]) => unknown> = {
      proxy_log: (level: number, ptr: number, size: number): number => {
        if (u(level) > LOG_LEVEL_MAX) throw new AbiViolation(`proxy_log: level ${level} is not 0..${LOG_LEVEL_MAX}`);
        this.log(level, m().string(u(ptr), u(size), "proxy_log"));
        return WasmResult.Ok;
      },
      proxy_get_status: (codePtr: number, msgPtrPtr: number, msgSizePtr: number): number => {
        m().u32(u(codePtr), this.statusCode, "proxy_get_status");
        this.copyOut(this.statusMessage, u(msgPtrPtr), u(msgSizePtr), "proxy_get_status");
        return WasmResult.Ok;
      },
      proxy_set_property: (pathPtr: number, pathSize: number, valuePtr: number, valueSize: number): number => {
        const path = m().string(u(pathPtr), u(pathSize), "proxy_set_property path");
        const value = Buffer.from(m().bytes(u(valuePtr), u(valueSize), "proxy_set_property value"));
        const s = this.requireStream("proxy_set_property");
        (s.setProperties ??= new Map()).set(path, value);
        return WasmResult.Ok;
      },
      proxy_get_property: (pathPtr: number, pathSize: number, valuePtrPtr: number, valueSizePtr: number): number => {
        const path = m().string(u(pathPtr), u(pathSize), "proxy_get_property path");
        const s = this.stream();
        let value: Buffer | string | bigint | undefined = s?.setProperties?.get(path);
        if (value === undefined && s?.extra?.[path] !== undefined) value = Buffer.from(s.extra[path]!);
        if (value === undefined && this.opts.properties?.[path] !== undefined) value = Buffer.from(this.opts.properties[path]!);
        if (value === undefined) {
          value = resolveProperty(path, this.vmFacts(), s);
        }
        if (value === undefined) return WasmResult.NotFound;
        this.copyOut(value, u(valuePtrPtr), u(valueSizePtr), "proxy_get_property");
        return WasmResult.Ok;
      },
      proxy_send_local_response: (code: number, detailsPtr: number, detailsSize: number, bodyPtr: number, bodySize: number, headersPtr: number, headersSize: number, grpcStatus: number): number => {
        const details = m().string(u(detailsPtr), u(detailsSize), "proxy_send_local_response details");
        const body = Buffer.from(m().bytes(u(bodyPtr), u(bodySize), "proxy_send_local_response body"));
        const headers = this.readPairs(u(headersPtr), u(headersSize), "proxy_send_local_response headers");
        const s = this.requireStream("proxy_send_local_response");
        s.localResponse = { statusCode: u(code), details, body, headers, grpcStatus: grpcStatus | 0 };
        s.localResponseInCall = true;
        return WasmResult.Ok;
      },
      proxy_get_shared_data: (keyPtr: number, keySize: number, valuePtrPtr: number, valueSizePtr: number, casPtr: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_get_shared_data key");
        const entry = this.sharedData.get(key);
        if (!entry) return WasmResult.NotFound;
        this.copyOut(entry.value, u(valuePtrPtr), u(valueSizePtr), "proxy_get_shared_data");
        m().u32(u(casPtr), entry.cas, "proxy_get_shared_data cas");
        return WasmResult.Ok;
      },
      proxy_set_shared_data: (keyPtr: number, keySize: number, valuePtr: number, valueSize: number, cas: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_set_shared_data key");
        const value = Buffer.from(m().bytes(u(valuePtr), u(valueSize), "proxy_set_shared_data value"));
        const entry = this.sharedData.get(key);
        if (u(cas) !== 0 && entry && entry.cas !== u(cas)) return WasmResult.CasMismatch;
        this.sharedData.set(key, { value, cas: this.nextCas++ });
        return WasmResult.Ok;
      },
      proxy_register_shared_queue: (namePtr: number, nameSize: number, tokenPtr: number): number => {
        const name = m().string(u(namePtr), u(nameSize), "proxy_register_shared_queue name");
        let token = this.queueByName.get(name);
        if (token === undefined) {
          token = this.queueByName.size + 1;
          this.queueByName.set(name, token);
          this.queues.set(token, { name, items: [] });
        }
        m().u32(u(tokenPtr), token, "proxy_register_shared_queue token");
        return WasmResult.Ok;
      },
      proxy_resolve_shared_queue: (_vmPtr: number, _vmSize: number, namePtr: number, nameSize: number, tokenPtr: number): number => {
        const name = m().string(u(namePtr), u(nameSize), "proxy_resolve_shared_queue name");
        const token = this.queueByName.get(name);
        if (token === undefined) return WasmResult.NotFound;
        m().u32(u(tokenPtr), token, "proxy_resolve_shared_queue token");
        return WasmResult.Ok;
      },
      proxy_dequeue_shared_queue: (token: number, dataPtrPtr: number, dataSizePtr: number): number => {
        const q = this.queues.get(u(token));
        if (!q) return WasmResult.NotFound;
        const item = q.items.shift();
        if (!item) return WasmResult.Empty;
        this.copyOut(item, u(dataPtrPtr), u(dataSizePtr), "proxy_dequeue_shared_queue");
        return WasmResult.Ok;
      },
      proxy_enqueue_shared_queue: (token: number, dataPtr: number, dataSize: number): number => {
        const q = this.queues.get(u(token));
        if (!q) return WasmResult.NotFound;
        q.items.push(Buffer.from(m().bytes(u(dataPtr), u(dataSize), "proxy_enqueue_shared_queue data")));
        const t = u(token);
        this.afterCall.push(() => {
          if (this.hasExport("proxy_on_queue_ready")) this.invoke(this.activeRoot, "proxy_on_queue_ready", this.activeRoot, t, 0);
        });
        return WasmResult.Ok;
      },
      proxy_get_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtrPtr: number, valueSizePtr: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_get_header_map_value key");
        const map = this.mapFor(u(type), "proxy_get_header_map_value", false);
        if (!map) return this.missingMap(u(type), "proxy_get_header_map_value");
        const v = map.get(key);
        if (v === undefined) return WasmResult.NotFound;
        this.copyOut(v, u(valuePtrPtr), u(valueSizePtr), "proxy_get_header_map_value");
        return WasmResult.Ok;
      },
      proxy_add_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtr: number, valueSize: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_add_header_map_value key");
        const value = m().string(u(valuePtr), u(valueSize), "proxy_add_header_map_value value");
        const map = this.mapFor(u(type), "proxy_add_header_map_value", true);
        if (!map) return this.missingMap(u(type), "proxy_add_header_map_value");
        map.add(key, value);
        return WasmResult.Ok;
      },
      proxy_replace_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtr: number, valueSize: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_replace_header_map_value key");
        const value = m().string(u(valuePtr), u(valueSize), "proxy_replace_header_map_value value");
        const map = this.mapFor(u(type), "proxy_replace_header_map_value", true);
        if (!map) return this.missingMap(u(type), "proxy_replace_header_map_value");
        map.replace(key, value);
        return WasmResult.Ok;
      },
      proxy_remove_header_map_value: (type: number, keyPtr: number, keySize: number): number => {
        const key = m().string(u(keyPtr), u(keySize), "proxy_remove_header_map_value key");
        const map = this.mapFor(u(type), "proxy_remove_header_map_value", true);
        if (!map) return this.missingMap(u(type), "proxy_remove_header_map_value");
        map.remove(key);
        return WasmResult.Ok;
      },
      proxy_get_header_map_pairs: (type: number, ptrPtr: number, sizePtr: number): number => {
        const map = this.mapFor(u(type), "proxy_get_header_map_pairs", false);
        const pairs = map ? map.raw() : [];
        if (pairs.length === 0) {
          this.copyOut(EMPTY, u(ptrPtr), u(sizePtr), "proxy_get_header_map_pairs");
          return WasmResult.Ok;
        }
        const size = pairsByteLength(pairs);
        const ptr = this.alloc(size, "proxy_get_header_map_pairs");
        writePairs(pairs, m().view(), ptr);
        m().u32(u(ptrPtr), ptr, "proxy_get_header_map_pairs");
        m().u32(u(sizePtr), size, "proxy_get_header_map_pairs");
        return WasmResult.Ok;
      },
      proxy_set_header_map_pairs: (type: number, ptr: number, size: number): number => {
        const pairs = this.readPairs(u(ptr), u(size), "proxy_set_header_map_pairs");
        const map = this.mapFor(u(type), "proxy_set_header_map_pairs", true);
        if (!map) return this.missingMap(u(type), "proxy_set_header_map_pairs");
        map.setAll(pairs);
        return WasmResult.Ok;
      },
      proxy_get_header_map_size: (type: number, sizePtr: number): number => {
        const map = this.mapFor(u(type), "proxy_get_header_map_size", false);
        if (!map) return this.missingMap(u(type), "proxy_get_header_map_size");
        m().u32(u(sizePtr), map.byteSize(), "proxy_get_header_map_size");
        return WasmResult.Ok;
      },
      proxy_get_buffer_status: (type: number, lengthPtr: number, flagsPtr: number): number => {
        const buf = this.bufferFor(u(type), "proxy_get_buffer_status");
        if (!buf) return WasmResult.NotFound;
        m().u32(u(lengthPtr), buf.length, "proxy_get_buffer_status length");
        m().u32(u(flagsPtr), 0, "proxy_get_buffer_status flags"); // Envoy always reports flags 0
        return WasmResult.Ok;
      },
      proxy_get_buffer_bytes: (type: number, start: number, length: number, ptrPtr: number, sizePtr: number): number => {
        const buf = this.bufferFor(u(type), "proxy_get_buffer_bytes");
        if (!buf) return WasmResult.NotFound;
        let s = u(start);
        let len = u(length);
        if (s + len > 0xffffffff) return WasmResult.BadArgument; // Envoy's overflow check
        if (s > buf.length) len = 0;
        else if (s + len > buf.length) len = buf.length - s;
        if (len === 0) s = 0;
        this.copyOut(buf.subarray(s, s + len), u(ptrPtr), u(sizePtr), "proxy_get_buffer_bytes");
        return WasmResult.Ok;
      },
      proxy_set_buffer_bytes: (type: number, start: number, length: number, dataPtr: number, dataSize: number): number => {
        const t = u(type);
        const buf = this.bufferFor(t, "proxy_set_buffer_bytes");
        if (!buf) return WasmResult.NotFound;
        const data = Buffer.from(m().bytes(u(dataPtr), u(dataSize), "proxy_set_buffer_bytes data"));
        if (t !== BufferType.HttpRequestBody && t !== BufferType.HttpResponseBody) {
          throw new AbiViolation(`proxy_set_buffer_bytes: buffer type ${t} is immutable (Envoy answers BadArgument)`);
        }
        const s = this.requireStream("proxy_set_buffer_bytes");
        const inBody = t === BufferType.HttpRequestBody ? s.inCallback === "proxy_on_request_body" : s.inCallback === "proxy_on_response_body";
        if (!inBody) throw new AbiViolation(`proxy_set_buffer_bytes: the ${t === 0 ? "request" : "response"} body can only change inside its body callback`);
        const st = u(start);
        const len = u(length);
        let next: Buffer;
        // Envoy's Buffer::copyFrom: prepend (0,0), replace all (0, >= size), append (start >= size); anything else is refused.
        if (st === 0 && len === 0) next = Buffer.concat([data, buf]);
        else if (st === 0 && len >= buf.length) next = data;
        else if (st >= buf.length) next = Buffer.concat([buf, data]);
        else throw new AbiViolation(`proxy_set_buffer_bytes(start=${st}, length=${len}) on a ${buf.length}-byte body: Envoy supports only prepend, replace-all and append (answers BadArgument)`);
        if (t === BufferType.HttpRequestBody) s.requestBody = next;
        else s.responseBody = next;
        return WasmResult.Ok;
      },
      proxy_http_call: (uriPtr: number, uriSize: number, hPtr: number, hSize: number, bodyPtr: number, bodySize: number, tPtr: number, tSize: number, timeoutMs: number, tokenPtr: number): number => {
        const cluster = m().string(u(uriPtr), u(uriSize), "proxy_http_call cluster");
        const headers = this.readPairs(u(hPtr), u(hSize), "proxy_http_call headers");
        const body = Buffer.from(m().bytes(u(bodyPtr), u(bodySize), "proxy_http_call body"));
        const trailers = this.readPairs(u(tPtr), u(tSize), "proxy_http_call trailers");
        m().u32(u(tokenPtr), 0, "proxy_http_call token");
        if ((timeoutMs | 0) < 0) return WasmResult.BadArgument;
        const base = this.opts.clusters?.[cluster];
        if (base === undefined) return WasmResult.BadArgument; // Envoy: no such thread-local cluster
        const lower = new HeaderList(headers);
        if (lower.get(":path") === undefined || lower.get(":method") === undefined || lower.get(":authority") === undefined) return WasmResult.BadArgument;
        const token = this.nextHttpToken++;
        this.startHttpCall(token, this.rootOf(this.ctxId())?.id ?? this.activeRoot, base, lower, body, trailers, u(timeoutMs));
        m().u32(u(tokenPtr), token, "proxy_http_call token");
        return WasmResult.Ok;
      },
      proxy_grpc_call: (): number => {
        throw new AbiViolation("proxy_grpc_call: gRPC calls are not emulated by this host");
      },
      proxy_grpc_stream: (): number => {
        throw new AbiViolation("proxy_grpc_stream: gRPC streams are not emulated by this host");
      },
      proxy_grpc_close: (): number => WasmResult.NotFound,
      proxy_grpc_cancel: (): number => WasmResult.NotFound,
      proxy_grpc_send: (): number => WasmResult.NotFound,
      proxy_set_tick_period_milliseconds: (ms: number): number => {
        this.tickMs = u(ms);
        for (const l of this.tickListeners) l(this.tickMs);
        return WasmResult.Ok;
      },
      proxy_get_current_time_nanoseconds: (ptr: number): number => {
        m().u64(u(ptr), this.clock.realtimeNs(), "proxy_get_current_time_nanoseconds");
        return WasmResult.Ok;
      },
      proxy_define_metric: (type: number, namePtr: number, nameSize: number, idPtr: number): number => {
        const name = m().string(u(namePtr), u(nameSize), "proxy_define_metric name");
        m().check(u(idPtr), 4, "proxy_define_metric id");
        const id = this.stats.define(u(type), name);
        m().u32(u(idPtr), id, "proxy_define_metric id");
        return WasmResult.Ok;
      },
      proxy_increment_metric: (id: number, delta: bigint): number => {
        this.stats.increment(u(id), BigInt.asIntN(64, delta));
        return WasmResult.Ok;
      },
      proxy_record_metric: (id: number, value: bigint): number => {
        this.stats.record(u(id), value);
        return WasmResult.Ok;
      },
      proxy_get_metric: (id: number, ptr: number): number => {
        const v = this.stats.get(u(id));
        m().u64(u(ptr), v, "proxy_get_metric");
        return WasmResult.Ok;
      },
      proxy_set_effective_context: (id: number): number => {
        const cid = u(id);
        const known = this.streams.has(cid) || (this.roots.has(cid) && this.roots.get(cid)!.state !== "deleted");
        if (!known) return WasmResult.BadArgument;
        this.effectiveId = cid;
        return WasmResult.Ok;
      },
      proxy_done: (): number => {
        const root = this.rootOf(this.ctxId());
        if (root?.state !== "pendingDone") return WasmResult.NotFound;
        this.afterCall.push(() => this.deleteRoot(root));
        return WasmResult.Ok;
      },
      proxy_call_foreign_function: (): number => WasmResult.NotFound,
      proxy_continue_stream: (type: number): number => {
        if (u(type) > STREAM_TYPE_MAX) return WasmResult.BadArgument;
        const s = this.requireStream("proxy_continue_stream");
        s.continueCalls.push(u(type));
        if (u(type) === 0) delete s.pausedBy.request;
        if (u(type) === 1) delete s.pausedBy.response;
        return WasmResult.Ok;
      },
      proxy_close_stream: (type: number): number => {
        if (u(type) > STREAM_TYPE_MAX) return WasmResult.BadArgument;
        const s = this.requireStream("proxy_close_stream");
        s.closeCalls.push(u(type));
        return WasmResult.Ok;
      },
      pthread_equal: (a: number, b: number): number => (a === b ? 1 : 0),
      emscripten_notify_memory_growth: (): void => {},
    };
    if (this.abi === "0_2_1") {
      env.proxy_get_log_level = (ptr: number): number => {
        m().u32(u(ptr), this.opts.logLevel ?? 2, "proxy_get_log_level");
        return WasmResult.Ok;
      };
    }

    const wasi = buildWasi({
      memory: m,
      clock: this.clock,
      random: this.opts.random ?? pooledRandom(),
      env: this.opts.env ?? {},
      log: (level, message) => this.log(level, message),
    });

    const wrap = (mod: string, fns: Record<string, (...args: never[]) => unknown>): Record<string, (...args: never[]) => unknown> => {
      const out: Record<string, (...args: never[]) => unknown> = {};
      for (const [name, f] of Object.entries(fns)) out[name] = guard(`${mod}.${name}`, f);
      return out;
    };
    return { env: wrap("env", env), wasi_snapshot_preview1: wrap("wasi_snapshot_preview1", wasi), wasi_unstable: wrap("wasi_unstable", wasi) };
  }

  // ---- HTTP calls -------------------------------------------------------------------------

  // The response goes to the root context of the caller (Envoy: contextOrEffectiveContext()->root_context()).
  private startHttpCall(token: number, rootId: number, base: string, headers: HeaderList, body: Buffer, trailers: Pairs, timeoutMs: number): void {
    const promise = startHttpCall({ base, headers: headers.entries(), body, trailers, timeoutMs })
      .then((res) => this.deliverHttpCall(token, rootId, res))
      .catch((e: unknown) => {
        if (this.backgroundError === undefined) this.backgroundError = e;
      })
      .finally(() => this.inflight.delete(token));
    this.inflight.set(token, { token, promise });
  }

  private deliverHttpCall(token: number, rootId: number, res: HttpCallResponse | { failure: string }): void {
    // A deleted root context's calls are cancelled in Envoy: nothing is delivered.
    if (this.failure || this.roots.get(rootId)?.state === "deleted" || !this.hasExport("proxy_on_http_call_response")) return;
    if ("failure" in res) {
      this.statusCode = WasmResult.BrokenConnection;
      this.statusMessage = res.failure;
      this.call(rootId, "proxy_on_http_call_response", () => this.fn("proxy_on_http_call_response")(rootId, token, 0, 0, 0));
      return;
    }
    this.statusCode = WasmResult.Ok;
    this.statusMessage = "";
    this.call(rootId, "proxy_on_http_call_response", () => {
      this.httpCallResponse = res;
      try {
        return this.fn("proxy_on_http_call_response")(rootId, token, res.headers.size, res.body.length, res.trailers.size);
      } finally {
        this.httpCallResponse = undefined;
      }
    });
  }

  // ---- stream driving (used by FilterStream) ----------------------------------------------

  /** @internal */
  _streamCall(s: StreamState, callback: string, a: number, b: number, body?: { which: "request" | "response"; chunk: Buffer }): number {
    if (body) {
      if (body.which === "request") s.requestBody = body.chunk;
      else s.responseBody = body.chunk;
    }
    s.inCallback = callback;
    try {
      if (!this.hasExport(callback)) return 0;
      const continuesBefore = s.continueCalls.length;
      const status = this.invoke(s.id, callback, s.id, a, b) >>> 0;
      if (!STATUS_CALLBACKS.has(callback)) return status;
      s.lastStatus = status;
      const local = s.localResponseInCall;
      s.localResponseInCall = false;
      if (status === 0 && !local) return status;
      s.stops.push({ callback, status });
      // Envoy pauses the stream on a headers/trailers stop (StopIteration becomes StopAllIterationAndWatermark);
      // a local response ends the request side and sends its reply down the response path.
      const side = callback.includes("_request_") ? "request" : "response";
      // proxy_continue_stream inside the same callback is deferred by Envoy until it returns, so it wins.
      const continued = s.continueCalls.slice(continuesBefore).includes(side === "request" ? 0 : 1);
      if (local) s.pausedBy.request = `${callback} sent a local response`;
      else if (!callback.endsWith("_body") && !continued) s.pausedBy[side] = `${callback} returned ${status}`;
      return status;
    } finally {
      s.inCallback = undefined;
      if (body) {
        if (body.which === "request") {
          s.lastRequestChunk = s.requestBody ?? EMPTY;
          s.requestBody = undefined;
        } else {
          s.lastResponseChunk = s.responseBody ?? EMPTY;
          s.responseBody = undefined;
        }
      }
    }
  }

  /** @internal */
  _streamEnd(s: StreamState): void {
    if (s.phase === "ended") return;
    s.durationNs = this.clock.monotonicNs() - s.monoStartNs;
    s.phase = "log";
    try {
      this._streamCall(s, "proxy_on_log", 0, 0);
      this._streamCall(s, "proxy_on_done", 0, 0);
      s.phase = "ended";
      this._streamCall(s, "proxy_on_delete", 0, 0);
    } finally {
      s.phase = "ended";
      this.streams.delete(s.id);
    }
    const root = this.roots.get(s.rootId);
    if (root && --root.streams === 0 && root.state === "retired") this.doneRoot(root);
  }

  private facts: { rootId: string; pluginName: string; vmId: string } | undefined;

  /** What the VM answers about itself (one object, not one per property read). */
  private vmFacts(): { rootId: string; pluginName: string; vmId: string } {
    const f = this.facts;
    if (f !== undefined && f.rootId === this.rootId) return f;
    return (this.facts = { rootId: this.rootId, pluginName: this.opts.pluginName ?? this.rootId, vmId: this.opts.vmId ?? "" });
  }

  /** @internal */
  _assertAlive(what: string): void {
    this.assertAlive(what);
  }
}

const EMPTY = Buffer.alloc(0);

// The callbacks whose return value is a filter status (Continue = 0).
const STATUS_CALLBACKS = new Set([
  "proxy_on_request_headers",
  "proxy_on_request_body",
  "proxy_on_request_trailers",
  "proxy_on_response_headers",
  "proxy_on_response_body",
  "proxy_on_response_trailers",
]);

type ImportWrapper = (check: () => void, impl: (...a: never[]) => unknown) => (...a: never[]) => unknown;

/**
 * The wrapper of one import: runs `check`, then the implementation with the same arguments. Each
 * import's wrapper is compiled from its own source (its name is in it): closures of one shared
 * literal would share V8's type feedback, so the call to the implementation inside would see every
 * import of that arity and go megamorphic (measured: filter.wasm's 12 host calls per request cost
 * ~0.35 us more that way). Fixed arity, no rest or spread. Compiled once per name per process.
 */
function importWrapper(name: string, arity: number): ImportWrapper {
  const key = `${name}/${arity}`;
  let wrapper = IMPORT_WRAPPERS.get(key);
  if (wrapper === undefined) {
    const params = Array.from({ length: arity }, (_, i) => `a${i}`).join(", ");
    const fnName = name.replace(/[^A-Za-z0-9_$]/g, "_");
    wrapper = new Function("check", "impl", `return function ${fnName}(${params}) { check(); return impl(${params}); };`) as ImportWrapper;
    IMPORT_WRAPPERS.set(key, wrapper);
  }
  return wrapper;
}
const IMPORT_WRAPPERS = new Map<string, ImportWrapper>();

/** Rejects an option the host cannot honour, naming the option and the value. */
function validateOptions(o: FilterVmOptions): void {
  const bad = (key: string, value: unknown, why: string): never => {
    throw new RangeError(`FilterVmOptions.${key}=${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))}: ${why}`);
  };
  if (o.logLevel !== undefined && !(Number.isInteger(o.logLevel) && o.logLevel >= 0 && o.logLevel <= LOG_LEVEL_MAX)) bad("logLevel", o.logLevel, `must be an integer 0..${LOG_LEVEL_MAX}`);
  if (o.statTags?.some((t) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(t))) bad("statTags", o.statTags, "every tag must be an identifier (it goes into Istio's regex unescaped)");
  const b = o.histogramBuckets;
  if (b !== undefined && (b.length === 0 || b.some((x, i) => !(Number.isFinite(x) && x > 0) || (i > 0 && x <= b[i - 1]!)))) bad("histogramBuckets", b, "must be finite, > 0 and strictly increasing");
  for (const [name, url] of Object.entries(o.clusters ?? {})) {
    if (!/^http:\/\/[^/]+\/?$/.test(url)) bad(`clusters.${name}`, url, 'must be a base URL like "http://127.0.0.1:8080"');
  }
  if (o.maxLogEntries !== undefined && !(Number.isInteger(o.maxLogEntries) && o.maxLogEntries > 0)) bad("maxLogEntries", o.maxLogEntries, "must be an integer > 0");
  if (o.maxRetainedSamples !== undefined && !(Number.isInteger(o.maxRetainedSamples) && o.maxRetainedSamples >= 0)) bad("maxRetainedSamples", o.maxRetainedSamples, "must be an integer >= 0");
}

function loadBytes(wasm: string | Uint8Array): Uint8Array {
  if (typeof wasm !== "string") return wasm;
  if (!existsSync(wasm)) throw new Error(`${wasm} is missing: run \`make build\` first`);
  return readFileSync(wasm);
}

const streamDriver: StreamDriver = {
  call: (vm, s, callback, a, b, body) => vm._streamCall(s, callback, a, b, body),
  end: (vm, s) => vm._streamEnd(s),
};

