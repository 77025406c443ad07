// The filter image from a private registry: the control plane names a pull Secret on every
// WasmPlugin it writes, istio/private-registry names it on the base WasmPlugin, and emulated
// istiod and istio-agent (test/istio/emulated-istio-agent.ts, rules cited there) pull build/oci
// from a local registry that answers 401 without credentials.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { loadConfig } from "../../control-plane/src/config.js";
import { desiredWasmPlugin } from "../../control-plane/src/k8s/wasmplugin.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { requireArtifact } from "../filter/support.js";
import { schemaErrors } from "../support/kube-schemas.js";
import { convertWasmExtensionConfig, wasmConfigOfPlugin, type SecretObject } from "./emulated-istio-agent.js";
import { RBAC_HTTP_TYPE, WASM_HTTP_TYPE } from "./emulated-xds.js";
import { startOciRegistry, type OciRegistry } from "./oci-registry.js";
import { ISTIO_DIR, REPO, manifests, one, readYaml, type Manifest } from "./support.js";

const OCI_DIR = join(REPO, "build/oci");
const CREDENTIALS = { username: "puller", password: "registry-token-0123456789" };
const all = manifests();
const basePlugin = one(all, "WasmPlugin", "tokentrace");
const waypointPlugin = one(all, "WasmPlugin", "tokentrace-waypoint");
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");

let registry: OciRegistry;
before(async () => {
  requireArtifact(join(OCI_DIR, "index.json"));
  registry = await startOciRegistry(OCI_DIR, "tokentrace/filter", CREDENTIALS);
});
after(() => registry.close());
// The image names ghcr.io; the local registry stands in for it.
const toRegistry = (host: string): string => (host === "ghcr.io" ? registry.host : host);

/** A kubernetes.io/dockerconfigjson Secret with credentials for `server`. */
function dockerSecret(server: string, credentials = CREDENTIALS): SecretObject {
  const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64");
  return { type: "kubernetes.io/dockerconfigjson", data: { ".dockerconfigjson": Buffer.from(JSON.stringify({ auths: { [server]: { auth } } })) } };
}

/** The WasmPlugin spec the control plane writes for a policy in `namespace`, configured by `env`. */
function controlPlaneSpec(env: Record<string, string>, namespace = "llm"): { url: string; sha256?: string; failStrategy: string; imagePullSecret?: string } {
  const loaded = loadConfig([], { ...envConfigMap.data, ...env });
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
  const policy: Policy = { name: "chat", target: { namespace, selector: { matchLabels: { app: "vllm" } } }, pluginConfig: {} };
  return desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, {}, "1", loaded.config.kubernetes.wasmPlugin).spec as ReturnType<typeof controlPlaneSpec>;
}

