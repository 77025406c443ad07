// Hand-built proxy-wasm modules for the host's tests: a bump malloc, the ABI marker, every callback
// with a default body, and helpers to call one host function with constant arguments.
import { buildModule, op, type DefinedFn, type ImportFn, type ValType } from "./wasm-writer.js";

const I = "i32" as const;
const L = "i64" as const;
const n = (k: number): ValType[] => Array.from({ length: k }, () => I);

/** Signatures of the host functions the tests import. */
export const HOST_FNS: Record<string, { module: string; params: ValType[]; results: ValType[] }> = {
  proxy_log: { module: "env", params: n(3), results: [I] },
  proxy_get_header_map_pairs: { module: "env", params: n(3), results: [I] },
  proxy_set_header_map_pairs: { module: "env", params: n(3), results: [I] },
  proxy_get_header_map_value: { module: "env", params: n(5), results: [I] },
  proxy_add_header_map_value: { module: "env", params: n(5), results: [I] },
  proxy_replace_header_map_value: { module: "env", params: n(5), results: [I] },
  proxy_remove_header_map_value: { module: "env", params: n(3), results: [I] },
  proxy_get_header_map_size: { module: "env", params: n(2), results: [I] },
  proxy_get_property: { module: "env", params: n(4), results: [I] },
  proxy_define_metric: { module: "env", params: n(4), results: [I] },
  proxy_increment_metric: { module: "env", params: [I, L], results: [I] },
  proxy_record_metric: { module: "env", params: [I, L], results: [I] },
  proxy_get_metric: { module: "env", params: n(2), results: [I] },
  proxy_get_buffer_bytes: { module: "env", params: n(5), results: [I] },
  proxy_get_buffer_status: { module: "env", params: n(3), results: [I] },
  proxy_set_buffer_bytes: { module: "env", params: n(5), results: [I] },
  proxy_http_call: { module: "env", params: n(10), results: [I] },
  proxy_set_tick_period_milliseconds: { module: "env", params: n(1), results: [I] },
  proxy_get_current_time_nanoseconds: { module: "env", params: n(1), results: [I] },
  proxy_get_log_level: { module: "env", params: n(1), results: [I] },
  proxy_send_local_response: { module: "env", params: n(8), results: [I] },
  proxy_set_effective_context: { module: "env", params: n(1), results: [I] },
  proxy_continue_stream: { module: "env", params: n(1), results: [I] },
  proxy_close_stream: { module: "env", params: n(1), results: [I] },
  proxy_set_property: { module: "env", params: n(4), results: [I] },
  proxy_get_shared_data: { module: "env", params: n(5), results: [I] },
  proxy_set_shared_data: { module: "env", params: n(5), results: [I] },
  proxy_register_shared_queue: { module: "env", params: n(3), results: [I] },
  proxy_resolve_shared_queue: { module: "env", params: n(5), results: [I] },
  proxy_dequeue_shared_queue: { module: "env", params: n(3), results: [I] },
  proxy_enqueue_shared_queue: { module: "env", params: n(3), results: [I] },
  proxy_call_foreign_function: { module: "env", params: n(6), results: [I] },
  proxy_done: { module: "env", params: [], results: [I] },
  proxy_get_status: { module: "env", params: n(3), results: [I] },
  proxy_nonexistent_call: { module: "env", params: [], results: [I] },
  toString: { module: "env", params: [], results: [I] },
  fd_write: { module: "wasi_snapshot_preview1", params: n(4), results: [I] },
  clock_time_get: { module: "wasi_snapshot_preview1", params: [I, L, I], results: [I] },
  random_get: { module: "wasi_snapshot_preview1", params: n(2), results: [I] },
  environ_sizes_get: { module: "wasi_snapshot_preview1", params: n(2), results: [I] },
  environ_get: { module: "wasi_snapshot_preview1", params: n(2), results: [I] },
  proc_exit: { module: "wasi_snapshot_preview1", params: [I], results: [] },
  unstable_fd_write: { module: "wasi_unstable", params: n(4), results: [I] },
};

const CALLBACKS: Record<string, { params: number; result?: number }> = {
  proxy_on_context_create: { params: 2 },
  proxy_on_vm_start: { params: 2, result: 1 },
  proxy_on_configure: { params: 2, result: 1 },
  proxy_on_tick: { params: 1 },
  proxy_on_request_headers: { params: 3, result: 0 },
  proxy_on_request_body: { params: 3, result: 0 },
  proxy_on_request_trailers: { params: 2, result: 0 },
  proxy_on_response_headers: { params: 3, result: 0 },
  proxy_on_response_body: { params: 3, result: 0 },
  proxy_on_response_trailers: { params: 2, result: 0 },
  proxy_on_http_call_response: { params: 5 },
  proxy_on_queue_ready: { params: 2 },
  proxy_on_log: { params: 1 },
  proxy_on_done: { params: 1, result: 1 },
  proxy_on_delete: { params: 1 },
};

