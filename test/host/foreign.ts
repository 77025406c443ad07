// proxy_call_foreign_function (cpp-host src/exports.cc call_foreign_function) with the functions
// Envoy registers (source/extensions/common/wasm/foreign.cc): compress and uncompress (zlib's
// compress/uncompress format) run here; set_envoy_filter_state, declare_property and the CEL
// expression functions are Envoy's but not emulated, so calling them fails the test; any other name
// is NotFound.
import { deflateSync, inflateSync } from "node:zlib";
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";
import { AbiViolation } from "./errors.js";

const NOT_EMULATED = new Set(["set_envoy_filter_state", "declare_property", "expr_create", "expr_evaluate", "expr_delete"]);

function run(name: string, args: Buffer): Buffer | number {
  if (name === "compress") return deflateSync(args);
  if (name === "uncompress") {
    try {
      return inflateSync(args);
    } catch {
      return WasmResult.SerializationFailure;
    }
  }
  if (NOT_EMULATED.has(name)) throw new AbiViolation(`proxy_call_foreign_function("${name}"): Envoy provides it, this host does not emulate it`);
  return WasmResult.NotFound;
}

/** The foreign-function host call. */
export function foreignImports(core: HostCore): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_call_foreign_function: (namePtr: number, nameSize: number, argsPtr: number, argsSize: number, resultsPtr: number, resultsSizePtr: number): number => {
      const name = core.mem.string(u(namePtr), u(nameSize), "proxy_call_foreign_function name");
      const args = Buffer.from(core.mem.bytes(u(argsPtr), u(argsSize), "proxy_call_foreign_function arguments"));
      const result = run(name, args);
      if (typeof result === "number") return result;
      // The results go to module memory only when the caller asked for them (results != 0).
      if (u(resultsPtr) !== 0) {
        const address = core.alloc(result.length, "proxy_call_foreign_function results");
        if (address !== 0) result.copy(core.mem.view(), address);
        core.mem.u32(u(resultsPtr), address, "proxy_call_foreign_function results");
      }
      if (u(resultsSizePtr) !== 0) core.mem.u32(u(resultsSizePtr), result.length, "proxy_call_foreign_function results size");
      return WasmResult.Ok;
    },
  };
}
