// The metric host calls (proxy-wasm-cpp-host src/exports.cc define_metric ... get_metric; Envoy's
// Context::defineMetric/incrementMetric/recordMetric/getMetric in source/extensions/common/wasm/context.cc).
// StatsStore keeps the values; misuse Envoy answers with a status fails the test here (stricter).
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";
import type { StatsStore } from "./stats.js";

/** The metric host calls over `stats`. */
export function metricImports(core: HostCore, stats: StatsStore): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_define_metric: (type: number, namePtr: number, nameSize: number, idPtr: number): number => {
      const name = core.mem.string(u(namePtr), u(nameSize), "proxy_define_metric name");
      core.mem.check(u(idPtr), 4, "proxy_define_metric id");
      core.mem.u32(u(idPtr), stats.define(u(type), name), "proxy_define_metric id");
      return WasmResult.Ok;
    },
    proxy_increment_metric: (id: number, delta: bigint): number => {
      stats.increment(u(id), BigInt.asIntN(64, delta));
      return WasmResult.Ok;
    },
    proxy_record_metric: (id: number, value: bigint): number => {
      stats.record(u(id), value);
      return WasmResult.Ok;
    },
    proxy_get_metric: (id: number, ptr: number): number => {
      core.mem.u64(u(ptr), stats.get(u(id)), "proxy_get_metric");
      return WasmResult.Ok;
    },
  };
}
