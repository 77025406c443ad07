// Baseline for the per-request benchmark: the same SDK, compiler and options as the real filter,
// with every callback left at the SDK's Continue default.
export * from "@solo-io/proxy-runtime/assembly/proxy";
import { RootContext, Context, registerRootContext } from "@solo-io/proxy-runtime/assembly";

class NoopRoot extends RootContext {
  createContext(context_id: u32): Context {
    return new Context(context_id, this);
  }
  // The SDK's onConfigure passes a size where a pointer belongs; the no-op ignores its config.
  onConfigure(configuration_size: u32): bool {
    return true;
  }
}

registerRootContext((context_id: u32) => new NoopRoot(context_id) as RootContext, "tokentrace");
