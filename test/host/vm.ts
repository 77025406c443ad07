// The proxy-wasm host: runs a compiled filter in Node's WebAssembly (V8, Envoy's default runtime)
// with Envoy's start-up, contexts and calls into the module (proxy-wasm-cpp-host src/wasm.cc,
// src/context.cc; envoyproxy/envoy source/extensions/common/wasm/wasm.cc). The host calls live in
// one file per upstream area (headers, bodies, properties, local replies, HTTP calls, shared data,
// shared queues, metrics, timers, foreign functions, WASI); this file wires them to the VM. Any ABI
// misuse throws AbiViolation; a trap or proc_exit fails the VM for good, as in Envoy.
import { existsSync, readFileSync } from "node:fs";
import { LOG_LEVEL_MAX, WasmResult } from "./abi.js";
import { bufferImports } from "./bodies.js";
import { realClock, type HostClock } from "./clock.js";
import { newStreamState, type HostCore, type RootState, type StreamState } from "./context.js";
import { AbiViolation, ProcExit, VmFailedError } from "./errors.js";
import { foreignImports } from "./foreign.js";
import { headerImports } from "./headers.js";
import { HttpCalls } from "./http-call.js";
import { DEFAULT_BUFFER_LIMIT_BYTES, filterStatus, StreamLifecycle, streamControlImports, type CallbackKind } from "./lifecycle.js";
import { localReplyImports } from "./local-reply.js";
import { Memory } from "./memory.js";
import { metricImports } from "./metrics.js";
import { decodePairs, PairsFormatError, type Pairs } from "./pairs.js";
import { HostProcess } from "./process.js";
import { propertyImports, type VmFacts } from "./properties.js";
import { sharedDataImports } from "./shared-data.js";
import { sharedQueueImports } from "./shared-queue.js";
import { StatsStore } from "./stats.js";
import { FilterStream } from "./stream.js";
import { newStreamInfo, type NodeFacts, type StreamProperties } from "./stream-info.js";
import { timerImports } from "./timers.js";
import { buildWasi, pooledRandom, WASI_INIT_ALLOWED } from "./wasi.js";
import { Wasm, type WasmInstance, type WasmMemory, type WasmModule } from "./wasm-api.js";

/** A deliberate fault in the host's answers, for tests of how the module copes (never Envoy's behaviour). */
export interface HostFault {
  /** The host call ("proxy_get_header_map_value" ...). */
  call: string;
  /** Answer this status without doing anything (an injected failure). */
  status?: number;
  /** Write this size instead of the value's size (an absurd answer). */
  size?: number;
  /** Write this pointer instead of the value's. */
  pointer?: number;
  /** Leave this many matching calls alone first (the VM's own start-up calls, say); default 0. */
  skip?: number;
  /** Then only `times` matching calls; default every one. */
  times?: number;
}

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
  /** plugin_vm_id property and the shared data/queue partition, default "". */
  vmId?: string;
  /** Envoy's local node (xds.node), default id "sidecar~127.0.0.1~test.default~default.svc.cluster.local", cluster "test.default". */
  node?: NodeFacts;
  /** The proxy process this VM is one worker of (shared data and queues), default a process of its own. */
  process?: HostProcess;
  /** Test-only faults in the host's answers. */
  faults?: HostFault[];
  /** The stream buffer limit (the listener's per_connection_buffer_limit_bytes), default Envoy's 1 MiB. */
  bufferLimitBytes?: number;
}

export type { StreamProperties };

/** One entry of FilterVm.logs. */
export interface LogEntry {
  level: number;
  message: string;
}

const DEFAULT_ROOT_ID = "tokentrace";
const ROOT_CONTEXT_ID = 1;
const DEFAULT_NODE: NodeFacts = { id: "sidecar~127.0.0.1~test.default~default.svc.cluster.local", cluster: "test.default" };
// WasmBase::allocMemory: only these calls may run while the module's malloc runs.
const MALLOC_ALLOWED: ReadonlySet<string> = new Set([
  "env.proxy_log",
  ...["fd_write", "clock_time_get", "poll_oneoff"].flatMap((n) => [`wasi_unstable.${n}`, `wasi_snapshot_preview1.${n}`]),
]);

