// Content capture deployed end to end: the control plane, configured as istio/base ships it, writes
// the WasmPlugin of a policy that turns capture on into the emulated kube-apiserver; emulated
// istiod and istio-agent (test/istio/emulated-istio-agent.ts, rules cited there) pull the module it
// names from a local registry serving build/oci-content, checking the pinned manifest digest; the
// module fetched is build/filter-content.wasm, and under the emulated Envoy host, with that
// WasmPlugin's pluginConfig, it captures a prompt and de-identifies it before the span leaves.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readOciLayout } from "../../scripts/oci.js";
import { adminToken, call } from "../control-plane/helpers.js";
import { applyCrd, kube, startReplicas, type Replica } from "../control-plane/k8s/kubernetes-replicas.js";
import { countingRandom, FILTER_CONTENT_WASM, FILTER_WASM, loadFilter, requireArtifact } from "../filter/support.js";
import { ManualClock } from "../host/index.js";
import { startKubeEmulator, type KubeEmulator } from "../support/kube-emulator/index.js";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.js";
import { convertWasmExtensionConfig, fetchWasmModule, wasmConfigOfPlugin } from "./emulated-istio-agent.js";
import { pluginsOnHttpListener, RBAC_HTTP_TYPE, WASM_HTTP_TYPE } from "./emulated-xds.js";
import { startOciRegistry, type OciRegistry } from "./oci-registry.js";
import { schemaErrors } from "../support/kube-schemas.js";
import { REPO, manifests, one } from "./support.js";

const CONTENT_OCI = join(REPO, "build/oci-content");
const all = manifests();
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");
const basePlugin = one(all, "WasmPlugin", "tokentrace");
const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

// Values a prompt carries, and what must not leave the sidecar.
const EMAIL = "ana.lopez+billing@example.org";
const PHONE = "+33 6 12 34 56 78";
const PROMPT = `Please write to ${EMAIL} or call ${PHONE} about the invoice.`;

const capturingPolicy = {
  name: "capture-e2e",
  target: { namespace: "llm", selector: { matchLabels: { app: "vllm" } } },
  pluginConfig: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", content: { enabled: true } } },
};

