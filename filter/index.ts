// Wiring only: the proxy-wasm ABI exports and the root context registration.
export * from "@solo-io/proxy-runtime/assembly/proxy";
import { RootContext, Context, registerRootContext } from "@solo-io/proxy-runtime/assembly";

class TokentraceRoot extends RootContext {
  createContext(context_id: u32): Context {
    return new Context(context_id, this);
  }
  onConfigure(configuration_size: u32): bool {
    return true;
  }
}

registerRootContext((context_id: u32) => new TokentraceRoot(context_id) as RootContext, "tokentrace");