/** A proxy-wasm VM running one plugin (root context id 1), like one Envoy worker's VM. */
export class FilterVm {
  readonly stats: StatsStore;
  /** The proxy process this VM belongs to. */
  readonly process: HostProcess;
  private readonly logList: LogEntry[] = [];
  private readonly clock: HostClock;
  private readonly opts: FilterVmOptions;
  private readonly facts: VmFacts;
  private instance!: WasmInstance;
  private mem!: Memory;
  private ex!: Record<string, (...args: number[]) => number>;
  private malloc!: (size: number) => number;
  private abi: "0_2_0" | "0_2_1" = "0_2_0";

  private failure: Error | undefined;
  /** Calls not allowed right now fail the VM (cpp-host setRestrictedCallback): start-up and malloc. */
  private restricted: ReadonlySet<string> | undefined;
  private depth = 0;
  private currentId = 0;
  /** The stream of currentId, looked up once per call into the VM (host calls ask for it every time). */
  private currentStream: StreamState | undefined;
  private effectiveId = 0;
  private nextContextId = 1;
  private readonly streams = new Map<number, StreamState>();
  private readonly roots = new Map<number, RootState>();
  private activeRoot = ROOT_CONTEXT_ID;
  /** temp_plugin_: the plugin whose configuration is readable (set around configure/create of a root). */
  private pluginConfigBuffer: Buffer | undefined;
  private readonly vmConfigBuffer: Buffer;
  private afterCall: Array<() => void> = [];
  private stopIteration = false;
  private lastCallResult = 0;
  private readonly posted: Array<() => void> = [];
  private readonly httpCalls: HttpCalls;
  private readonly lifecycle: StreamLifecycle;
  private readonly core: HostCore;
  private configureResult = false;
  private hostCallCount = 0;
  private readonly callCounters: Array<{ name: string; n: number }> = [];
  private tickListeners: Array<(ms: number) => void> = [];
  private currentHostCall = "";
  private readonly outFaults: HostFault[] | undefined;

  private constructor(opts: FilterVmOptions) {
    validateOptions(opts);
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.process = opts.process ?? new HostProcess();
    const rootId = opts.rootId ?? DEFAULT_ROOT_ID;
    this.facts = { rootId, pluginName: opts.pluginName ?? rootId, vmId: opts.vmId ?? "", node: opts.node ?? DEFAULT_NODE };
    this.stats = new StatsStore({ statTags: opts.statTags, histogramBuckets: opts.histogramBuckets, histogramMode: opts.histogramMode, maxRetainedSamples: opts.maxRetainedSamples });
    this.vmConfigBuffer = Buffer.from(opts.vmConfig ?? "", "utf8");
    const outFaults = (opts.faults ?? []).filter((f) => f.size !== undefined || f.pointer !== undefined);
    this.outFaults = outFaults.length > 0 ? outFaults : undefined;
    this.core = this.makeCore();
    this.httpCalls = new HttpCalls(
      {
        core: this.core,
        canDeliver: (rootId) => !this.failure && this.roots.get(rootId)?.state !== "deleted" && this.roots.has(rootId),
        deliver: (rootId, token, h, b, t) => {
          if (this.hasExport("proxy_on_http_call_response")) this.callWith(rootId, "proxy_on_http_call_response", () => this.fn("proxy_on_http_call_response")(rootId, token, h, b, t));
        },
      },
      opts.clusters ?? {},
    );
    this.lifecycle = new StreamLifecycle({
      core: this.core,
      clock: this.clock,
      bufferLimitBytes: opts.bufferLimitBytes ?? DEFAULT_BUFFER_LIMIT_BYTES,
      callFilter: (id, name, a, b, kind) => this.callFilter(id, name, a, b, kind),
      lastResult: () => this.lastCallResult,
      createContext: (s) => {
        if (this.hasExport("proxy_on_context_create")) this.invoke(s.id, "proxy_on_context_create", s.id, s.rootId, 0);
      },
      streamGone: (s) => this.streamGone(s),
    });
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

  /** The tick period of the active root context (0: no timer). */
  get tickPeriodMs(): number {
    return this.roots.get(this.activeRoot)?.tickMs ?? 0;
  }

  /** Called with the active root's new period whenever the module sets it. */
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
    return this.httpCalls.pending;
  }

