// istio/ manifests: every object valid against its real schema (Kubernetes' OpenAPI definitions,
// Istio's and prometheus-operator's CRDs with their CEL rules, IstioOperator as istioctl decodes
// it: test/support/kube-schemas.ts, fixtures from upstream), no field that a schema does not
// declare, and the files agreeing with each other and with the code they deploy (the filter's
// root id, schema and stat tags, the control plane's config loader, routes and Kubernetes calls).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";
import { envOverrides, loadConfig, type Config } from "../../control-plane/src/config.js";
import { memoryBudgets, memoryLimitWarning } from "../../control-plane/src/compose/memory-budgets.js";
import { enabledPipelineConfig } from "../../control-plane/src/compose/pipeline.js";
import { DashboardSeries } from "../../control-plane/src/dashboard/series.js";
import { defaultBudgetBytes } from "../../control-plane/src/traces/memory-budget.js";
import { pipelineConfigOf } from "../../control-plane/src/pipeline/config.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { desiredWasmPlugin, managedByLabel, wasmPluginGroup, wasmPluginPlural, wasmPluginVersion } from "../../control-plane/src/k8s/wasmplugin.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import { GENAI_BOUNDARIES } from "../../control-plane/src/join/derivations/genai.js";
import { FILTER_WASM, loadFilter, requireArtifact } from "../filter/support.js";
import { startTestApp } from "../control-plane/helpers.js";
import { schemaErrors } from "../support/kube-schemas.js";
import { ISTIO_DIR, REPO, isPatch, manifests, one, readYaml, yamlFiles, type Manifest } from "./support.js";

/** The schema's verdict on a manifest (its `file` is ours, not the object's). */
function errorsOf(m: Manifest | Record<string, unknown>): string[] {
  const { file: _file, ...object } = m as Manifest;
  return schemaErrors(object);
}

const all = manifests();
const plugin = one(all, "WasmPlugin", "tokentrace");
const envoyFilter = one(all, "EnvoyFilter", "tokentrace");
const statefulSet = one(all, "StatefulSet", "tokentrace-control-plane");
const service = one(all, "Service", "tokentrace-control-plane");
const serviceAccount = one(all, "ServiceAccount", "tokentrace-control-plane");
const configMap = one(all, "ConfigMap", "tokentrace-control-plane");
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");
const container = statefulSet.spec.template.spec.containers[0];
const filterSchema = JSON.parse(readFileSync(join(REPO, "filter/config.schema.json"), "utf8")) as object;
const validatePluginConfig = new Ajv2020({ strict: true, allErrors: true }).compile(filterSchema);

