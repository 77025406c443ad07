// The SamplingPolicy CRD (istio/base/samplingpolicy-crd.yaml): generated from the schemas the REST
// API and the filter use, accepted by the (emulated) API server as a structural schema whose CEL
// compiles, and holding a policy applied with kubectl to the same rules as one written through the
// REST API: a corpus of policies gets the same verdict from validatePolicy and from the emulated
// API server creating the SamplingPolicy (strict field validation, as kubectl apply sends it).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { validatePolicy } from "../../control-plane/src/policy/validate.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { CRD_FILE, crdFileText } from "../../scripts/manifests.js";
import { startKubeEmulator, type KubeEmulator } from "../support/kube-emulator/index.js";
import { schemaErrors } from "../support/kube-schemas.js";
import { samplePolicy } from "../control-plane/helpers.js";
import { REPO, readYaml } from "./support.js";

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const [crd] = readYaml(join(REPO, CRD_FILE)) as [Record<string, unknown>];

/** The SamplingPolicy a REST policy document becomes: name and target namespace move into metadata. */
function asSamplingPolicy(policy: Record<string, unknown>): Record<string, unknown> {
  const { name, target, ...rest } = policy as { name?: unknown; target?: Record<string, unknown> };
  const { namespace, ...targetRest } = target ?? {};
  return {
    apiVersion: "tokentrace.dev/v1alpha1",
    kind: "SamplingPolicy",
    metadata: { name, namespace: typeof namespace === "string" ? namespace : "llm" },
    spec: { ...(target === undefined ? {} : { target: targetRest }), ...rest },
  };
}

type Edit = (p: Record<string, any>) => void; // eslint-disable-line @typescript-eslint/no-explicit-any
const corpus: Array<[string, Edit]> = [
  ["a selector policy", () => undefined],
  ["a targetRefs policy", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "edge" }] }; }],
  ["adaptive settings", (p) => { p.adaptive = { targetTracesPerSecond: 2, floorRate: 0.001 }; }],
  ["spans and llm settings", (p) => { p.pluginConfig.spans = { cluster: "outbound|4318||otel.svc.cluster.local" }; p.pluginConfig.llm = { enabled: true, pathSuffixes: ["/v1/chat/completions"] }; }],
  ["per-protocol path matchers", (p) => { p.pluginConfig.llm = { protocols: { kserve: { pathPrefixes: ["/triton/v2/models/"] }, tgi: { pathSuffixes: [] } } }; }],
  ["content capture with pseudonyms", (p) => { p.pluginConfig.spans = { cluster: "otel", content: { enabled: true, maxBytes: 1024, routes: [{ routeName: "chat", enabled: false }], pseudonyms: { refreshIntervalMs: 30000 } } }; }],
  ["an unknown protocol", (p) => { p.pluginConfig.llm = { protocols: { vllm: { pathSuffixes: ["/x"] } } }; }],
  ["a content size under 256 bytes", (p) => { p.pluginConfig.spans = { cluster: "otel", content: { maxBytes: 100 } }; }],
  ["a pseudonym salt (the key lives with the control plane, never in a policy)", (p) => { p.pluginConfig.spans = { cluster: "otel", content: { pseudonyms: { salt: "s".repeat(32) } } }; }],
  ["a waypoint's Service (group absent)", (p) => { p.target = { namespace: "llm", targetRefs: [{ kind: "Service", name: "vllm" }] }; }],
  ["a Service in the core group (Istio's CanonicalGroup of an empty group)", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "core", kind: "Service", name: "vllm" }] }; }],
  ["a group that is no DNS subdomain", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "Gateway.Networking.K8s.io", kind: "Gateway", name: "waypoint" }] }; }],
  ["a ServiceEntry", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "networking.istio.io", kind: "ServiceEntry", name: "external-llm" }] }; }],
  ["the istio-waypoint GatewayClass", (p) => { p.target = { namespace: "istio-system", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "GatewayClass", name: "istio-waypoint" }] }; }],
  ["a kind Istio never attaches to (HTTPRoute)", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "chat" }] }; }],
  ["a Deployment", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "apps", kind: "Deployment", name: "vllm" }] }; }],
  ["a Gateway without its group", (p) => { p.target = { namespace: "llm", targetRefs: [{ kind: "Gateway", name: "waypoint" }] }; }],
  ["a Service with the Gateway API group", (p) => { p.target = { namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Service", name: "vllm" }] }; }],
  ["a ServiceEntry without its group", (p) => { p.target = { namespace: "llm", targetRefs: [{ kind: "ServiceEntry", name: "external-llm" }] }; }],
  ["a GatewayClass other than istio-waypoint", (p) => { p.target = { namespace: "istio-system", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "GatewayClass", name: "istio" }] }; }],
  ["both selector and targetRefs", (p) => { p.target.targetRefs = [{ kind: "Service", name: "x" }]; }],
  ["neither selector nor targetRefs", (p) => { delete p.target.selector; }],
  ["a rate above 1", (p) => { p.pluginConfig.sampling.routes[0].rate = 1.5; }],
  ["a negative default rate", (p) => { p.pluginConfig.sampling.defaultRate = -0.1; }],
  ["a route rule with no matcher", (p) => { p.pluginConfig.sampling.routes = [{ rate: 0.5 }]; }],
  ["a label key with a space", (p) => { p.target.selector.matchLabels = { "bad key": "x" }; }],
  ["a label value of 64 characters", (p) => { p.target.selector.matchLabels = { app: "v".repeat(64) }; }],
  ["a reserved token-trace header (authorization)", (p) => { p.pluginConfig.headers = { tokenTraceId: "authorization" }; }],
  ["a reserved token-trace header (x-envoy- prefix)", (p) => { p.pluginConfig.headers = { tokenTraceId: "x-envoy-trace" }; }],
  ["policySource inside a policy", (p) => { p.pluginConfig.policySource = { cluster: "c", workload: "w" }; }],
  ["an unknown pluginConfig field", (p) => { p.pluginConfig.samplingRate = 1; }],
  ["an unknown top-level field", (p) => { p.owner = "me"; }],
  ["a zero adaptive target (exclusive minimum)", (p) => { p.adaptive = { targetTracesPerSecond: 0 }; }],
  ["a 54-character name", (p) => { p.name = "n".repeat(54); }],
  ["a name with upper case", (p) => { p.name = "Chat"; }],
  ["a fractional maxRoutes", (p) => { p.pluginConfig.stats = { maxRoutes: 1.5 }; }],
];

