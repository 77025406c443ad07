// Shared data as proxy-wasm-cpp-host keeps it (src/shared_data.cc, getGlobalSharedData): one store
// for the whole process, partitioned by vm_id, so every VM (worker) with the same vm_id sees the
// same keys; each write gets the next CAS value.
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";

/** The process-wide store (one per HostProcess). */
export class SharedData {
  private readonly byVmId = new Map<string, Map<string, { value: Buffer; cas: number }>>();
  private cas = 1;

  // SharedData::nextCas: 0 is never a CAS value.
  private nextCas(): number {
    const result = this.cas;
    this.cas = (this.cas + 1) >>> 0;
    if (this.cas === 0) this.cas = 1;
    return result;
  }

  /** SharedData::get. */
  get(vmId: string, key: string): { value: Buffer; cas: number } | undefined {
    return this.byVmId.get(vmId)?.get(key);
  }

  /** SharedData::set: a non-zero CAS must match an existing value's; a new key takes any CAS. */
  set(vmId: string, key: string, value: Buffer, cas: number): number {
    let map = this.byVmId.get(vmId);
    if (map === undefined) this.byVmId.set(vmId, (map = new Map()));
    const existing = map.get(key);
    if (existing !== undefined && cas !== 0 && cas !== existing.cas) return WasmResult.CasMismatch;
    map.set(key, { value, cas: this.nextCas() });
    return WasmResult.Ok;
  }
}

/** proxy_get_shared_data / proxy_set_shared_data for a VM with `vmId`. */
export function sharedDataImports(core: HostCore, store: SharedData, vmId: string): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_get_shared_data: (keyPtr: number, keySize: number, valuePtrPtr: number, valueSizePtr: number, casPtr: number): number => {
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_get_shared_data key");
      const entry = store.get(vmId, key);
      if (entry === undefined) return WasmResult.NotFound;
      const status = core.copyOut(entry.value, u(valuePtrPtr), u(valueSizePtr), "proxy_get_shared_data");
      if (status !== WasmResult.Ok) return status;
      core.mem.u32(u(casPtr), entry.cas, "proxy_get_shared_data cas");
      return WasmResult.Ok;
    },
    proxy_set_shared_data: (keyPtr: number, keySize: number, valuePtr: number, valueSize: number, cas: number): number => {
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_set_shared_data key");
      const value = Buffer.from(core.mem.bytes(u(valuePtr), u(valueSize), "proxy_set_shared_data value"));
      return store.set(vmId, key, value, u(cas));
    },
  };
}
