// Shared set-up of the conformance suite: hand-built modules that make one host call at a known
// moment and store its status (and out-parameters) at fixed addresses, read back after the stream.
import { FilterVm, ManualClock, WasmResult, type FilterVmOptions } from "../index.js";
import { proxyModule, type ProxyModuleSpec } from "../support/proxy-module.js";
import { op } from "../support/wasm-writer.js";

export const i = op.i32;

/** Loads a hand-built module with a manual clock. */
export function load(spec: ProxyModuleSpec, extra: Partial<FilterVmOptions> = {}): Promise<FilterVm> {
  return FilterVm.load({ wasm: proxyModule(spec), clock: new ManualClock(), ...extra });
}

/** The u32 at `addr`. */
export const u32 = (vm: FilterVm, addr: number): number => vm.readMemory(addr, 4).readUInt32LE(0);

/** The bytes an out-parameter pair (pointer at ptrAddr, size at sizeAddr) points at. */
export const out = (vm: FilterVm, ptrAddr: number, sizeAddr: number): Buffer => vm.readMemory(u32(vm, ptrAddr), u32(vm, sizeAddr));

/** A string placed in the module's data at `offset`. */
export const text = (offset: number, s: string | Uint8Array): { offset: number; bytes: string | Uint8Array } => ({ offset, bytes: s });

/** Status names, for messages. */
export const { Ok, NotFound, BadArgument } = WasmResult;

/** `i32.const base + 4 * eos`: an address chosen by the body/headers callback's end_of_stream argument (local 2). */
export const byEndOfStream = (base: number): number[] => [...op.i32(base), ...op.get(2), ...op.i32(4), ...op.mul, ...op.add];
