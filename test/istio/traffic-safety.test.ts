// The filter as Istio loads it: every pinned sha256 is what istio-agent checks (the image manifest
// digest for oci://, the file's hash for http(s)://), a failed fetch never costs traffic, and the
// filter sits where a STATS-phase WasmPlugin sits, on inbound traffic only. Each rule runs through
// an emulation of the upstream code named in test/istio/emulated-istio-agent.ts and emulated-xds.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { loadConfig } from "../../control-plane/src/config.js";
import { desiredWasmPlugin } from "../../control-plane/src/k8s/wasmplugin.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { pinFor, pinsFrom } from "../../scripts/manifests.js";
import { readOciLayout } from "../../scripts/oci.js";
import { FILTER_WASM, loadFilter, requireArtifact } from "../filter/support.js";
import { convertWasmExtensionConfig, failsOpen, fetchWasmModule, wasmConfigOfPlugin, type WasmFilterConfig } from "./emulated-istio-agent.js";
import { applyHttpFilterPatch, deliverExtensionConfig, inboundHttpFilters, RBAC_HTTP_TYPE, WASM_HTTP_TYPE, wasmPluginApplies, type HttpFilter, type HttpFilterPatch } from "./emulated-xds.js";
import { startOciRegistry, type OciRegistry } from "./oci-registry.js";
import { REPO, manifests, one } from "./support.js";