/** Strategic merge of a patch that only sets map fields (what the component's patches do). */
function merge(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(target);
  for (const [k, v] of Object.entries(patch)) {
    out[k] = typeof v === "object" && v !== null && !Array.isArray(v) && typeof out[k] === "object" ? merge(out[k] as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

describe("private registries", () => {
  it("the control plane names TOKENTRACE_WASM_IMAGE_PULL_SECRET on every WasmPlugin it writes, and no Secret when it is unset", () => {
    assert.equal(controlPlaneSpec({ TOKENTRACE_WASM_IMAGE_PULL_SECRET: "tokentrace-registry" }).imagePullSecret, "tokentrace-registry");
    assert.equal(controlPlaneSpec({ TOKENTRACE_WASM_IMAGE_PULL_SECRET: "tokentrace-registry" }, "edge").imagePullSecret, "tokentrace-registry");
    assert.equal("imagePullSecret" in controlPlaneSpec({}), false);
    // A Secret's name only (a DNS subdomain): a credential pasted into the setting is refused, not written out.
    const refused = loadConfig([], { TOKENTRACE_WASM_IMAGE_PULL_SECRET: '{"auths":{}}' });
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? "" : refused.errors.join("; "), /^kubernetes\.wasmPlugin\.imagePullSecret: must match pattern/);
  });

  it("emulated istiod and istio-agent: the module loads with the Secret in the WasmPlugin's namespace; elsewhere, of another type or absent it does not (and traffic stays up)", async () => {
    const spec = controlPlaneSpec({ TOKENTRACE_WASM_IMAGE_PULL_SECRET: "tokentrace-registry" });
    const pull = (secrets: Map<string, SecretObject>, s = spec) => convertWasmExtensionConfig(wasmConfigOfPlugin(s, { namespace: "llm", secrets }), toRegistry);
    const loaded = await pull(new Map([["llm/tokentrace-registry", dockerSecret("ghcr.io")]]));
    assert.equal(loaded.typeUrl, WASM_HTTP_TYPE);
    const cases: Array<[string, Map<string, SecretObject>, string]> = [
      ["only in istio-system", new Map([["istio-system/tokentrace-registry", dockerSecret("ghcr.io")]]), "missing image pulling secret"],
      ["an Opaque Secret", new Map([["llm/tokentrace-registry", { ...dockerSecret("ghcr.io"), type: "Opaque" }]]), "missing image pulling secret"],
      ["credentials for another registry", new Map([["llm/tokentrace-registry", dockerSecret("registry.example")]]), "status 401"],
      ["wrong credentials", new Map([["llm/tokentrace-registry", dockerSecret("ghcr.io", { username: "puller", password: "wrong" })]]), "status 401"],
    ];
    for (const [what, secrets, error] of cases) {
      const out = await pull(secrets);
      assert.equal(out.typeUrl, RBAC_HTTP_TYPE, what);
      if (out.typeUrl === RBAC_HTTP_TYPE) assert.deepEqual([out.allowAll, out.error.includes(error)], [true, true], `${what}: ${out.error}`);
    }
    // Without a pull secret the private registry refuses the anonymous pull.
    const anonymous = await convertWasmExtensionConfig(wasmConfigOfPlugin(controlPlaneSpec({})), toRegistry);
    assert.equal(anonymous.typeUrl === RBAC_HTTP_TYPE && anonymous.error.includes("status 401"), true);
  });

  it("istio/private-registry names the Secret on both base WasmPlugins and in the control plane's env; the patched objects stay valid and agree", () => {
    const dir = join(ISTIO_DIR, "private-registry");
    const component = parseYaml(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { kind: string; patches: { path: string }[] };
    assert.equal(component.kind, "Component");
    const patches = component.patches.map((p) => readYaml(join(dir, p.path))[0] as Manifest);
    const patched = (target: Manifest): Record<string, unknown> => {
      const patch = patches.find((p) => p.kind === target.kind && p.metadata.name === target.metadata.name && p.metadata.namespace === target.metadata.namespace);
      assert.ok(patch, `a patch for ${target.kind} ${target.metadata.name}`);
      const { file: _f, ...object } = target;
      return merge(object, patch as unknown as Record<string, unknown>);
    };
    const plugin = patched(basePlugin) as { spec: { imagePullSecret: string } };
    const waypoint = patched(waypointPlugin) as { spec: { imagePullSecret: string } };
    const env = patched(envConfigMap) as { data: Record<string, string> };
    assert.deepEqual(schemaErrors(plugin), []);
    assert.deepEqual(schemaErrors(waypoint), []);
    assert.equal(waypoint.spec.imagePullSecret, "tokentrace-registry");
    assert.deepEqual(schemaErrors(env), []);
    assert.equal(plugin.spec.imagePullSecret, "tokentrace-registry");
    assert.equal(controlPlaneSpec(env.data).imagePullSecret, plugin.spec.imagePullSecret);
    // The base alone names no Secret: a name that does not resolve would keep the filter from loading.
    assert.equal(basePlugin.spec.imagePullSecret, undefined);
    assert.equal(waypointPlugin.spec.imagePullSecret, undefined);
  });
});
