// The configuration loader: defaults, YAML file by flag or env, env overrides, and start-up
// errors that name the key and the value.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, loadConfig } from "../../control-plane/src/config.js";

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tt-config-")), "config.yaml");
  writeFileSync(path, text);
  return path;
}

describe("control-plane config", () => {
  it("uses the defaults without a file: embedded mode on 127.0.0.1", () => {
    const result = loadConfig([], {});
    assert.deepEqual(result, { ok: true, config: defaultConfig, source: "defaults" });
    assert.equal(defaultConfig.listen.host, "127.0.0.1");
    assert.equal(defaultConfig.store.mode, "embedded");
  });

  it("parses the shipped example to exactly the defaults", () => {
    const result = loadConfig(["--config", new URL("../../control-plane/config.example.yaml", import.meta.url).pathname], {});
    assert.equal(result.ok, true);
    assert.deepEqual(result.ok && result.config, defaultConfig);
  });

  it("reads the file from --config, --config= or TOKENTRACE_CONFIG, and lets env override it", () => {
    const path = file("listen:\n  port: 9000\nstore:\n  mode: kubernetes\n");
    for (const [argv, env] of [[["--config", path], {}], [[`--config=${path}`], {}], [[], { TOKENTRACE_CONFIG: path }]] as const) {
      const result = loadConfig(argv, env);
      assert.equal(result.ok && result.config.listen.port, 9000);
      assert.equal(result.ok && result.config.store.mode, "kubernetes");
      assert.equal(result.ok && result.source, path);
    }
    const overridden = loadConfig(["--config", path], { TOKENTRACE_LISTEN_PORT: "9100", TOKENTRACE_ADAPTIVE_ENABLED: "false", TOKENTRACE_API_TOKENS: "a:0123456789abcdef" });
    assert.equal(overridden.ok, true);
    if (overridden.ok) {
      assert.equal(overridden.config.listen.port, 9100);
      assert.equal(overridden.config.adaptive.enabled, false);
      assert.equal(overridden.config.api.tokens, "a:0123456789abcdef");
      assert.equal(overridden.config.store.mode, "kubernetes");
    }
  });

  it("reports every invalid key with its value", () => {
    const path = file([
      "listen:",
      "  port: 70000",
      "  hots: x",
      "store:",
      "  mode: etcd",
      "kubernetes:",
      "  wasmPlugin:",
      "    sha256: abc",
      "  backoff:",
      "    initialMs: 1000",
      "    maxMs: 10",
      "",
    ].join("\n"));
    const result = loadConfig(["--config", path], { TOKENTRACE_SHUTDOWN_GRACE_MS: "soon" });
    assert.deepEqual(result, {
      ok: false,
      errors: [
        'shutdownGraceMs (from TOKENTRACE_SHUTDOWN_GRACE_MS): must be an integer, got "soon"',
        "listen.hots: unknown key",
        "listen.port: must be <= 65535, got 70000",
        'store.mode: must be one of "embedded", "kubernetes", got "etcd"',
        'kubernetes.wasmPlugin.sha256: must match pattern "^$|^[a-f0-9]{64}$", got "abc"',
      ],
    });
    const election = loadConfig(["--config", file("kubernetes:\n  leaderElection:\n    leaseDurationSeconds: 10\n    renewDeadlineSeconds: 10\n")], {});
    assert.deepEqual(election, { ok: false, errors: ["kubernetes.leaderElection: leaseDuration must be greater than renewDeadline (leaseDurationSeconds 10, renewDeadlineSeconds 10, retryPeriodSeconds 2)"] });
    const backoff = loadConfig(["--config", file("kubernetes:\n  backoff:\n    initialMs: 1000\n    maxMs: 10\n")], {});
    assert.deepEqual(backoff, { ok: false, errors: ["kubernetes.backoff.maxMs: must be >= kubernetes.backoff.initialMs (1000), got 10"] });
  });

  it("validates the pipeline section with the pipeline's own validator, keys prefixed pipeline.", () => {
    const path = file("pipeline:\n  enabled: true\n  scrape:\n    intervalMs: 50\n    static:\n      - { url: 'ftp://x', kind: envoy }\n");
    assert.deepEqual(loadConfig(["--config", path], {}), {
      ok: false,
      errors: [
        "pipeline.scrape.intervalMs: must be an integer >= 100, got 50",
        "pipeline.scrape.timeoutMs: must not exceed scrape.intervalMs (50), got 10000",
        'pipeline.scrape.static[0].url: must be an http(s) URL, got "ftp://x"',
      ],
    });
    assert.deepEqual(loadConfig(["--config", file("pipeline:\n  enabled: true\n  scrap: {}\n")], {}), { ok: false, errors: ["pipeline.scrap: unknown key"] });
    // A wrongly shaped value is named by the pipeline's validator like any other.
    const shape = loadConfig(["--config", file("pipeline:\n  enabled: true\n  scrape:\n    static: 3\n")], {});
    assert.deepEqual(shape, { ok: false, errors: ["pipeline.scrape.static: must be a list, got 3"] });
    const ok = loadConfig([], { TOKENTRACE_PIPELINE_ENABLED: "true" });
    assert.equal(ok.ok && ok.config.pipeline.enabled, true);
  });

  it("refuses a running pipeline with Kubernetes discovery and no sharding (no replica can tell it is alone); sharding, or the pipeline off, loads", () => {
    const discovery = "pipeline:\n  enabled: true\n  scrape:\n    kubernetes:\n      enabled: true\n";
    const refused = loadConfig(["--config", file(discovery)], {});
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? "" : refused.errors.join("\n"), /^pipeline\.sharding\.enabled: must be true when scrape\.kubernetes\.enabled is true: .*once per replica \(double counted by any sum\(\)\)/);
    assert.equal(loadConfig(["--config", file(`${discovery}  sharding:\n    enabled: true\n`)], {}).ok, true);
    const off = loadConfig(["--config", file(discovery.replace("enabled: true", "enabled: false"))], {});
    assert.equal(off.ok, true, "a pipeline that does not run scrapes nothing twice");
    // Static targets only: nothing is discovered, so nothing is refused.
    assert.equal(loadConfig(["--config", file("pipeline:\n  enabled: true\n")], {}).ok, true);
    // The identity and namespace of a member come from the environment (the Downward API).
    const named = loadConfig(["--config", file(`${discovery}  sharding:\n    enabled: true\n`)], { TOKENTRACE_SHARDING_IDENTITY: "cp-7d9f-x2", TOKENTRACE_SHARDING_NAMESPACE: "observability" });
    assert.deepEqual(named.ok && named.config.pipeline.sharding, { enabled: true, identity: "cp-7d9f-x2", namespace: "observability" });
  });

  it("reports an unreadable or malformed file by path", () => {
    assert.deepEqual(loadConfig(["--config", "/nonexistent/tt.yaml"], {}), { ok: false, errors: ["config file /nonexistent/tt.yaml: cannot read (ENOENT)"] });
    const list = file("- a\n- b\n");
    assert.deepEqual(loadConfig(["--config", list], {}), { ok: false, errors: [`config file ${list}: the top level must be a mapping`] });
  });
});
