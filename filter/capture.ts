// The one seam through which the request path reaches content capture. The default module
// (filter/index.ts) never sets it, so it carries no capture, redaction or HMAC code: a policy that
// turns capture on there captures nothing and counts `content_unavailable`. The content module
// (filter/index-content.ts, build/filter-content.wasm) installs its engine at start-up.
import { Config, ContentConfig } from "./config/config";
import { CaptureSink } from "./content/sink";
import { Stats } from "./telemetry/stats";

/** Content capture, redaction and the pseudonym key, as the root and the streams use them. */
export abstract class ContentEngine {
  /** A sink for one sampled LLM call whose policy and route capture content. */
  abstract startCapture(content: ContentConfig): CaptureSink;
  /** Counts what exporting a sink's content did (after its span was encoded). */
  abstract report(sink: CaptureSink, stats: Stats): void;
  /** A tick: fetches the pseudonym key when due. `config` is in force; `local` is pluginConfig's (its policySource). */
  abstract tick(config: Config, local: Config, stats: Stats): void;
  /** An HTTP call response; false when the call is not the engine's. */
  abstract onHttpCallResponse(token: u32, headers: u32, bodySize: u32, stats: Stats): bool;
}

let installed: ContentEngine | null = null;

/** Called once by the content module's entry, before any context exists. */
export function installContentEngine(engine: ContentEngine): void {
  installed = engine;
}

/** The engine, or null in the default module. */
export function contentEngine(): ContentEngine | null {
  return installed;
}
