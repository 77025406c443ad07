// Run by store-memory.test.ts under --expose-gc: how many evicted LLM calls the store still keeps
// alive, and how many held ones it keeps (all of them, or the check means nothing).
import { TraceStore } from "../../../control-plane/src/traces/store.js";

const gc = (globalThis as unknown as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("store-memory-child needs node --expose-gc");
const [held, more] = process.argv.slice(2).map(Number) as [number, number];
const record = (n: number) => ({
  traceId: n.toString(16).padStart(32, "0"), spanId: "cd".repeat(8), parentSpanId: "", name: "chat", kind: 3, startMs: n, endMs: n + 1, statusCode: 0, service: "",
  attributes: new Map<string, string | number | boolean | string[]>([["gen_ai.operation.name", "chat"], ["tokentrace.token_trace_id", `t${n}`]]), events: [],
});
const store = new TraceStore(held);
store.add(Array.from({ length: held }, (_, i) => record(i)));
// Newest first: the last `more` of these are the ones the next adds evict.
const refs = store.recent({ limit: held }).map((call) => new WeakRef(call));
store.add(Array.from({ length: more }, (_, i) => record(held + i)));
// A WeakRef keeps its target until the job that made it ends.
await new Promise((r) => setImmediate(r));
gc();
gc();
const alive = (list: WeakRef<object>[]): number => list.filter((r) => r.deref() !== undefined).length;
process.stdout.write(JSON.stringify({ evictedAlive: alive(refs.slice(held - more)), heldAlive: alive(refs.slice(0, held - more)), size: store.size }));
