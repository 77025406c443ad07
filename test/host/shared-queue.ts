// Shared queues as proxy-wasm-cpp-host keeps them (src/shared_queue.cc, getGlobalSharedQueue): one
// registry for the process, queues named by (vm_id, name); registering again keeps the data and
// moves delivery to the latest registrant; an enqueue posts proxy_on_queue_ready to the dispatcher of
// the VM that registered, for its root context, to run later (call_on_thread).
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";

/** Posts the queue-ready callback to the registering VM (its dispatcher runs it later). */
export type QueueReadyPoster = (rootContextId: number, token: number) => void;

interface Queue {
  items: Buffer[];
  rootContextId: number;
  post: QueueReadyPoster;
}

/** The process-wide registry (one per HostProcess). */
export class SharedQueues {
  private readonly tokens = new Map<string, number>();
  private readonly queues = new Map<number, Queue>();
  private nextToken = 1;

  private static key(vmId: string, name: string): string {
    return `${vmId}\0${name}`;
  }

  /** SharedQueue::registerQueue: the queue's token; the registrant's root context receives on_queue_ready. */
  register(vmId: string, name: string, rootContextId: number, post: QueueReadyPoster): number {
    const key = SharedQueues.key(vmId, name);
    let token = this.tokens.get(key);
    if (token === undefined) {
      do token = this.nextToken++ >>> 0;
      while (token === 0 || this.queues.has(token));
      this.tokens.set(key, token);
      this.queues.set(token, { items: [], rootContextId, post });
    }
    const q = this.queues.get(token)!;
    q.rootContextId = rootContextId;
    q.post = post;
    return token;
  }

  /** SharedQueue::resolveQueue: 0 when there is no such queue. */
  resolve(vmId: string, name: string): number {
    return this.tokens.get(SharedQueues.key(vmId, name)) ?? 0;
  }

  /** SharedQueue::dequeue. */
  dequeue(token: number): Buffer | number {
    const q = this.queues.get(token);
    if (q === undefined) return WasmResult.NotFound;
    return q.items.shift() ?? WasmResult.Empty;
  }

  /** SharedQueue::enqueue: the data is kept, and on_queue_ready posted to the registrant. */
  enqueue(token: number, data: Buffer): number {
    const q = this.queues.get(token);
    if (q === undefined) return WasmResult.NotFound;
    q.items.push(data);
    q.post(q.rootContextId, token);
    return WasmResult.Ok;
  }
}

/** The shared-queue host calls for a VM with `vmId`; `post` delivers to this VM. */
export function sharedQueueImports(core: HostCore, queues: SharedQueues, vmId: string, post: QueueReadyPoster): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    // ContextBase::registerSharedQueue: a stream context registers for its root (parent) context.
    proxy_register_shared_queue: (namePtr: number, nameSize: number, tokenPtr: number): number => {
      const name = core.mem.string(u(namePtr), u(nameSize), "proxy_register_shared_queue name");
      const root = core.rootOf(core.contextId());
      const token = queues.register(vmId, name, root?.id ?? core.contextId(), post);
      core.mem.u32(u(tokenPtr), token, "proxy_register_shared_queue token");
      return WasmResult.Ok;
    },
    // ContextBase::lookupSharedQueue: an empty vm_id means this VM's.
    proxy_resolve_shared_queue: (vmPtr: number, vmSize: number, namePtr: number, nameSize: number, tokenPtr: number): number => {
      const targetVm = core.mem.string(u(vmPtr), u(vmSize), "proxy_resolve_shared_queue vm_id");
      const name = core.mem.string(u(namePtr), u(nameSize), "proxy_resolve_shared_queue name");
      const token = queues.resolve(targetVm === "" ? vmId : targetVm, name);
      if (token === 0) return WasmResult.NotFound;
      core.mem.u32(u(tokenPtr), token, "proxy_resolve_shared_queue token");
      return WasmResult.Ok;
    },
    proxy_dequeue_shared_queue: (token: number, dataPtrPtr: number, dataSizePtr: number): number => {
      const item = queues.dequeue(u(token));
      if (typeof item === "number") return item;
      return core.copyOut(item, u(dataPtrPtr), u(dataSizePtr), "proxy_dequeue_shared_queue");
    },
    proxy_enqueue_shared_queue: (token: number, dataPtr: number, dataSize: number): number => {
      const data = Buffer.from(core.mem.bytes(u(dataPtr), u(dataSize), "proxy_enqueue_shared_queue data"));
      return queues.enqueue(u(token), data);
    },
  };
}