/** Where the bump allocator keeps its next free address; the heap starts at HEAP_START. */
export const HEAP_PTR_ADDR = 0;
export const HEAP_START = 8192;

type Body = (fn: (name: string) => number) => number[];

/** What a test module does: callback bodies (stack left empty), return values, extra data. */
export interface ProxyModuleSpec {
  abi?: "0_2_0" | "0_2_1";
  imports?: string[];
  callbacks?: Record<string, Body>;
  returns?: Record<string, number>;
  /** Bodies that leave the callback's i32 result on the stack (instead of a constant return). */
  computed?: Record<string, Body>;
  initialize?: Body;
  data?: Array<{ offset: number; bytes: Uint8Array | string }>;
  withoutMalloc?: boolean;
  /** proxy_on_vm_start first sets this tick period, so tests can fire proxy_on_tick (Envoy ticks only then). */
  tickPeriodMs?: number;
  /** A malloc of the test's own (its body leaves the i32 result on the stack; local 0 is the size) instead of the bump allocator. */
  malloc?: Body;
}

/** `i32.const addr; <call name(args)>; i32.store`: stores the call's i32 result at addr. */
export const callStore = (addr: number, fname: string, ...args: number[][]): Body => (fn) => [
  ...op.i32(addr),
  ...args.flat(),
  ...op.call(fn(fname)),
  ...op.store,
];

/** `<call name(args)>; drop`. */
export const callDrop = (fname: string, ...args: number[][]): Body => (fn) => [...args.flat(), ...op.call(fn(fname)), ...op.drop];

/** The bump allocator never frees: a callback that receives values starts each call with an empty heap. */
export const resetHeap: Body = () => [...op.i32(HEAP_PTR_ADDR), ...op.i32(HEAP_START), ...op.store];

/** Runs several bodies in order. */
export const seq = (...bodies: Body[]): Body => (fn) => bodies.flatMap((b) => b(fn));

/** The i32 stored at addr, as an instruction sequence. */
export const loadAt = (addr: number): number[] => [...op.i32(addr), ...op.load];

/** Builds the module. */
export function proxyModule(spec: ProxyModuleSpec = {}): Uint8Array {
  const wanted = [...(spec.imports ?? [])];
  if (spec.tickPeriodMs !== undefined && !wanted.includes("proxy_set_tick_period_milliseconds")) wanted.push("proxy_set_tick_period_milliseconds");
  const imports: ImportFn[] = wanted.map((k) => {
    const sig = HOST_FNS[k];
    if (!sig) throw new Error(`proxy-module: unknown host function ${k}`);
    return { module: sig.module, name: k.replace(/^unstable_/, ""), params: sig.params, results: sig.results };
  });
  const funcs: DefinedFn[] = [
    { export: `proxy_abi_version_${spec.abi ?? "0_2_0"}`, params: [], results: [], body: () => [] },
    { export: "_initialize", params: [], results: [], body: (fn) => (spec.initialize ? spec.initialize(fn) : []) },
  ];
  if (spec.malloc !== undefined) {
    funcs.push({ export: "malloc", params: [I], results: [I], locals: [I], body: spec.malloc });
  } else if (!spec.withoutMalloc) {
    // malloc(size): p = heap; heap = p + size; return p
    funcs.push({
      export: "malloc",
      params: [I],
      results: [I],
      locals: [I],
      body: () => [...op.i32(HEAP_PTR_ADDR), ...op.load, ...op.set(1), ...op.i32(HEAP_PTR_ADDR), ...op.get(1), ...op.get(0), ...op.add, ...op.store, ...op.get(1)],
    });
  }
  for (const [name, cb] of Object.entries(CALLBACKS)) {
    const given = spec.callbacks?.[name];
    const setTick = name === "proxy_on_vm_start" && spec.tickPeriodMs !== undefined ? callDrop("env.proxy_set_tick_period_milliseconds", op.i32(spec.tickPeriodMs)) : undefined;
    const user = setTick === undefined ? given : given === undefined ? setTick : seq(setTick, given);
    const ret = spec.returns?.[name] ?? cb.result;
    funcs.push({
      export: name,
      params: n(cb.params),
      results: cb.result === undefined ? [] : [I],
      body: (fn) => {
        const computed = spec.computed?.[name];
        const result = cb.result === undefined ? [] : computed ? computed(fn) : op.i32(ret!);
        return [...(user ? user(fn) : []), ...result];
      },
    });
  }
  const heapInit = new Uint8Array(4);
  new DataView(heapInit.buffer).setUint32(0, HEAP_START, true);
  return buildModule({ imports, funcs, memoryPages: 2, data: [{ offset: HEAP_PTR_ADDR, bytes: heapInit }, ...(spec.data ?? [])] });
}