describe("content capture deployed: SamplingPolicy -> WasmPlugin -> istio-agent fetch -> content module (emulated)", () => {
  let emulator: KubeEmulator;
  let leader: Replica;
  let registry: OciRegistry;
  let receiver: OtlpReceiver;
  let spec: { url: string; sha256?: string; failStrategy: string; pluginName: string; pluginConfig: unknown };
  // ghcr.io, where docs/deploying.md pushes the images, is the local registry here.
  const toRegistry = (host: string): string => (host === "ghcr.io" ? registry.host : host);

  before(async () => {
    requireArtifact(join(CONTENT_OCI, "index.json"));
    registry = await startOciRegistry(CONTENT_OCI, "tokentrace/filter-content");
    receiver = await startOtlpReceiver();
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    // The control plane with the env ConfigMap istio/base ships (both modules' urls and pins).
    [leader] = (await startReplicas(emulator, ["cp-a"], { env: { ...envConfigMap.data } })) as [Replica];
    const created = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: capturingPolicy });
    assert.equal(created.status, 201, created.text);
    await leader.kube.sync.reconciler.whenIdle();
    const written = await kube(emulator, "GET", "/apis/extensions.istio.io/v1alpha1/namespaces/llm/wasmplugins/tokentrace-capture-e2e");
    assert.equal(written.status, 200, JSON.stringify(written.json));
    spec = written.json.spec;
    // Valid against Istio's WasmPlugin CRD (its CEL rules included), as the API server would check it.
    const { metadata: { name, namespace, labels, annotations }, ...rest } = written.json;
    assert.deepEqual(schemaErrors({ ...rest, metadata: { name, namespace, labels, annotations } }), []);
  });
  after(async () => {
    await leader.running.stop();
    await emulator.close();
    await registry.close();
    await receiver.close();
  });

  it("the written WasmPlugin names the content module's image, pinned by the digest the registry serves for it (the committed pin is not stale)", async () => {
    assert.equal(spec.url, envConfigMap.data.TOKENTRACE_CONTENT_WASM_URL);
    assert.equal(spec.url, "oci://ghcr.io/tokentrace/filter-content:0.1.0");
    const image = readOciLayout(CONTENT_OCI, "0.1.0");
    assert.ok(image.wasm.equals(readFileSync(requireArtifact(FILTER_CONTENT_WASM))), "build/oci-content holds build/filter-content.wasm");
    // go-containerregistry remote image Digest(): sha256 over the manifest bytes the registry serves.
    const served = await fetch(`http://${registry.host}/v2/tokentrace/filter-content/manifests/0.1.0`);
    const digest = sha256(Buffer.from(await served.arrayBuffer()));
    assert.equal(`sha256:${digest}`, image.manifest.digest);
    assert.equal(spec.sha256, digest, "the WasmPlugin pins the content image's manifest digest (make manifests)");
    assert.notEqual(spec.sha256, envConfigMap.data.TOKENTRACE_WASM_SHA256, "not the default module's pin");
  });

  it("istio-agent's fetch resolves the content module by that digest; any other pin is refused and traffic stays up (fail open, no capture)", async () => {
    const forwarded = await convertWasmExtensionConfig(wasmConfigOfPlugin(spec), toRegistry);
    assert.equal(forwarded.typeUrl, WASM_HTTP_TYPE, forwarded.typeUrl === RBAC_HTTP_TYPE ? forwarded.error : "");
    if (forwarded.typeUrl !== WASM_HTTP_TYPE) return;
    assert.ok(forwarded.wasm.equals(readFileSync(FILTER_CONTENT_WASM)), "the module Envoy gets is build/filter-content.wasm");
    assert.ok(!forwarded.wasm.equals(readFileSync(FILTER_WASM)));
    // A stale pin (the default module's digest) fails cache.go's checksum check.
    const stale = await fetchWasmModule(spec.url, envConfigMap.data.TOKENTRACE_WASM_SHA256, toRegistry);
    assert.equal(stale.ok, false);
    assert.match(stale.ok ? "" : stale.error, /which does not match/);
    const refused = await convertWasmExtensionConfig(wasmConfigOfPlugin({ ...spec, sha256: "0".repeat(64) }), toRegistry);
    assert.deepEqual(refused.typeUrl === RBAC_HTTP_TYPE ? [refused.typeUrl, refused.allowAll] : [refused.typeUrl], [RBAC_HTTP_TYPE, true]);
  });

  it("the fetched module, with the WasmPlugin's pluginName and pluginConfig, captures the prompt de-identified: no raw value in the span, a stat or a log", async () => {
    const forwarded = await convertWasmExtensionConfig(wasmConfigOfPlugin(spec), toRegistry);
    assert.equal(forwarded.typeUrl, WASM_HTTP_TYPE);
    if (forwarded.typeUrl !== WASM_HTTP_TYPE) return;
    const vm = await loadFilter({ wasm: forwarded.wasm, rootId: spec.pluginName, config: spec.pluginConfig, clock: new ManualClock(), random: countingRandom(), clusters: { otel: receiver.url } });
    assert.equal(vm.configureAccepted, true);
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    assert.equal(s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc:8000"], ["content-type", "application/json"]], false), 0);
    assert.equal(s.requestBody(JSON.stringify({ model: "m", messages: [{ role: "user", content: PROMPT }] }), true), 0);
    assert.equal(s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false), 0);
    assert.equal(s.responseBody(JSON.stringify({ model: "m", choices: [{ message: { content: "Done." }, finish_reason: "stop" }], usage: { prompt_tokens: 20, completion_tokens: 2 } }), true), 0);
    s.end();
    vm.tick();
    await vm.settle();
    assert.equal(receiver.spans.length, 1);
    const span = JSON.stringify(receiver.spans[0]);
    assert.ok(receiver.spans[0]!.attributes.some((a) => a.key === "gen_ai.input.messages"), "the prompt was captured");
    assert.match(span, /Please write to \[EMAIL\] or call \[PHONE\] about the invoice\./);
    for (const raw of [EMAIL, PHONE, "ana.lopez", "12 34 56 78"]) assert.equal(span.includes(raw), false, `${raw} left in the span`);
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), 1);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_unavailable" }), undefined);
    assert.ok(vm.stats.names().every((n) => !n.includes("ana") && !n.includes("+33")));
    assert.ok(vm.logs.every((l) => !l.message.includes(EMAIL) && !l.message.includes(PHONE)));
  });

  it("on a sidecar: a pod with only the policy's labels runs the content module alone; one also labelled for the base WasmPlugin runs both (why docs/deploying.md forbids the label)", () => {
    const plugins = [
      { namespace: basePlugin.metadata.namespace ?? "", name: basePlugin.metadata.name, selector: basePlugin.spec.selector, match: basePlugin.spec.match },
      { namespace: "llm", name: "tokentrace-capture-e2e", selector: (spec as { selector?: { matchLabels: Record<string, string> } }).selector, match: (spec as { match?: [] }).match },
    ];
    const on = (labels: Record<string, string>): string[] => pluginsOnHttpListener({ namespace: "llm", labels, waypoint: false }, plugins, "istio-system", 8000);
    assert.deepEqual(on({ app: "vllm" }), ["llm/tokentrace-capture-e2e"]);
    // matchLabels only, no exclusion: both apply, the default module beside the content module.
    assert.deepEqual(on({ app: "vllm", "tokentrace.dev/llm-workload": "true" }).sort(), ["istio-system/tokentrace", "llm/tokentrace-capture-e2e"]);
    assert.deepEqual(on({ app: "other", "tokentrace.dev/llm-workload": "true" }), ["istio-system/tokentrace"]);
  });
});