  /** A later proxy_on_configure on the same root context. */
  configure(pluginConfig: string): boolean {
    this.assertAlive("configure");
    return this.configureRoot(this.activeRoot, pluginConfig);
  }

  /** Wasm::tickHandler for a root context (default the active one); Envoy ticks only a root that set a period. */
  tick(rootId = this.activeRoot): void {
    this.assertAlive("tick");
    const root = this.roots.get(rootId);
    if (root === undefined || root.state === "deleted") throw new Error(`tick: root context ${rootId} does not exist`);
    if (root.tickMs === 0) throw new Error(`tick: root context ${rootId} set no tick period, so Envoy never calls its proxy_on_tick`);
    if (this.hasExport("proxy_on_tick")) this.invoke(rootId, "proxy_on_tick", rootId, 0, 0);
  }

  /** A new stream under the active root (its context is created with the request headers, as in Envoy). */
  newStream(props: StreamProperties = {}): FilterStream {
    this.assertAlive("newStream");
    const root = this.roots.get(this.activeRoot)!;
    if (root.state !== "active") throw new Error("newStream after shutdown(): the root context is gone");
    const s = newStreamState(++this.nextContextId, root.id, newStreamInfo(props, this.clock.realtimeNs(), this.clock.monotonicNs()));
    this.streams.set(s.id, s);
    root.streams++;
    return new FilterStream(this, s, this.lifecycle);
  }

  /** Runs what the dispatcher has posted (proxy_on_queue_ready), as Envoy's event loop would next. */
  runPosted(): void {
    while (this.posted.length > 0) this.posted.shift()!();
  }

  /** Awaits every in-flight proxy_http_call and the delivery of its response, then runs posted work. */
  async settle(): Promise<void> {
    await this.httpCalls.settle();
    this.runPosted();
  }

  /** WasmBase::startShutdown: proxy_on_done on every root, then proxy_on_delete (at once, or after proxy_done). */
  shutdown(): void {
    for (const root of this.roots.values()) {
      if (root.state === "active" || root.state === "retired") this.doneRoot(root);
    }
  }

  /**
   * Envoy's ECDS update: a new plugin configuration gets a new root context in the same VM
   * (proxy_on_context_create(new id, 0), proxy_on_vm_start, proxy_on_configure). Accepted: new
   * streams use it and the old root gets proxy_on_done/proxy_on_delete once its streams have ended.
   * Rejected: the new root is torn down and the old one stays. configure() instead re-runs
   * proxy_on_configure on the same root.
   */
  updatePluginConfig(pluginConfig: string): boolean {
    this.assertAlive("updatePluginConfig");
    const old = this.roots.get(this.activeRoot)!;
    if (old.state !== "active") throw new Error("updatePluginConfig after shutdown(): the root context is gone");
    const root = this.newRoot(++this.nextContextId, pluginConfig);
    const accepted = this.startRoot(root) && this.configureRoot(root.id, pluginConfig);
    if (!accepted) {
      this.doneRoot(root);
      return false;
    }
    this.activeRoot = root.id;
    old.state = "retired";
    if (old.streams === 0) this.doneRoot(old);
    return true;
  }

  /** The id of the root context new streams get (1 until an accepted updatePluginConfig). */
  get rootContextId(): number {
    return this.activeRoot;
  }

  /** @internal Throws VmFailedError once the VM has failed. */
  assertAlive(what: string): void {
    if (this.failure) throw new VmFailedError(`${what}: the VM has failed (${this.failure.message})`, { cause: this.failure });
  }

  // DeferAfterCallActions: what host calls queued runs once the call into the VM has returned.
  private runAfterCall(): void {
    while (this.afterCall.length > 0 && !this.failure) {
      const actions = this.afterCall;
      this.afterCall = [];
      for (const a of actions) a();
    }
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
    (this.core as { mem: Memory }).mem = this.mem;
    this.ex = exports as Record<string, (...args: number[]) => number>;
    this.malloc = (exports.malloc ?? exports.proxy_on_memory_allocate) as (size: number) => number;
  }