const OCI_DIR = join(REPO, "build/oci");
const all = manifests();
const plugin = one(all, "WasmPlugin", "tokentrace");
const envoyFilter = one(all, "EnvoyFilter", "tokentrace");
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");
const configMap = one(all, "ConfigMap", "tokentrace-control-plane");
const statefulSet = one(all, "StatefulSet", "tokentrace-control-plane");
const [extensionPatch, slotPatch] = envoyFilter.spec.configPatches;
const envoyWasm = extensionPatch.patch.value.typed_config.config as WasmFilterConfig & { vm_config: { code: { remote: { sha256: string } } } };
const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** The WasmPlugins the deployed control plane writes for a policy (its config as the StatefulSet loads it). */
function controlPlanePlugin(): { url: string; sha256: string; failStrategy: string; match: unknown } {
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-traffic-"));
  try {
    writeFileSync(join(dir, "config.yaml"), configMap.data["config.yaml"]);
    const loaded = loadConfig(["--config", join(dir, "config.yaml")], { ...envConfigMap.data, TOKENTRACE_API_TOKENS: "admin:0123456789abcdef0123" });
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
    const policy: Policy = { name: "chat", target: { namespace: "llm", selector: { matchLabels: { app: "vllm" } } }, pluginConfig: {} };
    const created = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, {}, "1", loaded.config.kubernetes.wasmPlugin);
    return created.spec as { url: string; sha256: string; failStrategy: string; match: unknown };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let registry: OciRegistry;
let failingRegistry: Server;
let failingHost: string;
before(async () => {
  requireArtifact(join(OCI_DIR, "index.json"));
  registry = await startOciRegistry(OCI_DIR, "tokentrace/filter");
  failingRegistry = createServer((_req, res) => res.writeHead(503).end());
  await new Promise<void>((resolve) => failingRegistry.listen(0, "127.0.0.1", resolve));
  failingHost = `127.0.0.1:${(failingRegistry.address() as AddressInfo).port}`;
});
after(async () => {
  await registry.close();
  await new Promise<void>((resolve) => failingRegistry.close(() => resolve()));
});
// ghcr.io, where docs/deploying.md pushes the image, is the local registry here.
const toRegistry = (host: string): string => (host === "ghcr.io" ? registry.host : host);

describe("digests Istio checks (emulated istio-agent pulling build/oci from a local registry)", () => {
  const pinned: Array<[string, string, string]> = [
    ["istio/base WasmPlugin", plugin.spec.url, plugin.spec.sha256],
    ["istio/envoyfilter EnvoyFilter", envoyWasm.vm_config.code.remote.http_uri.uri, envoyWasm.vm_config.code.remote.sha256],
    ["the control plane's WasmPlugins", controlPlanePlugin().url, controlPlanePlugin().sha256],
  ];

  it("build/oci's manifest digest, computed as Istio's fetcher computes it, is what every oci:// place pins", async () => {
    const image = readOciLayout(OCI_DIR, "0.1.0");
    // go-containerregistry remote image Digest(): sha256 over the manifest bytes the registry serves.
    const served = await fetch(`http://${registry.host}/v2/tokentrace/filter/manifests/0.1.0`);
    const digest = sha256(Buffer.from(await served.arrayBuffer()));
    assert.equal(`sha256:${digest}`, image.manifest.digest);
    for (const [place, url, pin] of pinned) {
      assert.match(url, /^oci:\/\//, place);
      assert.equal(pin, digest, `${place} pins the manifest digest`);
      assert.notEqual(pin, sha256(readFileSync(FILTER_WASM)), `${place} does not pin the .wasm file's hash`);
    }
  });

  for (const [place, url, pin] of pinned) {
    it(`${place}: the agent's fetch accepts the pin and yields build/filter.wasm, which the emulated Envoy host starts`, async () => {
      const fetched = await fetchWasmModule(url, pin, toRegistry);
      assert.ok(fetched.ok, fetched.ok ? "" : fetched.error);
      assert.ok(fetched.wasm.equals(readFileSync(FILTER_WASM)));
      const vm = await loadFilter({ rootId: plugin.spec.pluginName, config: plugin.spec.pluginConfig });
      assert.equal(vm.configureAccepted, true);
    });
  }

  it("the old pin, the .wasm file's sha256 on an oci:// URL, is refused with cache.go's checksum mismatch", async () => {
    const fileHash = sha256(readFileSync(FILTER_WASM));
    const fetched = await fetchWasmModule(plugin.spec.url, fileHash, toRegistry);
    assert.equal(fetched.ok, false);
    assert.match(fetched.ok ? "" : fetched.error, new RegExp(`has checksum ${plugin.spec.sha256}, which does not match: ${fileHash}`));
  });

  it("a digest reference (oci://...@sha256:<digest>) with no sha256 is checked against the digest in the URL", async () => {
    const digestUrl = `oci://ghcr.io/tokentrace/filter@sha256:${plugin.spec.sha256}`;
    const fetched = await fetchWasmModule(digestUrl, "", toRegistry);
    assert.ok(fetched.ok, fetched.ok ? "" : fetched.error);
    assert.deepEqual(registry.pulls.at(-1), `sha256:${plugin.spec.sha256}`);
  });

  it("http(s):// URLs keep the file's sha256, which the agent's HTTP fetch checks", async () => {
    const wasm = readFileSync(FILTER_WASM);
    const pins = pinsFrom(FILTER_WASM, OCI_DIR);
    assert.equal(pinFor("https://example.com/filter.wasm", pins), sha256(wasm));
    assert.equal(pinFor("oci://ghcr.io/tokentrace/filter:0.1.0", pins), plugin.spec.sha256);
    const server = createServer((_req, res) => res.writeHead(200).end(wasm));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/filter.wasm`;
      const accepted = await fetchWasmModule(url, pinFor(url, pins), toRegistry);
      assert.ok(accepted.ok, accepted.ok ? "" : accepted.error);
      // Control: the manifest digest is not the file's hash, so it would fail here.
      assert.equal((await fetchWasmModule(url, plugin.spec.sha256, toRegistry)).ok, false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("the control plane refuses a url digest that disagrees with its sha256 (istio/api wasm.proto: they must match)", () => {
    const url = `oci://ghcr.io/tokentrace/filter@sha256:${"a".repeat(64)}`;
    const refused = loadConfig([], { TOKENTRACE_WASM_URL: url, TOKENTRACE_WASM_SHA256: "b".repeat(64) });
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? "" : refused.errors.join("\n"), /kubernetes\.wasmPlugin\.sha256: must equal the digest in kubernetes\.wasmPlugin\.url/);
    assert.equal(loadConfig([], { TOKENTRACE_WASM_URL: url, TOKENTRACE_WASM_SHA256: "a".repeat(64) }).ok, true);
  });
});

describe("a failed fetch never costs traffic (emulated istio-agent and Envoy ECDS)", () => {
  const slot: HttpFilter = { name: slotPatch.patch.value.name, typeUrls: slotPatch.patch.value.config_discovery.type_urls };

  it("EnvoyFilter: when the registry fails, the agent sends allow-all RBAC, and the slot accepts it (extensionfilter.go lists both types)", async () => {
    const unreachable = structuredClone(envoyWasm);
    const forwarded = await convertWasmExtensionConfig(unreachable, () => failingHost);
    assert.equal(forwarded.typeUrl, RBAC_HTTP_TYPE);
    assert.equal(forwarded.typeUrl === RBAC_HTTP_TYPE && forwarded.allowAll, true, "FAIL_OPEN: allow-all, not deny-all");
    assert.deepEqual(deliverExtensionConfig(slot, forwarded.typeUrl), { kind: "configured", typeUrl: RBAC_HTTP_TYPE });
    // Control: a slot listing only the Wasm type rejects it, and then answers every request 500.
    const wasmOnly = deliverExtensionConfig({ ...slot, typeUrls: [WASM_HTTP_TYPE] }, forwarded.typeUrl);
    assert.equal(wasmOnly.kind, "missing-config");
    assert.equal(wasmOnly.kind === "missing-config" && wasmOnly.status, 500);
  });

  it("EnvoyFilter: a reachable image is delivered as the Wasm type into the same slot", async () => {
    const forwarded = await convertWasmExtensionConfig(envoyWasm, toRegistry);
    assert.equal(forwarded.typeUrl, WASM_HTTP_TYPE);
    assert.deepEqual(deliverExtensionConfig(slot, forwarded.typeUrl), { kind: "configured", typeUrl: WASM_HTTP_TYPE });
  });

  it("EnvoyFilter fails open through failure_policy, not the deprecated fail_open (convert.go reads failure_policy first)", () => {
    assert.equal(envoyWasm.failure_policy, "FAIL_OPEN");
    assert.equal("fail_open" in envoyWasm, false);
    assert.equal(failsOpen(envoyWasm), true);
    // Control: a set failure_policy wins over fail_open.
    assert.equal(failsOpen({ ...envoyWasm, failure_policy: "FAIL_CLOSED", fail_open: true }), false);
  });

  it("WasmPlugins (base and the control plane's) fail open: istiod turns FAIL_OPEN into failure_policy FAIL_OPEN", async () => {
    for (const spec of [plugin.spec, controlPlanePlugin()]) {
      const config = wasmConfigOfPlugin(spec);
      assert.equal(config.failure_policy, "FAIL_OPEN");
      const forwarded = await convertWasmExtensionConfig(config, () => failingHost);
      assert.equal(forwarded.typeUrl === RBAC_HTTP_TYPE && forwarded.allowAll, true);
    }
  });
});

describe("where the filter runs (emulated istiod listener build)", () => {
  const envoyFilterSlot: HttpFilterPatch = {
    operation: slotPatch.patch.operation,
    subFilter: slotPatch.match.listener.filterChain.filter.subFilter.name,
    value: { name: slotPatch.patch.value.name, typeUrls: slotPatch.patch.value.config_discovery.type_urls },
  };

  it("the EnvoyFilter's HTTP filter lands exactly where the STATS-phase WasmPlugin would (listener_builder.go)", () => {
    const withPlugin = inboundHttpFilters([{ name: "tokentrace", phase: "STATS" }]).map((f) => f.name);
    const patched = applyHttpFilterPatch(inboundHttpFilters([]), envoyFilterSlot);
    assert.equal(patched.applied, true, "the subFilter it anchors on exists on every inbound listener");
    assert.equal(patched.filters.findIndex((f) => f.name === envoyFilterSlot.value.name), withPlugin.indexOf("tokentrace"));
    assert.ok(patched.filters.findIndex((f) => f.name === envoyFilterSlot.value.name) < patched.filters.findIndex((f) => f.name === "istio.stats"));
    // Control: the old anchor (before the router) put it after istio.stats.
    const old = applyHttpFilterPatch(inboundHttpFilters([]), { ...envoyFilterSlot, subFilter: "envoy.filters.http.router" }).filters.map((f) => f.name);
    assert.ok(old.indexOf(envoyFilterSlot.value.name) > old.indexOf("istio.stats"));
  });

  it("with other STATS-phase WasmPlugins present, the EnvoyFilter's filter comes after them, as its comment says", () => {
    const patched = applyHttpFilterPatch(inboundHttpFilters([{ name: "other", phase: "STATS" }, { name: "later", phase: "UNSPECIFIED_PHASE" }]), envoyFilterSlot).filters.map((f) => f.name);
    assert.deepEqual(patched.slice(patched.indexOf("other"), patched.indexOf("envoy.filters.http.grpc_stats") + 1), ["other", "later", envoyFilterSlot.value.name, "envoy.filters.http.grpc_stats"]);
    assert.match(readFileSync(join(REPO, "istio/envoyfilter/envoyfilter.yaml"), "utf8"), /immediately before envoy\.filters\.http\.grpc_stats/);
  });

  it("the base WasmPlugin and the control plane's run on inbound listeners only (match mode SERVER), like the inbound-only EnvoyFilter", () => {
    for (const spec of [plugin.spec, controlPlanePlugin()]) {
      assert.equal(wasmPluginApplies(spec.match, "SIDECAR_INBOUND", 8000), true);
      assert.equal(wasmPluginApplies(spec.match, "SIDECAR_OUTBOUND", 443), false);
    }
    // Control: without match a WasmPlugin also runs on outbound calls.
    assert.equal(wasmPluginApplies(undefined, "SIDECAR_OUTBOUND", 443), true);
    for (const patch of envoyFilter.spec.configPatches) assert.equal(patch.match.context, "SIDECAR_INBOUND");
  });

  it("the control plane's pod is injected with the label (istio/api labels.yaml; the annotation is deprecated), its sidecar capturing only the filter-facing port inbound and nothing outbound, and replacing any caller's XFCC (SANITIZE_SET)", () => {
    const template = statefulSet.spec.template.metadata;
    assert.equal(template.labels["sidecar.istio.io/inject"], "true");
    assert.equal(template.annotations?.["sidecar.istio.io/inject"], undefined);
    assert.equal(template.annotations?.["traffic.sidecar.istio.io/includeInboundPorts"], "8081");
    assert.equal(template.annotations?.["traffic.sidecar.istio.io/includeOutboundIPRanges"], "");
    assert.match(String(template.annotations?.["proxy.istio.io/config"]), /proxyHeaders:\n\s+forwardedClientCert: SANITIZE_SET/);
  });
});
