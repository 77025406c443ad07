// One Envoy process as far as its Wasm VMs can tell: the shared data and shared queues all its VMs
// (one per worker) share, keyed by vm_id. Load several FilterVms with the same HostProcess to be
// several workers of one proxy; each FilterVm gets its own process unless given one.
import { SharedData } from "./shared-data.js";
import { SharedQueues } from "./shared-queue.js";

/** What the VMs of one proxy process share. */
export class HostProcess {
  readonly sharedData = new SharedData();
  readonly sharedQueues = new SharedQueues();
}