  // WasmBase::startVm, then WasmBase::start (root context: create, on_vm_start) and configure.
  private start(): void {
    const ex = this.instance.exports as Record<string, unknown>;
    this.restricted = WASI_INIT_ALLOWED;
    try {
      this.callWith(0, "_initialize", () => {
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
      this.restricted = undefined;
    }
    const root = this.newRoot(ROOT_CONTEXT_ID, this.opts.pluginConfig ?? "");
    if (!this.startRoot(root)) {
      this.failure = new VmFailedError("proxy_on_vm_start returned false: Envoy fails the VM");
      throw this.failure;
    }
    this.configureResult = this.configureRoot(ROOT_CONTEXT_ID, this.opts.pluginConfig ?? "");
  }

  private newRoot(id: number, pluginConfig: string): RootState {
    const root: RootState = { id, state: "active", streams: 0, pluginConfig: Buffer.from(pluginConfig, "utf8"), tickMs: 0, statusCode: 0, statusMessage: "" };
    this.roots.set(id, root);
    return root;
  }

  // ContextBase::onStart: proxy_on_context_create(id, 0) with the plugin readable, then proxy_on_vm_start.
  private startRoot(root: RootState): boolean {
    if (this.hasExport("proxy_on_context_create")) {
      this.callWith(root.id, "proxy_on_context_create", () => {
        this.pluginConfigBuffer = root.pluginConfig;
        try {
          return this.fn("proxy_on_context_create")(root.id, 0);
        } finally {
          this.pluginConfigBuffer = undefined;
        }
      });
    }
    if (!this.hasExport("proxy_on_vm_start")) return true;
    return this.invoke(root.id, "proxy_on_vm_start", root.id, this.vmConfigBuffer.length, 0) !== 0;
  }

  // ContextBase::onConfigure: the plugin configuration is readable only during the call.
  private configureRoot(rootId: number, pluginConfig: string): boolean {
    if (!this.hasExport("proxy_on_configure")) return true;
    const cfg = Buffer.from(pluginConfig, "utf8");
    this.roots.get(rootId)!.pluginConfig = cfg;
    return (
      this.callWith(rootId, "proxy_on_configure", () => {
        this.pluginConfigBuffer = cfg;
        try {
          return this.fn("proxy_on_configure")(rootId, cfg.length);
        } finally {
          this.pluginConfigBuffer = undefined;
        }
      }) !== 0
    );
  }

  private doneRoot(root: RootState): void {
    const done = this.hasExport("proxy_on_done") ? this.invoke(root.id, "proxy_on_done", root.id, 0, 0) : 1;
    if (done !== 0) this.deleteRoot(root);
    else root.state = "pendingDone";
  }

  private deleteRoot(root: RootState): void {
    root.state = "deleted";
    root.tickMs = 0;
    if (this.hasExport("proxy_on_delete")) this.invoke(root.id, "proxy_on_delete", root.id, 0, 0);
  }

  private streamGone(s: StreamState): void {
    this.streams.delete(s.id);
    const root = this.roots.get(s.rootId);
    if (root && --root.streams === 0 && root.state === "retired") this.doneRoot(root);
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

  /** One host->VM call with `contextId` current (SaveRestoreContext); a throw fails the VM for good. */
  private callWith(contextId: number, what: string, body: () => number): number {
    this.assertAlive(what);
    if (this.depth > 0) throw new Error(`${what}: re-entrant call into the VM from a host call`);
    this.depth++;
    this.currentId = contextId;
    this.currentStream = this.streams.get(contextId);
    this.effectiveId = 0;
    let result: number;
    try {
      result = body();
    } catch (e) {
      throw this.fail(e, what);
    } finally {
      this.depth--;
      this.currentId = 0;
      this.currentStream = undefined;
      this.effectiveId = 0;
    }
    this.stopIteration = false;
    this.runAfterCall();
    return result;
  }

  /** `callWith` for a plain export call with up to three arguments, without a closure (the per-request path). */
  private invoke(contextId: number, name: string, a: number, b: number, c: number): number {
    this.assertAlive(name);
    if (this.depth > 0) throw new Error(`${name}: re-entrant call into the VM from a host call`);
    const f = this.fn(name);
    this.depth++;
    this.currentId = contextId;
    this.currentStream = this.streams.get(contextId);
    this.effectiveId = 0;
    let result: number;
    try {
      result = f(a, b, c);
    } catch (e) {
      throw this.fail(e, name);
    } finally {
      this.depth--;
      this.currentId = 0;
      this.currentStream = undefined;
      this.effectiveId = 0;
    }
    this.stopIteration = false;
    if (this.afterCall.length > 0) this.runAfterCall();
    return result;
  }

  /**
   * A stream callback (ContextBase::onRequestHeaders ...): skipped (0) when the module lacks it; a
   * status callback's result is converted before the after-call actions run (DeferAfterCallActions).
   */
  private callFilter(contextId: number, name: string, a: number, b: number, kind?: CallbackKind): number {
    if (!this.hasExport(name)) {
      this.lastCallResult = 0;
      return 0;
    }
    this.assertAlive(name);
    if (this.depth > 0) throw new Error(`${name}: re-entrant call into the VM from a host call`);
    const f = this.fn(name);
    this.depth++;
    this.currentId = contextId;
    this.currentStream = this.streams.get(contextId);
    this.effectiveId = 0;
    let result: number;
    try {
      result = f(contextId, a, b) >>> 0;
    } catch (e) {
      throw this.fail(e, name);
    } finally {
      this.depth--;
      this.currentId = 0;
      this.currentStream = undefined;
      this.effectiveId = 0;
    }
    const status = kind === undefined ? result : filterStatus(kind, result, this.stopIteration);
    this.stopIteration = false;
    this.lastCallResult = result;
    if (this.afterCall.length > 0) this.runAfterCall();
    return status;
  }

  private fail(e: unknown, what: string): Error {
    if (e instanceof AbiViolation || e instanceof VmFailedError) {
      this.failure = e;
      return e;
    }
    if (e instanceof ProcExit) {
      const last = [...this.logList].reverse().find((l) => l.level >= 4);
      this.failure = new VmFailedError(`${what}: the module called proc_exit(${e.code})${last ? `: ${last.message}` : ""}`);
      return this.failure;
    }
    const msg = e instanceof Error ? e.message : String(e);
    this.failure = new VmFailedError(`${what}: the VM trapped: ${msg}`, { cause: e });
    return this.failure;
  }

  // ---- the core the host-call areas use -----------------------------------------------------

  private makeCore(): HostCore {
    const vm = this; // eslint-disable-line @typescript-eslint/no-this-alias -- the core's getters read live fields
    const contextId = (): number => {
      // contextOrEffectiveContext: the effective context while it exists, else the current one.
      const eff = vm.effectiveId;
      if (eff === 0) return vm.currentId;
      return vm.streams.has(eff) || vm.roots.has(eff) ? eff : vm.currentId;
    };
    return {
      mem: undefined as unknown as Memory, // set once the module is instantiated
      clock: this.clock,
      contextId,
      stream: () => (vm.effectiveId === 0 ? vm.currentStream : vm.streams.get(contextId())),
      requireStream: (call) => {
        const s = vm.streams.get(contextId());
        if (!s) throw new AbiViolation(`${call} called from the root context (id ${contextId()}), which has no HTTP stream`);
        return s;
      },
      root: (id) => vm.roots.get(id),
      rootOf: (id) => vm.roots.get(vm.streams.get(id)?.rootId ?? id),
      copyOut: this.copyOut.bind(this),
      writeOut: this.writeOut.bind(this),
      alloc: this.alloc.bind(this),
      readPairs: (ptr, size, what) => vm.readPairs(ptr, size, what),
      afterCall: (action) => vm.afterCall.push(action),
      stopNextIteration: (stop) => {
        vm.stopIteration = stop;
      },
    };
  }

  private log(level: number, message: string): void {
    if (level < (this.opts.logLevel ?? 2)) return;
    const entry = { level, message };
    // A long-running proxy logs without end; keep the newest entries only.
    if (this.logList.length >= (this.opts.maxLogEntries ?? 100_000)) this.logList.splice(0, Math.max(1, this.logList.length >> 1));
    this.logList.push(entry);
    this.opts.onLog?.(entry);
  }

  /** WasmBase::copyToPointerSize: malloc in the module, copy, write pointer and size (0/0 for empty). */
  private copyOut(data: Buffer | string | bigint, ptrPtr: number, sizePtr: number, what: string): number {
    const size = typeof data === "string" ? Memory.byteLength(data) : typeof data === "bigint" ? 8 : data.length;
    let ptr = 0;
    if (size > 0) {
      ptr = this.alloc(size, what);
      if (ptr === 0) return WasmResult.InvalidMemoryAccess;
      if (typeof data === "string") this.mem.writeString(ptr, data, size, what);
      else if (typeof data === "bigint") this.mem.u64(ptr, data, what);
      else data.copy(this.mem.view(), ptr);
    }
    this.writeOut(ptrPtr, sizePtr, ptr, size, what);
    return WasmResult.Ok;
  }

  /** Writes a pointer and size answer (where a test's HostFault may falsify it). */
  private writeOut(ptrPtr: number, sizePtr: number, ptr: number, size: number, what: string): void {
    if (this.outFaults !== undefined) {
      const fault = this.takeFault(this.outFaults);
      if (fault !== undefined) {
        ptr = fault.pointer ?? ptr;
        size = fault.size ?? size;
      }
    }
    this.mem.u32(ptrPtr, ptr, what);
    this.mem.u32(sizePtr, size, what);
  }

  private takeFault(faults: HostFault[]): HostFault | undefined {
    const call = this.currentHostCall;
    for (const f of faults) {
      if (f.call !== call || f.times === 0) continue;
      if (f.skip !== undefined && f.skip > 0) {
        f.skip--;
        continue;
      }
      if (f.times !== undefined) f.times--;
      return f;
    }
    return undefined;
  }

  /** WasmBase::allocMemory: the module's malloc (only logging and clocks allowed meanwhile); 0 when it refuses. */
  private alloc(size: number, what: string): number {
    // A throw from malloc fails the VM, so the restriction needs no finally.
    const outer = this.restricted;
    this.restricted = MALLOC_ALLOWED;
    const ptr = this.malloc(size) >>> 0;
    this.restricted = outer;
    if (ptr === 0) return 0;
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

  // ---- imports ------------------------------------------------------------------------------

  private buildImports(): Record<string, Record<string, (...args: never[]) => unknown>> {
    const core = this.core;
    const u = (x: number): number => x >>> 0;
    const vmId = this.facts.vmId;
    const queuePost = (rootId: number, token: number): void => {
      // ContextBase::onQueueReady on the registering root, if it and the VM are still there.
      this.posted.push(() => {
        const root = this.roots.get(rootId);
        if (this.failure || root === undefined || root.state === "deleted" || !this.hasExport("proxy_on_queue_ready")) return;
        this.invoke(rootId, "proxy_on_queue_ready", rootId, token, 0);
      });
    };
    const env: Record<string, (...args: never[]) => unknown> = {
      ...headerImports(core, () => {
        const r = this.httpCalls.responseFor(core.contextId());
        return r === undefined ? undefined : { headers: r.headers, trailers: r.trailers };
      }),
      ...bufferImports(core, {
        vmConfiguration: this.vmConfigBuffer,
        pluginConfiguration: () => this.pluginConfigBuffer,
        httpCallBody: () => this.httpCalls.responseFor(core.contextId())?.body,
      }),
      ...propertyImports(core, () => this.facts),
      ...streamControlImports(core, this.lifecycle),
      ...localReplyImports(core, this.lifecycle),
      ...this.httpCalls.imports(),
      ...sharedDataImports(core, this.process.sharedData, vmId),
      ...sharedQueueImports(core, this.process.sharedQueues, vmId, queuePost),
      ...metricImports(core, this.stats),
      ...timerImports(core, (rootId, ms) => {
        if (rootId === this.activeRoot) for (const l of this.tickListeners) l(ms);
      }),
      ...foreignImports(core),
      proxy_log: (level: number, ptr: number, size: number): number => {
        if (u(level) > LOG_LEVEL_MAX) throw new AbiViolation(`proxy_log: level ${level} is not 0..${LOG_LEVEL_MAX}`);
        this.log(level, core.mem.string(u(ptr), u(size), "proxy_log"));
        return WasmResult.Ok;
      },
      proxy_get_current_time_nanoseconds: (ptr: number): number => {
        core.mem.u64(u(ptr), this.clock.realtimeNs(), "proxy_get_current_time_nanoseconds");
        return WasmResult.Ok;
      },
      // set_effective_context: any context that exists (WasmBase::getContext), else BadArgument.
      proxy_set_effective_context: (id: number): number => {
        const cid = u(id);
        const known = this.streams.has(cid) || (this.roots.has(cid) && this.roots.get(cid)!.state !== "deleted");
        if (!known) return WasmResult.BadArgument;
        this.effectiveId = cid;
        return WasmResult.Ok;
      },
      // WasmBase::done: a root that answered proxy_on_done false is deleted after this call.
      proxy_done: (): number => {
        const root = core.rootOf(core.contextId());
        if (root?.state !== "pendingDone") return WasmResult.NotFound;
        this.afterCall.push(() => this.deleteRoot(root));
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
      pthread_equal: (a: number, b: number): number => (a === b ? 1 : 0),
      emscripten_notify_memory_growth: (): void => {},
    };
    if (this.abi === "0_2_1") {
      env.proxy_get_log_level = (ptr: number): number => {
        core.mem.u32(u(ptr), this.opts.logLevel ?? 2, "proxy_get_log_level");
        return WasmResult.Ok;
      };
    }
    const wasi = buildWasi({ memory: () => this.mem, clock: this.clock, random: this.opts.random ?? pooledRandom(), env: this.opts.env ?? {}, log: (level, message) => this.log(level, message) });
    const wrap = (mod: string, fns: Record<string, (...args: never[]) => unknown>): Record<string, (...args: never[]) => unknown> => {
      const out: Record<string, (...args: never[]) => unknown> = {};
      for (const [name, f] of Object.entries(fns)) out[name] = this.guard(`${mod}.${name}`, name, this.withStatusFault(name, f));
      return out;
    };
    return { env: wrap("env", env), wasi_snapshot_preview1: wrap("wasi_snapshot_preview1", wasi), wasi_unstable: wrap("wasi_unstable", wasi) };
  }

  /** An injected status for `name` (HostFault.status), or the implementation itself. */
  private withStatusFault(name: string, f: (...a: never[]) => unknown): (...a: never[]) => unknown {
    const faults = (this.opts.faults ?? []).filter((x) => x.call === name && x.status !== undefined);
    if (faults.length === 0) return f;
    const injected = (...args: never[]): unknown => {
      const fault = this.takeFault(faults);
      return fault === undefined ? f(...args) : fault.status;
    };
    Object.defineProperty(injected, "length", { value: f.length });
    return injected;
  }

  /** Counts the call, refuses it when restricted (start-up, malloc), then runs it. */
  private guard(qualified: string, name: string, f: (...a: never[]) => unknown): (...a: never[]) => unknown {
    const counter = { name: qualified, n: 0 };
    this.callCounters.push(counter);
    const check = (): void => {
      this.hostCallCount++;
      counter.n++;
      this.currentHostCall = name;
      const restricted = this.restricted;
      if (restricted !== undefined && !restricted.has(qualified)) {
        throw new VmFailedError(`${qualified} called during ${restricted === MALLOC_ALLOWED ? "malloc" : "_initialize/_start"}, where Envoy allows only ${restricted === MALLOC_ALLOWED ? "logging and clocks" : "logging, clocks, random, args and environ"} (restricted_callback trap)`);
      }
    };
    return importWrapper(qualified, f.length)(check, f);
  }
}

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
