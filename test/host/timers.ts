// Ticks as Envoy runs them: proxy_set_tick_period_milliseconds sets the period of the calling
// context's root (cpp-host ContextBase::setTimerPeriod -> Envoy Wasm::setTimerPeriod, one timer per
// root context), and Wasm::tickHandler calls proxy_on_tick on that root each period; 0 stops it.
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";

/** proxy_set_tick_period_milliseconds; `changed` hears (root context id, period). */
export function timerImports(core: HostCore, changed: (rootId: number, ms: number) => void): Record<string, (...args: never[]) => unknown> {
  return {
    proxy_set_tick_period_milliseconds: (ms: number): number => {
      const root = core.rootOf(core.contextId());
      if (root === undefined) return WasmResult.Ok;
      root.tickMs = ms >>> 0;
      changed(root.id, root.tickMs);
      return WasmResult.Ok;
    },
  };
}
