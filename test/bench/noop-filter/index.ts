// Baseline for the per-request benchmarks: the same SDK, compiler, options and garbage-collection
// policy as the real filter, with every callback left at the SDK's Continue default.
export * from "@solo-io/proxy-runtime/assembly/proxy";
import { RootContext, Context, registerRootContext } from "@solo-io/proxy-runtime/assembly";

const COLLECT_EVERY_STREAMS: i32 = 128;
let deletedSinceCollect: i32 = 0;

class NoopStream extends Context {
  // The same collection policy as the filter (filter/stream.ts): the minimal runtime frees only
  // when asked, and a baseline that never freed would not be the same program minus the work.
  onDelete(): void {
    if (++deletedSinceCollect >= COLLECT_EVERY_STREAMS) {
      deletedSinceCollect = 0;
      __collect();
    }
  }
}

class NoopRoot extends RootContext {
  createContext(context_id: u32): Context {
    return new NoopStream(context_id, this);
  }
  // The SDK's onConfigure passes a size where a pointer belongs; the no-op ignores its config.
  onConfigure(configuration_size: u32): bool {
    return true;
  }
}

registerRootContext((context_id: u32) => new NoopRoot(context_id) as RootContext, "tokentrace");
