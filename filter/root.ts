// The root context: owns the active configuration and the VM's stats. A new configuration is
// parsed and validated completely before it replaces the old one, so a rejected update leaves the
// last good configuration in force.
import { Context, RootContext } from "@solo-io/proxy-runtime/assembly";
import { ActiveConfig, parseConfig } from "./config";
import * as host from "./host";
import { ErrorReason } from "./metrics";
import { Stats } from "./stats";
import { TokentraceStream } from "./stream";

export class TokentraceRoot extends RootContext {
  active: ActiveConfig = new ActiveConfig();
  stats: Stats | null = null;

  createContext(context_id: u32): Context {
    return new TokentraceStream(context_id, this, this.statsOrInit(), this.active);
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
    stats.maxRoutes = config.maxRoutes;
    stats.maxModels = config.maxModels;
    host.log(host.LogLevel.Info, "tokentrace: configuration applied");
    // Parsing left a JSON tree behind; nothing below uses a local after this point.
    __collect();
    return true;
  }
}