/** The control plane's config as the StatefulSet loads it (config.yaml, env ConfigMap, a token), or the loader's errors. */
function deployedConfig(mutateFile: (text: string) => string = (t) => t): ReturnType<typeof loadConfig> & { path: string } {
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-istio-"));
  try {
    const path = join(dir, "config.yaml");
    writeFileSync(path, mutateFile(configMap.data["config.yaml"]));
    const args = (container.args as string[]).map((a) => (a === "/etc/tokentrace/config.yaml" ? path : a));
    const env: NodeJS.ProcessEnv = { ...envConfigMap.data, TOKENTRACE_API_TOKENS: "admin:0123456789abcdef0123" };
    return { ...loadConfig(args, env), path };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("istio/ manifests against the real schemas", () => {
  for (const m of all) {
    it(`${m.file}: ${m.kind} ${m.metadata.name} is valid, every field one its schema declares (nothing pruned)`, () => {
      assert.deepEqual(errorsOf(m), []);
    });
  }

  // A misspelt field in every kind istio/ ships, at a depth where a schema that checked only the
  // top level would miss it: the API server (strict field validation) or istioctl refuses it.
  const misspelt: Array<[string, string, (o: Manifest) => void, string]> = [
    ["Namespace", "tokentrace-system", (o) => { (o.metadata as Record<string, unknown>).lables = {}; }, "metadata.lables"],
    ["ServiceAccount", "tokentrace-control-plane", (o) => { o.automountServiceAccountTokn = false; }, "automountServiceAccountTokn"],
    ["ConfigMap", "tokentrace-control-plane", (o) => { o.binarydata = {}; }, "binarydata"],
    ["Service", "tokentrace-control-plane", (o) => { o.spec.ports[0].targetport = "http"; }, "spec.ports[0].targetport"],
    ["StatefulSet", "tokentrace-control-plane", (o) => { o.spec.template.spec.containers[0].readinessProbe.httpGet.paht = "/readyz"; }, "spec.template.spec.containers[0].readinessProbe.httpGet.paht"],
    ["PodDisruptionBudget", "tokentrace-control-plane", (o) => { o.spec.minAvailble = 1; }, "spec.minAvailble"],
    ["ClusterRole", "tokentrace-control-plane", (o) => { o.rules[0].resourcenames = ["x"]; }, "rules[0].resourcenames"],
    ["ClusterRoleBinding", "tokentrace-control-plane", (o) => { o.subjects[0].namspace = "x"; }, "subjects[0].namspace"],
    ["Role", "tokentrace-control-plane-leader-election", (o) => { o.rules[0].verb = ["get"]; }, "rules[0].verb"],
    ["RoleBinding", "tokentrace-control-plane-leader-election", (o) => { o.roleRef.apigroup = "x"; }, "roleRef.apigroup"],
    ["CustomResourceDefinition", "samplingpolicies.tokentrace.dev", (o) => { o.spec.versions[0].subresources.stauts = {}; }, "spec.versions[0].subresources.stauts"],
    ["WasmPlugin", "tokentrace", (o) => { o.spec.failStratgy = "FAIL_OPEN"; }, "spec.failStratgy"],
    ["EnvoyFilter", "tokentrace", (o) => { o.spec.configPatches[1].match.listener.filterChain.filter.subfilter = {}; }, "spec.configPatches[1].match.listener.filterChain.filter.subfilter"],
    ["IstioOperator", "tokentrace", (o) => { o.spec.meshConfig.defaultConfig.extraStatTag = ["route"]; }, "spec.meshConfig.defaultConfig.extraStatTag"],
    ["PrometheusRule", "tokentrace", (o) => { o.spec.groups[0].rules[0].exp = "up"; }, "spec.groups[0].rules[0].exp"],
    ["NetworkPolicy", "tokentrace-control-plane", (o) => { o.spec.ingress[0].from[0].podselector = {}; }, "spec.ingress[0].from[0].podselector"],
    ["PeerAuthentication", "tokentrace-control-plane", (o) => { o.spec.portLevelMtls["8081"].mod = "STRICT"; }, "spec.portLevelMtls.8081.mod"],
    ["AuthorizationPolicy", "tokentrace-control-plane-filters", (o) => { o.spec.rules[0].to[0].operation.port = ["8081"]; }, "spec.rules[0].to[0].operation.port"],
  ];
  for (const [kind, name, misspell, field] of misspelt) {
    it(`reports a misspelt field of ${kind} ${name} (${field})`, () => {
      const copy = structuredClone(one(all, kind, name));
      misspell(copy);
      assert.deepEqual(errorsOf(copy), [`${field}: unknown field`]);
    });
  }

  it("every kind istio/ ships has a misspelt-field test", () => {
    assert.deepEqual([...new Set(all.map((m) => m.kind))].sort(), [...new Set(misspelt.map(([kind]) => kind))].sort());
  });

  // Negative controls: types, enums, formats and CEL rules are checked, not only field names.
  const broken: Array<[string, Manifest, (o: Manifest) => void, RegExp]> = [
    ["WasmPlugin with an unknown failStrategy", plugin, (o) => { o.spec.failStrategy = "FAIL_SOMETIMES"; }, /^spec\.failStrategy: Unsupported value/],
    ["WasmPlugin with an unknown phase", plugin, (o) => { o.spec.phase = "LOGGING"; }, /^spec\.phase: Unsupported value/],
    ["WasmPlugin with an ftp:// url (its CEL rule, Kubernetes' URL library)", plugin, (o) => { o.spec.url = "ftp://ghcr.io/tokentrace/filter:0.1.0"; }, /^spec\.url: .*url must have schema one of \[http, https, file, oci\]/],
    ["WasmPlugin with both selector and targetRefs (its CEL rule)", plugin, (o) => { o.spec.targetRefs = [{ kind: "Service", name: "vllm" }]; }, /^spec: .*only one of targetRefs or selector can be set/],
    ["EnvoyFilter whose match names a listener and a cluster (its oneOf)", envoyFilter, (o) => { o.spec.configPatches[1].match.cluster = { name: "outbound|8000||vllm" }; }, /^spec\.configPatches\[1\]\.match: .*must validate one and only one schema \(oneOf\)/],
    ["EnvoyFilter with an unknown patch operation", envoyFilter, (o) => { o.spec.configPatches[0].patch.operation = "APPEND"; }, /^spec\.configPatches\[0\]\.patch\.operation: Unsupported value/],
    ["StatefulSet with a string container port", statefulSet, (o) => { o.spec.template.spec.containers[0].ports[0].containerPort = "http"; }, /^spec\.template\.spec\.containers\[0\]\.ports\[0\]\.containerPort: .*must be of type integer/],
    ["StatefulSet with a memory request that is no quantity", statefulSet, (o) => { o.spec.template.spec.containers[0].resources.requests.memory = "128 MB"; }, /^spec\.template\.spec\.containers\[0\]\.resources\.requests\.memory: .*anyOf/],
    ["Service with a named port number", service, (o) => { o.spec.ports[0].port = "http"; }, /^spec\.ports\[0\]\.port: .*must be of type integer/],
    ["IstioOperator whose extraStatTags is not a list", one(all, "IstioOperator", "tokentrace"), (o) => { o.spec.meshConfig.defaultConfig.extraStatTags = "route"; }, /^spec\.meshConfig\.defaultConfig\.extraStatTags: .*must be of type array/],
    ["IstioOperator with a status (istioctl's IstioOperator has none)", one(all, "IstioOperator", "tokentrace"), (o) => { o.status = {}; }, /^status: unknown field/],
  ];
  for (const [what, original, breakIt, message] of broken) {
    it(`rejects a ${what}`, () => {
      const copy = structuredClone(original);
      breakIt(copy);
      const errors = errorsOf(copy);
      assert.ok(errors.some((e) => message.test(e)), errors.join("; "));
    });
  }

  it("every YAML file in a Kustomize directory is listed in its kustomization.yaml, and every listed file exists", () => {
    for (const dir of ["base", "mesh"]) {
      const k = parseYaml(readFileSync(join(ISTIO_DIR, dir, "kustomization.yaml"), "utf8")) as { resources: string[] };
      const files = yamlFiles(join(ISTIO_DIR, dir)).map((f) => f.slice(`istio/${dir}/`.length)).filter((f) => f !== "kustomization.yaml" && !isPatch(f));
      assert.deepEqual([...k.resources].sort(), files, `istio/${dir}/kustomization.yaml`);
    }
  });
});

describe("WasmPlugin and EnvoyFilter", () => {
  it("runs the filter in the STATS phase, fail-open, pinned by sha256, from an oci:// image, server side only", () => {
    assert.equal(plugin.metadata.namespace, "istio-system");
    assert.equal(plugin.spec.phase, "STATS");
    assert.equal(plugin.spec.failStrategy, "FAIL_OPEN");
    assert.equal(plugin.spec.type, "HTTP");
    assert.equal(plugin.spec.imagePullPolicy, "IfNotPresent");
    assert.match(plugin.spec.url, /^oci:\/\/[a-z0-9.-]+\/[a-z0-9/._-]+:[0-9A-Za-z._-]+$/);
    assert.match(plugin.spec.sha256, /^[0-9a-f]{64}$/);
    assert.equal(plugin.spec.targetRefs, undefined, "selector and targetRefs are exclusive");
    assert.deepEqual(Object.keys(plugin.spec.selector.matchLabels), ["tokentrace.dev/llm-workload"]);
    assert.deepEqual(plugin.spec.match, [{ mode: "SERVER" }]);
  });

  it("names the root id the filter registers, and the shipped filter.wasm starts with it and the default pluginConfig (emulated Envoy host)", async () => {
    const source = readFileSync(join(REPO, "filter/index.ts"), "utf8");
    assert.equal(/const PLUGIN_NAME = "([^"]+)"/.exec(source)?.[1], plugin.spec.pluginName);
    requireArtifact(FILTER_WASM);
    const vm = await loadFilter({ rootId: plugin.spec.pluginName, config: plugin.spec.pluginConfig });
    assert.equal(vm.configureAccepted, true);
    assert.equal(vm.failed, false);
  });

  it("ships a default pluginConfig that filter/config.schema.json accepts", () => {
    assert.equal(validatePluginConfig(plugin.spec.pluginConfig), true, JSON.stringify(validatePluginConfig.errors));
    // Control: the same validator refuses an unknown key.
    assert.equal(validatePluginConfig({ ...plugin.spec.pluginConfig, samplingRate: 1 }), false);
  });

  it("is not marked as managed by the control plane, which would delete it as drift", () => {
    assert.equal(plugin.metadata.labels?.[managedByLabel], undefined);
  });

  it("EnvoyFilter carries the same module, sha256, root id, configuration and workload selector as the WasmPlugin", () => {
    const [extension, slot] = envoyFilter.spec.configPatches;
    const wasm = extension.patch.value.typed_config;
    assert.equal(extension.applyTo, "EXTENSION_CONFIG");
    assert.equal(wasm["@type"], "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm");
    assert.equal(wasm.config.root_id, plugin.spec.pluginName);
    assert.equal(wasm.config.failure_policy, "FAIL_OPEN");
    assert.equal(wasm.config.vm_config.runtime, "envoy.wasm.runtime.v8");
    assert.equal(wasm.config.vm_config.code.remote.http_uri.uri, plugin.spec.url);
    assert.equal(wasm.config.vm_config.code.remote.sha256, plugin.spec.sha256);
    assert.deepEqual(JSON.parse(wasm.config.configuration.value), plugin.spec.pluginConfig);
    assert.deepEqual(envoyFilter.spec.workloadSelector.labels, plugin.spec.selector.matchLabels);
    assert.equal(envoyFilter.metadata.namespace, plugin.metadata.namespace);
    // The HTTP filter slot refers to the extension config by name (placement and type URLs:
    // test/istio/traffic-safety.test.ts).
    assert.equal(slot.applyTo, "HTTP_FILTER");
    assert.equal(slot.patch.value.name, extension.patch.value.name);
    assert.ok(slot.patch.value.config_discovery.type_urls.includes(wasm["@type"]));
    assert.equal(slot.match.context, extension.match.context);
  });

  it("says why the EnvoyFilter exists", () => {
    const text = readFileSync(join(ISTIO_DIR, "envoyfilter/envoyfilter.yaml"), "utf8");
    assert.match(text, /^# Why this exists: WasmPlugin needs/m);
  });
});

describe("mesh settings", () => {
  const operator = one(all, "IstioOperator", "tokentrace");

  it("extraStatTags are exactly the filter catalogue's tags", () => {
    assert.deepEqual(operator.spec.meshConfig.defaultConfig.extraStatTags, [...FILTER_STAT_TAGS]);
  });

  it("the workload patch labels the pod as the WasmPlugin selects it and sets increasing wasmcustom buckets; applied to a Deployment it stays valid", () => {
    const [patch] = readYaml(join(ISTIO_DIR, "mesh/llm-workload-patch.yaml")) as Manifest[];
    const template = patch!.spec.template.metadata;
    for (const [k, v] of Object.entries(plugin.spec.selector.matchLabels)) assert.equal(template.labels[k], v);
    const buckets = JSON.parse(template.annotations["sidecar.istio.io/statsHistogramBuckets"]) as Record<string, number[]>;
    assert.deepEqual(Object.keys(buckets), ["wasmcustom"]);
    const b = buckets.wasmcustom!;
    assert.ok(b.length > 10 && b.every((x, i) => x > 0 && (i === 0 || x > b[i - 1]!)), "positive and strictly increasing");
    // Covers sub-10 ms TTFT up to multi-second TPOT in µs.
    assert.ok(b[0]! <= 1 && b[b.length - 1]! >= 1_000_000);
    // Every GenAI advisory boundary is a bound, so the pipeline's gen_ai_* histograms lose none.
    const inUnit = (boundaries: readonly string[], perSecond: number): number[] => boundaries.map((x) => Math.round(Number(x) * perSecond));
    const wanted = [...inUnit(GENAI_BOUNDARIES.duration, 1000), ...inUnit(GENAI_BOUNDARIES.ttft, 1000), ...inUnit(GENAI_BOUNDARIES.tpot, 1_000_000)];
    assert.deepEqual(wanted.filter((x) => !b.includes(x)), []);
    const target = {
      apiVersion: "apps/v1", kind: "Deployment", metadata: { name: patch!.metadata.name },
      spec: { selector: { matchLabels: { app: "vllm" } }, template: { metadata: { labels: { app: "vllm", ...template.labels }, annotations: template.annotations }, spec: { containers: [{ name: "vllm", image: "vllm/vllm-openai:v0.11.0" }] } } },
    };
    assert.deepEqual(schemaErrors(target), []);
    // Control: the patch's annotations are checked too (a number is not a string).
    assert.ok(schemaErrors({ ...target, spec: { ...target.spec, template: { ...target.spec.template, metadata: { ...target.spec.template.metadata, annotations: { a: 1 } } } } }).length > 0);
  });
});

describe("control plane StatefulSet, Service, RBAC and config", () => {
  it("runs two or more replicas, rolls one pod at a time once the last one's hand-over is done, spreads them over zones and nodes, and a PodDisruptionBudget keeps one through a drain", () => {
    assert.ok(statefulSet.spec.replicas >= 2);
    assert.equal(statefulSet.spec.updateStrategy.type, "RollingUpdate");
    assert.equal(statefulSet.spec.updateStrategy.rollingUpdate?.maxUnavailable, undefined, "one pod at a time");
    // A restarted replica's targets change hands at a scrape boundary at most two membership
    // periods (a third of the lease each) and one interval after it joins (pipeline/handover.ts).
    const config = deployedConfig();
    assert.ok(config.ok, config.ok ? "" : config.errors.join("; "));
    const pipeline = pipelineConfigOf((config as { config: Config }).config.pipeline);
    assert.ok(pipeline.ok);
    const { sharding, scrape } = pipeline.config;
    assert.ok(statefulSet.spec.minReadySeconds * 1000 >= (2 * sharding.leaseDurationMs) / 3 + scrape.intervalMs, `minReadySeconds ${statefulSet.spec.minReadySeconds}`);
    const pdb = one(all, "PodDisruptionBudget", "tokentrace-control-plane");
    assert.equal(pdb.metadata.namespace, statefulSet.metadata.namespace);
    assert.deepEqual(pdb.spec.selector.matchLabels, statefulSet.spec.selector.matchLabels);
    assert.ok(pdb.spec.minAvailable >= 1 && pdb.spec.minAvailable < statefulSet.spec.replicas, "a drain can still evict one replica at a time");
    const spread = statefulSet.spec.template.spec.topologySpreadConstraints as Array<{ topologyKey: string; maxSkew: number; whenUnsatisfiable: string; labelSelector: { matchLabels: Record<string, string> } }>;
    assert.deepEqual(spread.map((c) => [c.topologyKey, c.maxSkew, c.whenUnsatisfiable]), [["topology.kubernetes.io/zone", 1, "ScheduleAnyway"], ["kubernetes.io/hostname", 1, "ScheduleAnyway"]]);
    for (const c of spread) assert.deepEqual(c.labelSelector.matchLabels, statefulSet.spec.selector.matchLabels);
    assert.equal(statefulSet.spec.serviceName, service.metadata.name);
  });

  it("keeps each replica's remote-write queue on a persistent volume of its own (a claim template, never an emptyDir), kept when scaled down", () => {
    const queueDir = (parseYaml(configMap.data["config.yaml"]) as { pipeline: { remoteWrite: { queueDir: string } } }).pipeline.remoteWrite.queueDir;
    const mount = (container.volumeMounts as Array<{ name: string; mountPath: string }>).find((v) => queueDir === v.mountPath || queueDir.startsWith(`${v.mountPath}/`));
    const claim = (statefulSet.spec.volumeClaimTemplates as Array<{ metadata: { name: string }; spec: { accessModes: string[]; resources: { requests: { storage: string } } } }>).find((c) => c.metadata.name === mount?.name);
    assert.ok(claim, `${queueDir} is on a volumeClaimTemplate`);
    assert.deepEqual(claim.spec.accessModes, ["ReadWriteOnce"]);
    assert.ok(!(statefulSet.spec.template.spec.volumes as Array<{ name: string }>).some((v) => v.name === mount?.name), "no pod volume shadows the claim");
    assert.deepEqual(statefulSet.spec.persistentVolumeClaimRetentionPolicy, { whenDeleted: "Retain", whenScaled: "Retain" });
  });

  it("everything of the control plane lives in its Namespace", () => {
    const ns = one(all, "Namespace", "tokentrace-system");
    for (const m of [statefulSet, service, serviceAccount, configMap, envConfigMap]) assert.equal(m.metadata.namespace, ns.metadata.name, `${m.kind} ${m.metadata.name}`);
  });

  it("Service selects the StatefulSet's pods and targets its named container port 8080", () => {
    const podLabels = statefulSet.spec.template.metadata.labels as Record<string, string>;
    assert.deepEqual(statefulSet.spec.selector.matchLabels, Object.fromEntries(Object.keys(statefulSet.spec.selector.matchLabels).map((k) => [k, podLabels[k]])));
    for (const [k, v] of Object.entries(service.spec.selector as Record<string, string>)) assert.equal(podLabels[k], v, `service selector ${k}`);
    const [port] = service.spec.ports;
    assert.equal(port.port, 8080);
    const containerPort = container.ports.find((p: { name: string }) => p.name === port.targetPort);
    assert.equal(containerPort?.containerPort, 8080);
  });

  it("runs as the ServiceAccount that the RBAC binding names", () => {
    assert.equal(statefulSet.spec.template.spec.serviceAccountName, serviceAccount.metadata.name);
    const binding = one(all, "ClusterRoleBinding", "tokentrace-control-plane");
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace }]);
    assert.deepEqual(binding.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "tokentrace-control-plane" });
  });

  it("RBAC grants exactly the Kubernetes calls the control plane makes, nothing else", () => {
    const role = one(all, "ClusterRole", "tokentrace-control-plane");
    const grants = new Set<string>();
    for (const rule of role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>) {
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}`);
    }
    // Read from the code: which client-node calls each module makes, on which resource.
    const source = (file: string): string => readFileSync(join(REPO, "control-plane/src", file), "utf8");
    const used = new Set<string>();
    const customVerbs: Record<string, string> = { list: "list", get: "get", create: "create", replace: "update", delete: "delete", patch: "patch" };
    const client = source("k8s/client.ts");
    const customCalls = [...client.matchAll(/this\.api\.(list|get|create|replace|delete|patch)\w*CustomObject(Status)?\(/g)].map((m) => `${customVerbs[m[1]!]}${m[2] === "Status" ? "/status" : ""}`);
    const watches = client.includes("this.watcher.watch(");
    // WasmPlugins: the informer (list, watch) and the reconciler (get, create, replace, delete).
    for (const verb of ["list", "get", "create", "update", "delete"]) assert.ok(customCalls.includes(verb), `client makes ${verb}`);
    for (const verb of ["list", "get", "create", "update", "delete", ...(watches ? ["watch"] : [])]) used.add(`${wasmPluginGroup}/${wasmPluginPlural}:${verb}`);
    // SamplingPolicies: the store's informer and writes (no get), and the leader's status patch.
    const store = source("k8s/policy-store.ts");
    assert.ok(!/options\.api\.get\(/.test(store), "the policy store never gets single objects");
    for (const verb of ["list", "watch", "create", "update", "delete"]) used.add(`tokentrace.dev/samplingpolicies:${verb}`);
    assert.ok(customCalls.includes("patch/status") && source("k8s/policy-status.ts").includes("patchStatus("));
    used.add("tokentrace.dev/samplingpolicies/status:patch");
    // History (ControllerRevisions) is granted by a Role in the control plane's namespace, not here.
    if (/makeInformer<V1Pod>/.test(source("scrape/discovery.ts"))) for (const v of ["list", "watch"]) used.add(`/pods:${v}`);
    assert.deepEqual([...grants].sort(), [...used].sort());
    assert.equal(wasmPluginVersion, "v1alpha1");
    assert.ok(![...grants].some((g) => g.includes("*")), "no wildcards");
  });

  it("policy history is granted exactly the ControllerRevision calls history.ts makes, by a Role in the namespace the revisions are kept in (the control plane's), never cluster-wide", () => {
    const role = one(all, "Role", "tokentrace-control-plane-history");
    const binding = one(all, "RoleBinding", "tokentrace-control-plane-history");
    const result = deployedConfig();
    assert.ok(result.ok);
    assert.equal(result.config.kubernetes.historyNamespace, statefulSet.metadata.namespace);
    assert.equal(role.metadata.namespace, result.config.kubernetes.historyNamespace);
    assert.equal(binding.metadata.namespace, role.metadata.namespace);
    assert.deepEqual(binding.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name });
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace }]);
    const grants = new Set<string>();
    for (const rule of role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>) {
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}`);
    }
    const history = readFileSync(join(REPO, "control-plane/src/k8s/history.ts"), "utf8");
    const used = new Set([...history.matchAll(/this\.api\.(list|create|delete)\w*ControllerRevision\w*\(/g)].map((m) => `apps/controllerrevisions:${m[1]!}`));
    assert.equal(used.size, 3);
    assert.deepEqual([...grants].sort(), [...used].sort());
    // No other rule grants ControllerRevisions anywhere.
    for (const m of all.filter((x) => ["ClusterRole", "Role"].includes(x.kind) && x.metadata.name !== role.metadata.name)) {
      for (const rule of m.rules as Array<{ resources: string[] }>) assert.ok(!rule.resources.includes("controllerrevisions"), `${m.kind} ${m.metadata.name as string}`);
    }
    const env = container.env as Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
    assert.equal(env.find((e) => e.name === "TOKENTRACE_HISTORY_NAMESPACE")?.valueFrom?.fieldRef?.fieldPath, "metadata.namespace");
  });

  it("leader election is granted exactly the Lease calls it makes, on its own Lease in its own namespace (a Role, not cluster-wide)", () => {
    const role = one(all, "Role", "tokentrace-control-plane-leader-election");
    const binding = one(all, "RoleBinding", "tokentrace-control-plane-leader-election");
    assert.equal(role.metadata.namespace, statefulSet.metadata.namespace);
    assert.deepEqual(binding.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name });
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace }]);
    const grants = new Set<string>();
    for (const rule of role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>) {
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}${rule.resourceNames ? `@${rule.resourceNames.join(",")}` : ""}`);
    }
    const client = readFileSync(join(REPO, "control-plane/src/k8s/lease-client.ts"), "utf8");
    const verbsOf: Record<string, string> = { read: "get", create: "create", replace: "update" };
    const result = deployedConfig();
    assert.ok(result.ok);
    const leaseName = result.config.kubernetes.leaderElection.leaseName;
    const used = new Set<string>();
    for (const m of client.matchAll(/this\.api\.(read|create|replace)NamespacedLease\(/g)) {
      const verb = verbsOf[m[1]!]!;
      // create cannot be limited by resourceNames (the name is not known before it exists).
      used.add(`coordination.k8s.io/leases:${verb}${verb === "create" ? "" : `@${leaseName}`}`);
    }
    assert.deepEqual([...grants].sort(), [...used].sort());
    const env = container.env as Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
    assert.equal(env.find((e) => e.name === "TOKENTRACE_LEADER_ELECTION_NAMESPACE")?.valueFrom?.fieldRef?.fieldPath, "metadata.namespace");
    assert.equal(env.find((e) => e.name === "TOKENTRACE_LEADER_ELECTION_IDENTITY")?.valueFrom?.fieldRef?.fieldPath, "metadata.name");
  });

  it("pipeline sharding is on, each replica named by its pod, and a Role grants exactly the member-Lease calls membership.ts makes, in the member Leases' own namespace (not the leader Lease's)", () => {
    const result = deployedConfig();
    assert.ok(result.ok, result.ok ? "" : result.errors.join("; "));
    const sharding = result.config.pipeline.sharding;
    assert.equal(result.config.pipeline.scrape?.kubernetes?.enabled, true);
    assert.equal(sharding?.enabled, true, "Kubernetes discovery with two replicas needs sharding");
    const env = container.env as Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
    assert.equal(env.find((e) => e.name === "TOKENTRACE_SHARDING_IDENTITY")?.valueFrom?.fieldRef?.fieldPath, "metadata.name");
    assert.equal(env.find((e) => e.name === "TOKENTRACE_SHARDING_NAMESPACE"), undefined, "the namespace is config.yaml's, not the pod's");
    const role = one(all, "Role", "tokentrace-control-plane-pipeline-members");
    const binding = one(all, "RoleBinding", "tokentrace-control-plane-pipeline-members");
    // The Role cannot name the member Leases, so it may write every Lease of its namespace: that
    // namespace is theirs alone (a Namespace shipped with them), never the leader Lease's.
    assert.equal(role.metadata.namespace, sharding?.namespace);
    assert.notEqual(sharding?.namespace, result.config.kubernetes.leaderElection.namespace === "" ? statefulSet.metadata.namespace : result.config.kubernetes.leaderElection.namespace);
    assert.notEqual(sharding?.namespace, statefulSet.metadata.namespace);
    assert.equal(one(all, "Namespace", sharding?.namespace as string).metadata.name, sharding?.namespace);
    assert.deepEqual(binding.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name });
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace }]);
    const grants = new Set<string>();
    for (const rule of role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>) {
      // Member Lease names follow the pods' generated names: no resourceNames can name them.
      assert.equal(rule.resourceNames, undefined);
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}`);
    }
    const client = readFileSync(join(REPO, "control-plane/src/pipeline/membership.ts"), "utf8");
    const verbsOf: Record<string, string> = { list: "list", read: "get", create: "create", replace: "update", delete: "delete" };
    const used = new Set([...client.matchAll(/this\.api\.(list|read|create|replace|delete)NamespacedLease\(/g)].map((m) => `coordination.k8s.io/leases:${verbsOf[m[1]!]!}`));
    assert.ok(used.size >= 4, `membership.ts makes ${[...used].join(", ")}`);
    assert.deepEqual([...grants].sort(), [...used].sort());
  });

  it("the ConfigMap's config.yaml loads with the control plane's own loader, with the StatefulSet's env and args", () => {
    const result = deployedConfig();
    assert.equal(result.ok, true, result.ok ? "" : result.errors.join("; "));
    if (!result.ok) return;
    assert.equal(result.source, result.path);
    assert.equal(result.config.store.mode, "kubernetes");
    assert.equal(result.config.listen.port, container.ports[0].containerPort);
    assert.equal(result.config.listen.host, "0.0.0.0");
    assert.equal(result.config.kubernetes.wasmPlugin.url, plugin.spec.url);
    assert.equal(result.config.kubernetes.wasmPlugin.sha256, plugin.spec.sha256);
    assert.equal(result.config.kubernetes.wasmPlugin.pluginName, plugin.spec.pluginName);
    assert.equal(result.config.pipeline.enabled, true);
    // Control: the loader does refuse a bad file.
    assert.equal(deployedConfig(() => "listen:\n  prot: 8080\n").ok, false);
  });

  it("the memory budgets of the shipped config, with the heap the process starts with, fit the old space NODE_OPTIONS gives V8, itself three quarters of the StatefulSet's memory limit", () => {
    const result = deployedConfig();
    assert.ok(result.ok);
    const limit = /^(\d+)Mi$/.exec(container.resources.limits.memory as string);
    assert.ok(limit, `limits.memory ${container.resources.limits.memory} in Mi`);
    const limitBytes = Number(limit[1]) * 1024 * 1024;
    const pipeline = enabledPipelineConfig(result.config.pipeline);
    assert.ok(pipeline);
    const traces = result.config.traces;
    const budgets = memoryBudgets({
      pipeline,
      dashboard: new DashboardSeries(),
      ...(traces.enabled ? { traces: { maxBytes: traces.maxBytes > 0 ? traces.maxBytes : defaultBudgetBytes(traces.memoryFraction, limitBytes) } } : {}),
    });
    const total = budgets.reduce((n, b) => n + b.bytes, 0);
    // V8 is told to collect within three quarters of the limit (its own default is all of it, garbage
    // included), and the budgets must fit in that heap too, or the process runs out of heap first.
    const heapOption = /(?:^| )--max-old-space-size=(\d+)(?: |$)/.exec((envConfigMap.data as Record<string, string>).NODE_OPTIONS ?? "");
    assert.ok(heapOption, "the env ConfigMap's NODE_OPTIONS sets --max-old-space-size");
    const heapBytes = Number(heapOption[1]) * 1024 * 1024;
    assert.ok(heapBytes <= 0.75 * limitBytes, `old space ${heapOption[1]} MiB leaves a quarter of ${limitBytes / 2 ** 20} MiB to buffers, code and stacks`);
    // What `node` holds before any part does (the control plane's modules, Express, the Kubernetes client): about 50 MiB measured in the soak bench.
    const startHeapBytes = 64 * 1024 * 1024;
    assert.ok(total + startHeapBytes <= heapBytes, `budgets ${(total / 2 ** 20).toFixed(0)} MiB + ${startHeapBytes / 2 ** 20} MiB at start over ${heapBytes / 2 ** 20} MiB: ${budgets.map((b) => `${b.part} ${(b.bytes / 2 ** 20).toFixed(1)}`).join(", ")}`);
    assert.equal(memoryLimitWarning(budgets, heapBytes), undefined, "so the control plane starts without the over-limit warning");
  });

  it("the WasmPlugins the control plane creates with this config are valid and pin the same module as the base one", () => {
    const result = deployedConfig();
    assert.ok(result.ok);
    const settings: Config["kubernetes"]["wasmPlugin"] = result.config.kubernetes.wasmPlugin;
    const targets: Policy["target"][] = [
      { namespace: "llm", selector: { matchLabels: { app: "vllm" } } },
      { namespace: "llm", targetRefs: [{ kind: "Service", group: "", name: "vllm" }] },
    ];
    for (const target of targets) {
      const policy: Policy = { name: "chat", target, pluginConfig: plugin.spec.pluginConfig };
      const created = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, policy.pluginConfig, "1", settings);
      assert.deepEqual(schemaErrors(created as unknown as Record<string, unknown>), []);
      for (const key of ["url", "sha256", "pluginName", "phase", "failStrategy"]) assert.equal(created.spec[key], plugin.spec[key], key);
      assert.deepEqual(created.spec.match, plugin.spec.match);
    }
  });

  it("the config file is mounted where --config points, and writable paths are volumes (read-only root)", () => {
    const args = container.args as string[];
    const configPath = args[args.indexOf("--config") + 1]!;
    const mount = container.volumeMounts.find((v: { mountPath: string }) => configPath.startsWith(`${v.mountPath}/`));
    const volume = statefulSet.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
    assert.equal(volume.configMap.name, configMap.metadata.name);
    assert.ok(volume.configMap.items.some((i: { key: string; path: string }) => i.key === "config.yaml" && configPath === `${mount.mountPath}/${i.path}`));
    const config = parseYaml(configMap.data["config.yaml"]) as { store: { mode: string; path?: string }; pipeline: { remoteWrite: { queueDir: string } } };
    // Kubernetes mode keeps no policy file: SamplingPolicy objects are the record.
    assert.equal(config.store.mode, "kubernetes");
    assert.equal(config.store.path, undefined);
    assert.ok(!(container.volumeMounts as Array<{ mountPath: string }>).some((v) => v.mountPath.includes("polic")), "no policy volume");
    const mountOf = (p: string): { name: string; readOnly?: boolean } | undefined => container.volumeMounts.find((v: { mountPath: string }) => p === v.mountPath || p.startsWith(`${v.mountPath}/`));
    for (const p of [config.pipeline.remoteWrite.queueDir]) {
      const m = mountOf(p);
      assert.ok(m && m.readOnly !== true, `${p} is on a writable volume`);
    }
  });

  it("every environment variable is one the loader reads; the token comes from a Secret, never a literal", () => {
    const names = [...Object.keys(envConfigMap.data), ...(container.env as Array<{ name: string }>).map((e) => e.name)];
    // The runtime's own, read before the control plane starts: node's NODE_OPTIONS (heap limits) and
    // glibc's MALLOC_ARENA_MAX.
    const runtime = new Set(["NODE_OPTIONS", "MALLOC_ARENA_MAX"]);
    for (const n of names) assert.ok(n in envOverrides || runtime.has(n), `${n} is not read by control-plane/src/config.ts`);
    assert.deepEqual(container.envFrom, [{ configMapRef: { name: envConfigMap.metadata.name } }]);
    const token = (container.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>).find((e) => e.name === "TOKENTRACE_API_TOKENS");
    for (const e of container.env as Array<{ name: string; value?: string }>) assert.equal(e.value, undefined, `${e.name} comes from a reference, not a literal`);
    assert.equal(token?.value, undefined);
    assert.deepEqual(token?.valueFrom, { secretKeyRef: { name: "tokentrace-api-tokens", key: "tokens" } });
    for (const m of all) assert.notEqual(m.kind, "Secret", `${m.file} must not ship a Secret`);
    assert.ok(!/TOKENTRACE_API_TOKENS/.test(JSON.stringify(envConfigMap.data)));
  });

  it("runs non-root with a read-only root filesystem, no privilege escalation, no capabilities, and resources set", () => {
    const pod = statefulSet.spec.template.spec.securityContext;
    assert.equal(pod.runAsNonRoot, true);
    assert.ok(pod.runAsUser > 0);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ["ALL"]);
    assert.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory);
    // SIGTERM handling needs shutdownGraceMs inside the pod's grace period.
    const config = parseYaml(configMap.data["config.yaml"]) as { shutdownGraceMs: number };
    assert.ok(statefulSet.spec.template.spec.terminationGracePeriodSeconds * 1000 > config.shutdownGraceMs);
  });

  it("probes and the scrape annotation hit routes the control plane serves, on its port", async () => {
    const portByName = new Map((container.ports as Array<{ name: string; containerPort: number }>).map((p) => [p.name, p.containerPort]));
    const probes = [container.readinessProbe.httpGet, container.livenessProbe.httpGet] as Array<{ path: string; port: string }>;
    assert.deepEqual(probes.map((p) => p.path), ["/readyz", "/healthz"]);
    for (const p of probes) assert.equal(portByName.get(p.port), 8080);
    const annotations = statefulSet.spec.template.metadata.annotations as Record<string, string>;
    assert.equal(Number(annotations["prometheus.io/port"]), 8080);
    const app = await startTestApp();
    try {
      for (const path of [...probes.map((p) => p.path), annotations["prometheus.io/path"]!]) {
        const res = await fetch(`${app.url}${path}`);
        assert.equal(res.status, 200, path);
        await res.arrayBuffer();
      }
      const unknown = await fetch(`${app.url}/ready`);
      assert.equal(unknown.status, 404, "control: an unserved path is 404");
      await unknown.arrayBuffer();
    } finally {
      await app.close();
    }
  });
});
