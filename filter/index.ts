// Wiring only: the proxy-wasm ABI exports and the root context registration.
// The root id must equal the WasmPlugin's pluginName (REFERENCE section 1).
export * from "@solo-io/proxy-runtime/assembly/exports";
export { malloc, free } from "./host/host-memory";
import { RootContext, registerRootContext } from "@solo-io/proxy-runtime/assembly";
import { TokentraceRoot } from "./root";

const PLUGIN_NAME = "tokentrace";

registerRootContext((context_id: u32) => new TokentraceRoot(context_id) as RootContext, PLUGIN_NAME);
