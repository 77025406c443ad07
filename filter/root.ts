// The root context: owns the active configuration and the VM's stats. A new configuration is
// parsed and validated completely before it replaces the old one, so a rejected update leaves the
// last good configuration in force.
import { Context, RootContext } from "@solo-io/proxy-runtime/assembly";
import { ActiveConfig, parseConfig } from "./config";
import * as host from "./host";
import { ErrorReason } from "./metrics";
import { SpanExporter } from "./spans";
import { Stats } from "./stats";
import { TokentraceStream } from "./stream";

export class TokentraceRoot extends RootContext {
  active: ActiveConfig = new ActiveConfig();
  stats: Stats | null = null;
  exporter: SpanExporter | null = null;

  createContext(context_id: u32): Context {
    return new TokentraceStream(context_id, this, this.statsOrInit(), this.active, this.exporterOrInit());
  }

  exporterOrInit(): SpanExporter {
    let exporter = this.exporter;
    if (exporter === null) {
      exporter = new SpanExporter(this.statsOrInit());
      this.exporter = exporter;
    }
    return exporter;
  }

  onTick(): void {
    const spans = this.active.config.spans;
    if (spans !== null) this.exporterOrInit().flush(spans);
    this.statsOrInit().flushHostFailures();
  }

  // Replaces the SDK's callback registry (closures do not exist in AssemblyScript): the exporter
  // owns the only HTTP calls this filter makes.
  onHttpCallResponse(token: u32, headers: u32, body_size: u32, trailers: u32): void {
    this.exporterOrInit().onResponse(token, headers);
    this.statsOrInit().flushHostFailures();
  }

  statsOrInit(): Stats {
    let stats = this.stats;
    if (stats === null) {
      stats = new Stats(this.active.config.maxRoutes, this.active.config.maxModels);
      this.stats = stats;
    }
    return stats;
  }

  // Overrides the SDK's onConfigure, which passes a size where a pointer belongs and throws on an
  // empty configuration (REFERENCE section 1).
  onConfigure(configuration_size: u32): bool {
    const stats = this.statsOrInit();
    const text = host.readPluginConfiguration(configuration_size);
    if (text === null) {
      stats.error(ErrorReason.ConfigRejected);
      host.log(host.LogLevel.Error, "tokentrace: could not read the plugin configuration; keeping the previous one");
      return false;
    }
    const result = parseConfig(text);
    const config = result.config;
    if (config === null) {
      stats.error(ErrorReason.ConfigRejected);
      host.log(host.LogLevel.Error, "tokentrace: configuration rejected, keeping the previous one: " + result.error);
      return false;
    }
    this.active.config = config;
    const spans = config.spans;
    // Ticks flush partial span batches; without export there is nothing to tick for.
    host.setTickPeriodMs(spans === null ? 0 : <u32>spans.flushIntervalMs);
    stats.maxRoutes = config.maxRoutes;
    stats.maxModels = config.maxModels;
    host.log(host.LogLevel.Info, "tokentrace: configuration applied");
    // Parsing left a JSON tree behind; nothing below uses a local after this point.
    __collect();
    return true;
  }
}
