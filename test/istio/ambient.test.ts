// Ambient mode: which shipped and control-plane-written WasmPlugins land on a sidecar and on a
// waypoint, by Istio's attachment rules (test/istio/emulated-xds.ts shouldAttachPolicy and
// pluginsOnHttpListener, read at istio/istio 86c9f01f), and the waypoints' WasmPlugin running the
// shipped filter.wasm with its own configuration: stats labelled by the destination pod.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../control-plane/src/config.js";
import { desiredWasmPlugin } from "../../control-plane/src/k8s/wasmplugin.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { validatePolicy } from "../../control-plane/src/policy/validate.js";
import { WAYPOINT_WASMPLUGIN } from "../../scripts/manifests.js";
import { baseRequest, loadFilter } from "../filter/support.js";
import { schemaErrors } from "../support/kube-schemas.js";
import { GATEWAY_NAME_LABEL, pluginsOnHttpListener, type AttachPlugin, type AttachProxy } from "./emulated-xds.js";
import { manifests, one, type Manifest } from "./support.js";

const ROOT = "istio-system";
const all = manifests();
const basePlugin = one(all, "WasmPlugin", "tokentrace");
const waypointPlugin = one(all, "WasmPlugin", WAYPOINT_WASMPLUGIN);
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");

const asAttach = (m: Manifest | { metadata: { name: string; namespace?: string }; spec: Record<string, unknown> }): AttachPlugin => ({
  namespace: m.metadata.namespace!,
  name: m.metadata.name,
  ...(m.spec.selector === undefined ? {} : { selector: m.spec.selector as AttachPlugin["selector"] }),
  ...(m.spec.targetRefs === undefined ? {} : { targetRefs: m.spec.targetRefs as AttachPlugin["targetRefs"] }),
  ...(m.spec.match === undefined ? {} : { match: m.spec.match as AttachPlugin["match"] }),
});
const shipped = [asAttach(basePlugin), asAttach(waypointPlugin)];

/** An LLM server's pod with a sidecar, labelled as the base WasmPlugin selects it. */
const sidecar = (namespace = "llm"): AttachProxy => ({ namespace, labels: { app: "vllm", "tokentrace.dev/llm-workload": "true" }, waypoint: false });
/** A waypoint's pod (istio waypoint deployments label it with their Gateway's name), carrying `services`. */
const waypoint = (namespace = "llm", labels: Record<string, string> = {}): AttachProxy => ({
  namespace,
  labels: { [GATEWAY_NAME_LABEL]: "waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller", ...labels },
  waypoint: true,
  services: [{ name: "vllm", namespace, registry: "Kubernetes" }],
});

/** The WasmPlugin the control plane writes for a policy with `target`, configured as shipped. */
function written(target: Policy["target"], name = "chat"): AttachPlugin {
  const loaded = loadConfig([], { ...envConfigMap.data });
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
  const policy: Policy = { name, target, pluginConfig: {} };
  assert.ok(validatePolicy(policy).ok, JSON.stringify(validatePolicy(policy)));
  const plugin = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, {}, "1", loaded.config.kubernetes.wasmPlugin);
  assert.deepEqual(schemaErrors(plugin as unknown as Record<string, unknown>), []);
  return asAttach(plugin as unknown as Manifest);
}

