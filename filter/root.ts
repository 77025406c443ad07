// The root context: owns the configuration in force, the VM's stats, the span exporter and the
// policy poller. A new configuration (from proxy_on_configure, or pulled from the control plane)
// is parsed and validated completely before it replaces the old one, so a rejected update leaves
// the last good configuration in force.
import { Context, RootContext } from "@solo-io/proxy-runtime/assembly";
import { contentEngine } from "./capture";
import { ActiveConfig, Config, parseConfig } from "./config/config";
import * as host from "./host/host";
import { ErrorReason } from "./telemetry/metrics";
import { PollOutcome, PolicyPoller } from "./config/policy-source";
import { SpanExporter } from "./telemetry/spans";
import { Stats } from "./telemetry/stats";
import { TailKeep } from "./telemetry/tail-keep";
import { noteNowNs } from "./telemetry/recent-quantile";
import { TokentraceStream } from "./stream";

/** The tick period while pseudonyms need a key: its first fetch and retries wait at most this long. */
const KEY_TICK_MS: i32 = 1000;

export class TokentraceRoot extends RootContext {
  active: ActiveConfig = new ActiveConfig();
  /** The configuration from pluginConfig; with a policySource, pulled policies replace all but that. */
  private local: Config = new Config();
  private stats: Stats | null = null;
  private exporter: SpanExporter | null = null;
  private tailKeep: TailKeep | null = null;
  private poller: PolicyPoller = new PolicyPoller();

  createContext(context_id: u32): Context {
    return new TokentraceStream(context_id, this, this.statsOrInit(), this.active, this.exporterOrInit(), this.tailKeepOrInit());
  }

  private tailKeepOrInit(): TailKeep {
    let keep = this.tailKeep;
    if (keep === null) {
      keep = new TailKeep(this.statsOrInit());
      this.tailKeep = keep;
    }
    return keep;
  }

  private exporterOrInit(): SpanExporter {
    let exporter = this.exporter;
    if (exporter === null) {
      exporter = new SpanExporter(this.statsOrInit());
      this.exporter = exporter;
    }
    return exporter;
  }

  private statsOrInit(): Stats {
    let stats = this.stats;
    if (stats === null) {
      stats = new Stats(this.active.config.maxRoutes, this.active.config.maxModels);
      this.stats = stats;
    }
    return stats;
  }

  onTick(): void {
    this.statsOrInit().flushCounters();
    const source = this.local.policySource;
    if (source !== null) this.poller.maybePoll(source);
    const spans = this.active.config.spans;
    if (spans !== null) {
      const keep = this.tailKeepOrInit();
      const exporter = this.exporterOrInit();
      // Tail keep decides when a batch is due: its spans go in that batch, and the reservoir picks
      // among every span that ended since the last one.
      const due = exporter.flushDue();
      // One clock read serves the tick: the recent windows and the budget's refill.
      const nowNs: i64 = spans.keepRecent !== null || (due && (keep.pending > 0 || keep.owesHead)) ? <i64>host.nowNs() : 0;
      if (spans.keepRecent !== null) noteNowNs(nowNs);
      if (due) {
        keep.decide(spans, exporter, nowNs);
        exporter.flush(spans);
      }
    }
    const engine = contentEngine();
    if (engine !== null) engine.tick(this.active.config, this.local, this.statsOrInit());
    this.statsOrInit().flushHostFailures();
  }

  // Replaces the SDK's callback registry (AssemblyScript has no closures): the poller and the
  // exporter own the only HTTP calls this filter makes, and each knows its tokens.
  onHttpCallResponse(token: u32, headers: u32, body_size: u32, trailers: u32): void {
    const stats = this.statsOrInit();
    const outcome = this.poller.onResponse(token, headers, body_size);
    if (outcome == PollOutcome.NotOurs) {
      const engine = contentEngine();
      if (engine === null || !engine.onHttpCallResponse(token, headers, body_size, stats)) this.exporterOrInit().onResponse(token, headers);
    } else if (outcome == PollOutcome.Updated) {
      const pulled = this.poller.pulled!;
      pulled.policySource = this.local.policySource;
      this.apply(pulled);
      stats.count(stats.policyUpdates, 1);
      host.log(host.LogLevel.Info, "tokentrace: policy version " + this.poller.version + " applied");
    } else if (outcome == PollOutcome.Failed) {
      stats.count(stats.policyPollFailures, 1);
      host.log(host.LogLevel.Warn, "tokentrace: policy poll failed, keeping the policy in force: " + this.poller.failure);
    }
    stats.flushHostFailures();
  }

  // The VM is going away: what the counters hold is sent now.
  onDone(): bool {
    this.statsOrInit().flushCounters();
    return super.onDone();
  }

  // Overrides the SDK's onConfigure, which passes a size where a pointer belongs and throws on an
  // empty configuration (REFERENCE section 1).
  onConfigure(configuration_size: u32): bool {
    const stats = this.statsOrInit();
    const text = host.readPluginConfiguration(configuration_size);
    if (text === null) {
      stats.error(ErrorReason.ConfigRejected);
      host.log(host.LogLevel.Error, "tokentrace: unreadable plugin configuration; previous one kept");
      return false;
    }
    const result = parseConfig(text);
    const config = result.config;
    if (config === null) {
      stats.error(ErrorReason.ConfigRejected);
      host.log(host.LogLevel.Error, "tokentrace: configuration rejected, previous one kept: " + result.error);
      return false;
    }
    this.local = config;
    // A policy already pulled stays in force until the next poll (due at once) answers.
    const pulled = this.poller.pulled;
    if (config.policySource !== null && pulled !== null) {
      pulled.policySource = config.policySource;
      this.apply(pulled);
    } else {
      this.apply(config);
    }
    this.poller.reset();
    host.log(host.LogLevel.Info, "tokentrace: configuration applied");
    // Parsing left a JSON tree behind; nothing below uses a local after this point.
    host.collectNow();
    return true;
  }

  private apply(config: Config): void {
    this.active.config = config;
    const stats = this.statsOrInit();
    stats.maxRoutes = config.maxRoutes;
    stats.maxModels = config.maxModels;
    stats.maxDestinationPods = config.maxDestinationPods;
    stats.setBatching(config.statsFlushIntervalMs > 0);
    // Ticks flush counters and partial span batches and drive polls: the shortest interval wins.
    let tickMs: i32 = config.statsFlushIntervalMs;
    const spans = config.spans;
    if (spans !== null && (tickMs == 0 || spans.flushIntervalMs < tickMs)) tickMs = spans.flushIntervalMs;
    const source = config.policySource;
    if (source !== null && (tickMs == 0 || source.intervalMs < tickMs)) tickMs = source.intervalMs;
    // The pseudonym key is fetched on ticks, and retried after a failure within a second.
    const content = spans !== null ? spans.content : null;
    if (content !== null && content.pseudonyms && contentEngine() !== null && (tickMs == 0 || KEY_TICK_MS < tickMs)) tickMs = KEY_TICK_MS;
    host.setTickPeriodMs(<u32>tickMs);
    // A partial batch of spans waits for spans.flushIntervalMs, not for whichever interval ticks.
    if (spans !== null) this.exporterOrInit().partialEveryTicks = tickMs > 0 ? <i32>Math.max(1, Math.round(<f64>spans.flushIntervalMs / <f64>tickMs)) : 1;
  }
}
