// Content capture's engine, installed by the content module (filter/index-content.ts) into the seam
// the request path reaches it by (capture.ts): a sink per sampled call whose policy and route
// capture content, one redactor per VM, and the pseudonym key, fetched from the control plane on
// ticks (content/key.ts) and switched to a new version without a restart.
import { ContentEngine } from "./capture";
import { Config, ContentConfig } from "./config/config";
import { ContentCapture, DROPPED_BASE, FALLBACK_BASE, Fallback } from "./content/content";
import { KeyOutcome, KeyPoller, KeyState } from "./content/key";
import { Redactor, REDACTED_NAMES } from "./content/redact";
import { CaptureSink, Dropped } from "./content/sink";
import * as host from "./host/host";
import { CONTENT_DROPPED, PSEUDONYM_FALLBACKS } from "./telemetry/metrics";
import { Stats } from "./telemetry/stats";

export class CaptureEngine extends ContentEngine {
  private redactor: Redactor = new Redactor();
  private key: KeyPoller = new KeyPoller();
  /** The refresh interval of the policy in force, for retries after a failed fetch. */
  private refreshMs: i32 = 10000;
  /** What the log last said of the key, so a failing fetch is logged when it starts failing, not on every retry. */
  private logged: string = "";

  startCapture(content: ContentConfig): CaptureSink {
    return new ContentCapture(content.maxBytes, content.pseudonyms ? this.key : null, this.redactor);
  }

  report(sink: CaptureSink, stats: Stats): void {
    const counts = changetype<ContentCapture>(sink).counts;
    stats.contentExported(counts, REDACTED_NAMES);
    for (let i = 0; i < Dropped.COUNT; i++) {
      const n = unchecked(counts[DROPPED_BASE + i]);
      if (n > 0) stats.contentError(unchecked(CONTENT_DROPPED[i]), n);
    }
    for (let i = 0; i < Fallback.COUNT; i++) {
      if (unchecked(counts[FALLBACK_BASE + i]) > 0) stats.contentError(unchecked(PSEUDONYM_FALLBACKS[i]));
    }
  }

  tick(config: Config, local: Config, stats: Stats): void {
    const spans = config.spans;
    const content = spans !== null ? spans.content : null;
    const key = this.key;
    if (content === null || !content.pseudonyms) {
      if (key.state == KeyState.Held) host.log(host.LogLevel.Info, "tokentrace: pseudonyms off, the pseudonym key is dropped");
      key.clear();
      this.logged = "";
      return;
    }
    this.refreshMs = content.keyRefreshMs;
    const ks = content.keySource;
    if (ks !== null) {
      key.maybeFetch(ks.cluster, ks.authority, ks.workload, ks.tokenEnv, ks.timeoutMs, content.keyRefreshMs);
      return;
    }
    const ps = local.policySource;
    if (ps !== null) {
      key.maybeFetch(ps.cluster, ps.authority, ps.workload, "", ps.timeoutMs, content.keyRefreshMs);
      return;
    }
    this.note("tokentrace: pseudonyms are on but there is no spans.content.pseudonyms.keySource nor a policySource to fetch the key from: typed placeholders");
  }

  onHttpCallResponse(token: u32, headers: u32, bodySize: u32, stats: Stats): bool {
    const key = this.key;
    const outcome = key.onResponse(token, headers, bodySize, this.refreshMs);
    if (outcome == KeyOutcome.NotOurs) return false;
    if (outcome == KeyOutcome.Updated) {
      stats.contentKeyUpdated();
      host.log(host.LogLevel.Info, "tokentrace: pseudonym key version " + key.version + " in force");
      this.logged = "";
    } else if (outcome == KeyOutcome.Failed) {
      this.note("tokentrace: pseudonym key unavailable, typed placeholders until it is fetched: " + key.failure);
    }
    return true;
  }

  /** Logs a warning once until something else is said. */
  private note(message: string): void {
    if (message == this.logged) return;
    this.logged = message;
    host.log(host.LogLevel.Warn, message);
  }
}