describe("ambient mode: where the filter runs (Istio's attachment rules, emulated)", () => {
  it("a labelled sidecar runs the base WasmPlugin only; a waypoint runs the waypoints' WasmPlugin only, even when it carries the label", () => {
    assert.deepEqual(pluginsOnHttpListener(sidecar(), shipped, ROOT, 8000), [`${ROOT}/tokentrace`]);
    assert.deepEqual(pluginsOnHttpListener(waypoint(), shipped, ROOT, 0), [`${ROOT}/${WAYPOINT_WASMPLUGIN}`]);
    assert.deepEqual(pluginsOnHttpListener(waypoint("other", { "tokentrace.dev/llm-workload": "true" }), shipped, ROOT, 0), [`${ROOT}/${WAYPOINT_WASMPLUGIN}`]);
    // What istio/base alone did before: nothing on a waypoint.
    assert.deepEqual(pluginsOnHttpListener(waypoint(), [asAttach(basePlugin)], ROOT, 0), []);
  });

  it("the waypoints' WasmPlugin attaches only from Istio's root namespace, and a ports match would keep it off every waypoint", () => {
    assert.deepEqual(pluginsOnHttpListener(waypoint(), [{ ...asAttach(waypointPlugin), namespace: "llm" }], ROOT, 0), []);
    assert.deepEqual(pluginsOnHttpListener(waypoint(), [{ ...asAttach(waypointPlugin), match: [{ mode: "SERVER", ports: [{ number: 8000 }] }] }], ROOT, 0), []);
    assert.deepEqual(pluginsOnHttpListener(waypoint(), [{ ...asAttach(waypointPlugin), match: [{ mode: "CLIENT" }] }], ROOT, 0), [], "a waypoint's filters are built as SERVER side");
  });

  it("a policy's WasmPlugin with targetRefs lands on the waypoints Istio attaches it to, never on a sidecar", () => {
    const gateway = written({ namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "waypoint" }] });
    const service = written({ namespace: "llm", targetRefs: [{ kind: "Service", name: "vllm" }] }, "svc");
    const every = written({ namespace: ROOT, targetRefs: [{ group: "gateway.networking.k8s.io", kind: "GatewayClass", name: "istio-waypoint" }] }, "every");
    const plugins = [gateway, service, every];
    assert.deepEqual(pluginsOnHttpListener(waypoint(), plugins, ROOT, 0), ["llm/tokentrace-chat", "llm/tokentrace-svc", `${ROOT}/tokentrace-every`]);
    assert.deepEqual(pluginsOnHttpListener(waypoint("other"), plugins, ROOT, 0), [`${ROOT}/tokentrace-every`]);
    assert.deepEqual(pluginsOnHttpListener(sidecar(), plugins, ROOT, 8000), []);
    // A selector policy is the sidecar's and never a waypoint's.
    const selector = written({ namespace: "llm", selector: { matchLabels: { app: "vllm" } } }, "sel");
    assert.deepEqual(pluginsOnHttpListener(sidecar(), [selector], ROOT, 8000), ["llm/tokentrace-sel"]);
    assert.deepEqual(pluginsOnHttpListener(waypoint("llm", { app: "vllm" }), [selector], ROOT, 0), []);
  });
});

describe("the waypoints' WasmPlugin", () => {
  it("is a valid WasmPlugin pulling the base one's module alike, with the base configuration plus a destination-pod cap", () => {
    const { file: _file, ...object } = waypointPlugin;
    assert.deepEqual(schemaErrors(object as Manifest), []);
    for (const key of ["url", "sha256", "imagePullPolicy", "pluginName", "phase", "failStrategy", "type", "match", "imagePullSecret"]) assert.deepEqual(waypointPlugin.spec[key], basePlugin.spec[key], key);
    const { stats: { maxDestinationPods, ...stats }, ...rest } = waypointPlugin.spec.pluginConfig;
    assert.deepEqual({ ...rest, stats }, basePlugin.spec.pluginConfig);
    assert.ok(Number.isInteger(maxDestinationPods) && maxDestinationPods > 0);
  });

  it("under filter.wasm, labels an LLM call's stats with the pod a waypoint sent it to", async () => {
    const vm = await loadFilter({ config: waypointPlugin.spec.pluginConfig });
    const s = vm.newStream({ routeName: "chat", upstream: { address: "envoy://connect_originate/10.1.2.3:8000", port: 8000 } });
    s.requestHeaders(baseRequest(), false);
    s.requestBody(JSON.stringify({ model: "llama", messages: [{ role: "user", content: "hi" }] }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ model: "llama", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2 } }), true);
    s.end();
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "llama", stream: "false", finish_reason: "stop", status_class: "2xx", pod_ip: "10.1.2.3" }), 1);
    // The base configuration (a sidecar's) adds no pod label.
    const base = await loadFilter({ config: basePlugin.spec.pluginConfig });
    const t = base.newStream({ routeName: "chat", upstream: { address: "10.1.2.3:8000", port: 8000 } });
    t.requestHeaders(baseRequest(), true);
    t.responseHeaders([[":status", "200"]], true);
    t.end();
    assert.equal(base.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 1);
  });
});