describe("SamplingPolicy CRD", () => {
  let emulator: KubeEmulator;
  before(async () => {
    emulator = await startKubeEmulator();
  });
  after(() => emulator.close());

  it("is what `make manifests` generates from the policy and filter schemas (regenerate after changing either)", () => {
    assert.equal(readFileSync(join(REPO, CRD_FILE), "utf8"), crdFileText());
  });

  it("is a valid CustomResourceDefinition (Kubernetes' OpenAPI definition, no unknown field) that the emulated API server accepts as structural and Establishes", async () => {
    assert.deepEqual(schemaErrors(crd), []);
    // Control: a JSON-Schema keyword JSONSchemaProps does not have is an unknown field.
    const misspelt = structuredClone(crd) as { spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] } };
    misspelt.spec.versions[0]!.schema.openAPIV3Schema.propertyNames = {};
    assert.deepEqual(schemaErrors(misspelt as unknown as Record<string, unknown>), ["spec.versions[0].schema.openAPIV3Schema.propertyNames: unknown field"]);
    const res = await fetch(`${emulator.url}${crdPath}?fieldValidation=Strict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(crd) });
    const body = (await res.json()) as { status?: { conditions?: { type: string; status: string }[] }; message?: string };
    assert.equal(res.status, 201, body.message);
    assert.deepEqual(body.status?.conditions?.map((c) => `${c.type}=${c.status}`), ["NamesAccepted=True", "Established=True"]);
  });

  for (const [what, edit] of corpus) {
    it(`gives ${what} the same verdict as the REST API`, async () => {
      const policy = structuredClone(samplePolicy("chat")) as unknown as Record<string, unknown>;
      edit(policy);
      const rest = validatePolicy(structuredClone(policy));
      const object = asSamplingPolicy(policy);
      const namespace = (object.metadata as { namespace: string }).namespace;
      const res = await fetch(`${emulator.url}/apis/tokentrace.dev/v1alpha1/namespaces/${namespace}/samplingpolicies?fieldValidation=Strict&dryRun=All`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(object),
      });
      const body = (await res.json()) as { message?: string };
      assert.equal(res.status < 300, rest.ok, `REST ${rest.ok ? "accepts" : `refuses (${JSON.stringify(rest.ok ? [] : rest.errors)})`}, the API server answers ${res.status} ${body.message ?? ""}`);
    });
  }

  it("accepts only the targetRefs Istio attaches a policy to (pilot/pkg/model/policyattachment.go at 86c9f01f), naming the field", () => {
    const verdict = (target: Record<string, unknown>): string[] => {
      const r = validatePolicy({ ...samplePolicy("chat"), target });
      return r.ok ? [] : r.errors.map((e) => `${e.field}: ${e.reason}`);
    };
    assert.deepEqual(verdict({ namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "waypoint" }, { kind: "Service", name: "vllm" }, { group: "", kind: "Service", name: "vllm" }, { group: "core", kind: "Service", name: "vllm" }, { group: "networking.istio.io", kind: "ServiceEntry", name: "e" }] }), []);
    assert.match(verdict({ namespace: "llm", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "chat" }] }).join(), /^target\.targetRefs\[0\]\.kind: must be one of "Gateway", "GatewayClass", "Service", "ServiceEntry"$/);
    assert.deepEqual(verdict({ namespace: "llm", targetRefs: [{ kind: "Gateway", name: "waypoint" }, { group: "gateway.networking.k8s.io", kind: "Service", name: "vllm" }] }), [
      'target.targetRefs[0].group: must be "gateway.networking.k8s.io" for kind Gateway (what Istio attaches)',
      'target.targetRefs[1].group: must be empty, absent or "core" for kind Service (what Istio attaches)',
    ]);
    assert.deepEqual(verdict({ namespace: "istio-system", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "GatewayClass", name: "istio" }] }), [
      'target.targetRefs[0].name: must be "istio-waypoint": the only GatewayClass Istio attaches a policy to',
    ]);
  });

  it("reads back a created policy exactly as the REST document (no defaults stored, nothing pruned)", async () => {
    const policy: Policy = { ...samplePolicy("roundtrip"), adaptive: { targetTracesPerSecond: 1 } };
    const res = await fetch(`${emulator.url}/apis/tokentrace.dev/v1alpha1/namespaces/llm/samplingpolicies?fieldValidation=Strict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(asSamplingPolicy(policy as unknown as Record<string, unknown>)) });
    const stored = (await res.json()) as { spec: unknown; status?: unknown };
    assert.equal(res.status, 201);
    const { name: _name, target, ...rest } = policy;
    const { namespace: _ns, ...targetRest } = target;
    assert.deepEqual(stored.spec, { target: targetRest, ...rest });
    assert.equal(stored.status, undefined);
  });
});
