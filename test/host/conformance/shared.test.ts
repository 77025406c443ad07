// Conformance: shared data and shared queues as proxy-wasm-cpp-host keeps them
// (src/shared_data.cc, src/shared_queue.cc): one store per process, partitioned by vm_id across the
// process's VMs; on_queue_ready posted to the registering VM's dispatcher for the root that
// registered. One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HostProcess, WasmResult } from "../index.js";
import { callStore, loadAt, seq } from "../support/proxy-module.js";
import { op } from "../support/wasm-writer.js";
import { i, load, NotFound, Ok, out, text, u32 } from "./support.js";

const DATA_CALLS = ["proxy_get_shared_data", "proxy_set_shared_data"];
const QUEUE_CALLS = ["proxy_register_shared_queue", "proxy_resolve_shared_queue", "proxy_enqueue_shared_queue", "proxy_dequeue_shared_queue"];
const writer = { tickPeriodMs: 1000, imports: DATA_CALLS, data: [text(1024, "k"), text(1030, "v1")], callbacks: { proxy_on_tick: callStore(100, "env.proxy_set_shared_data", i(1024), i(1), i(1030), i(2), i(0)) } };
const reader = { tickPeriodMs: 1000, imports: DATA_CALLS, data: [text(1024, "k")], callbacks: { proxy_on_tick: callStore(100, "env.proxy_get_shared_data", i(1024), i(1), i(16), i(20), i(24)) } };

test("SharedData (getGlobalSharedData): VMs of one process with the same vm_id share keys; another vm_id or another process does not", async () => {
  const proxy = new HostProcess();
  const a = await load(writer, { process: proxy, vmId: "tt" });
  const b = await load(reader, { process: proxy, vmId: "tt" });
  const otherVmId = await load(reader, { process: proxy, vmId: "other" });
  const otherProcess = await load(reader, { vmId: "tt" });
  a.tick();
  for (const vm of [b, otherVmId, otherProcess]) vm.tick();
  assert.deepEqual([u32(a, 100), u32(b, 100), u32(otherVmId, 100), u32(otherProcess, 100)], [Ok, Ok, NotFound, NotFound]);
  assert.equal(out(b, 16, 20).toString(), "v1");
});

test("SharedData::set: a CAS that no longer matches is CasMismatch; 0 always writes", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: DATA_CALLS,
    data: [text(1024, "k"), text(1030, "v")],
    callbacks: {
      proxy_on_tick: seq(
        callStore(100, "env.proxy_set_shared_data", i(1024), i(1), i(1030), i(1), i(0)),
        callStore(104, "env.proxy_get_shared_data", i(1024), i(1), i(16), i(20), i(24)),
        callStore(108, "env.proxy_set_shared_data", i(1024), i(1), i(1030), i(1), loadAt(24)),
        callStore(112, "env.proxy_set_shared_data", i(1024), i(1), i(1030), i(1), loadAt(24)),
      ),
    },
  });
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, Ok, Ok, WasmResult.CasMismatch]);
});

const storeParams = () => [...op.i32(200), ...op.get(0), ...op.store, ...op.i32(204), ...op.get(1), ...op.store];
const registrant = {
  tickPeriodMs: 1000,
  imports: QUEUE_CALLS,
  data: [text(1024, "jobs")],
  callbacks: {
    proxy_on_tick: callStore(100, "env.proxy_register_shared_queue", i(1024), i(4), i(40)),
    proxy_on_queue_ready: seq(storeParams, callStore(208, "env.proxy_dequeue_shared_queue", loadAt(204), i(16), i(20))),
  },
};
const producer = {
  tickPeriodMs: 1000,
  imports: QUEUE_CALLS,
  data: [text(1024, "jobs"), text(1030, "tt"), text(1040, "job-1")],
  callbacks: {
    proxy_on_tick: seq(
      callStore(100, "env.proxy_resolve_shared_queue", i(1030), i(2), i(1024), i(4), i(40)),
      callStore(104, "env.proxy_resolve_shared_queue", i(1030), i(0), i(1024), i(4), i(44)),
      callStore(108, "env.proxy_enqueue_shared_queue", loadAt(40), i(1040), i(5)),
    ),
    proxy_on_queue_ready: storeParams,
  },
};

test("SharedQueue::resolveQueue: a queue is found by (vm_id, name) from any VM of the process; an empty vm_id means the caller's own", async () => {
  const proxy = new HostProcess();
  const consumer = await load(registrant, { process: proxy, vmId: "tt" });
  const other = await load(producer, { process: proxy, vmId: "other" });
  consumer.tick();
  other.tick();
  assert.deepEqual([u32(other, 100), u32(other, 104), u32(other, 108)], [Ok, NotFound, Ok]);
  assert.equal(u32(other, 40), u32(consumer, 40), "the same token");
});

test("SharedQueue::enqueue: proxy_on_queue_ready is posted (not run during the enqueue) to the VM and root context that registered the queue", async () => {
  const proxy = new HostProcess();
  const consumer = await load(registrant, { process: proxy, vmId: "tt" });
  const other = await load(producer, { process: proxy, vmId: "other" });
  consumer.tick();
  other.tick();
  assert.equal(u32(consumer, 200), 0, "nothing delivered while the enqueuing call runs");
  other.runPosted();
  assert.deepEqual([u32(other, 200), u32(consumer, 200)], [0, 0], "not to the enqueuing VM");
  consumer.runPosted();
  assert.deepEqual([u32(consumer, 200), u32(consumer, 204), u32(consumer, 208)], [1, u32(consumer, 40), Ok], "root 1 of the registering VM, with the token");
  assert.equal(out(consumer, 16, 20).toString(), "job-1");
});

test("ContextBase::registerSharedQueue: a stream context registers the queue for its root context, which gets proxy_on_queue_ready", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: QUEUE_CALLS,
    data: [text(1024, "jobs"), text(1040, "x")],
    callbacks: {
      proxy_on_request_headers: callStore(100, "env.proxy_register_shared_queue", i(1024), i(4), i(40)),
      proxy_on_tick: callStore(104, "env.proxy_enqueue_shared_queue", loadAt(40), i(1040), i(1)),
      proxy_on_queue_ready: storeParams,
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  s.end();
  vm.tick();
  vm.runPosted();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 200), u32(vm, 204)], [Ok, Ok, 1, u32(vm, 40)]);
});
