// The WasmPlugin the control plane wants for a policy: one per policy, named
// tokentrace-<policy>, in the policy's namespace, marked as ours by labels, carrying the
// effective pluginConfig, and the url/sha256/phase/failStrategy/pluginName from the config. A
// policy that turns content capture on loads the content module instead (same root id and
// settings, its own url and sha256): the default module captures nothing.
import type { FieldError, PluginConfig, PolicyRecord } from "../policy/model.js";
import { hasSelector } from "../policy/model.js";

export const wasmPluginGroup = "extensions.istio.io";
export const wasmPluginVersion = "v1alpha1";
export const wasmPluginPlural = "wasmplugins";

/** Label that marks WasmPlugins this control plane owns (the informer's selector). */
export const managedByLabel = "app.kubernetes.io/managed-by";
export const managedByValue = "tokentrace-control-plane";
/** Label naming the policy a WasmPlugin belongs to. */
export const policyLabel = "tokentrace.dev/policy";
/** Annotations recording what was applied. */
export const policyVersionAnnotation = "tokentrace.dev/policy-version";
export const configVersionAnnotation = "tokentrace.dev/config-version";
/**
 * The whole policy as JSON (base pluginConfig, target, adaptive settings), so the WasmPlugins
 * alone can rebuild the policy store when the control plane lost its disk.
 */
export const policyAnnotation = "tokentrace.dev/policy";

/** The selector that lists our WasmPlugins. */
export const ownedSelector = `${managedByLabel}=${managedByValue}`;

/** What every WasmPlugin the control plane writes carries (the `kubernetes.wasmPlugin` config section). */
export interface WasmPluginSettings {
  url: string;
  sha256: string;
  pluginName: string;
  phase: "STATS" | "AUTHN" | "AUTHZ" | "UNSPECIFIED_PHASE";
  failStrategy: "FAIL_OPEN" | "FAIL_CLOSE" | "FAIL_RELOAD";
  /**
   * A `kubernetes.io/dockerconfigjson` Secret for a private registry ("" = none). Istio looks it
   * up in the WasmPlugin's own namespace whatever the name says (istio/istio 86c9f01f
   * pilot/pkg/model/extensions.go rewrites the namespace to the plugin's), so it must exist in
   * every namespace a policy targets; a name that is not found makes istiod send an empty
   * credential and istio-agent refuse the fetch (pkg/wasm/convert.go rewriteVMConfig).
   */
  imagePullSecret: string;
}

/** The content-capture module (build/filter-content.wasm): the `kubernetes.contentWasmPlugin` config section. */
export interface ContentModuleSettings {
  /** "" = no content module deployed. */
  url: string;
  sha256: string;
}

/** No content module configured. */
export const noContentModule: ContentModuleSettings = { url: "", sha256: "" };

/**
 * Where `config` turns content capture on (filter/config.schema.json `spans.content`: `enabled`
 * for every route, or a route rule with `enabled: true`), as pluginConfig field paths; [] = off.
 */
export function contentCaptureFields(config: PluginConfig): string[] {
  const spans = config.spans as { content?: { enabled?: unknown; routes?: unknown } } | undefined;
  const content = spans?.content;
  if (content === undefined || content === null || typeof content !== "object") return [];
  const fields: string[] = [];
  if (content.enabled === true) fields.push("pluginConfig.spans.content.enabled");
  if (Array.isArray(content.routes)) {
    content.routes.forEach((rule: unknown, i) => {
      if (typeof rule === "object" && rule !== null && (rule as { enabled?: unknown }).enabled === true) fields.push(`pluginConfig.spans.content.routes[${i}].enabled`);
    });
  }
  return fields;
}

/**
 * The check Kubernetes mode adds to policy admission: capture on with no content module
 * configured is refused (a REST write gets a 400; an object applied with kubectl gets
 * Accepted=False and its last accepted generation stays in force), naming the field and why.
 */
export function contentModuleProblems(config: PluginConfig, content: ContentModuleSettings): FieldError[] {
  if (content.url !== "") return [];
  return contentCaptureFields(config).map((field) => ({
    field,
    reason: "turns content capture on, but no content module is configured (kubernetes.contentWasmPlugin.url, TOKENTRACE_CONTENT_WASM_URL): the default module captures nothing",
  }));
}

/** A WasmPlugin object as the API returns it (only the fields we read or write are typed). */
export interface WasmPlugin {
  apiVersion: string;
  kind: "WasmPlugin";
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec: Record<string, unknown>;
  [key: string]: unknown;
}

/** `namespace/name`, the cache and queue key. */
export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The WasmPlugin name for a policy. */
export function wasmPluginName(policyName: string): string {
  return `tokentrace-${policyName}`;
}

/** Builds the desired WasmPlugin: the content module's url and sha256 when `config` captures and one is configured. */
export function desiredWasmPlugin(record: PolicyRecord, config: PluginConfig, configVersion: string, plugin: WasmPluginSettings, content: ContentModuleSettings = noContentModule): WasmPlugin {
  const target = record.policy.target;
  const spec: Record<string, unknown> = hasSelector(target)
    ? { selector: { matchLabels: { ...target.selector.matchLabels } } }
    : { targetRefs: target.targetRefs.map((r) => ({ ...r })) };
  // Without a content module such a policy is refused at admission (contentModuleProblems); were
  // one to get here anyway, the default module is the safe side: it captures nothing.
  const module = content.url !== "" && contentCaptureFields(config).length > 0 ? content : plugin;
  spec.url = module.url;
  if (module.sha256 !== "") spec.sha256 = module.sha256;
  if (plugin.imagePullSecret !== "") spec.imagePullSecret = plugin.imagePullSecret;
  spec.pluginName = plugin.pluginName;
  spec.phase = plugin.phase;
  spec.failStrategy = plugin.failStrategy;
  // Inbound (server-side) traffic only: a WasmPlugin without `match` also runs on the workload's
  // outbound listeners (istio pilot/pkg/model/extensions.go matchMode: SERVER <-> sidecar inbound).
  spec.match = [{ mode: "SERVER" }];
  spec.pluginConfig = config;
  return {
    apiVersion: `${wasmPluginGroup}/${wasmPluginVersion}`,
    kind: "WasmPlugin",
    metadata: {
      name: wasmPluginName(record.policy.name),
      namespace: target.namespace,
      labels: { [managedByLabel]: managedByValue, [policyLabel]: record.policy.name },
      annotations: {
        [policyVersionAnnotation]: record.version,
        [configVersionAnnotation]: configVersion,
        [policyAnnotation]: JSON.stringify(record.policy),
      },
    },
    spec,
  };
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** True when `actual` has the desired spec and our labels/annotations (other metadata may differ). */
export function matchesDesired(desired: WasmPlugin, actual: WasmPlugin): boolean {
  if (canonical(desired.spec) !== canonical(actual.spec)) return false;
  for (const field of ["labels", "annotations"] as const) {
    const want = desired.metadata[field] ?? {};
    const have = actual.metadata[field] ?? {};
    for (const [k, v] of Object.entries(want)) if (have[k] !== v) return false;
  }
  return true;
}

/** `desired` written over `actual`: our spec, labels and annotations, their other metadata kept. */
export function mergedForUpdate(desired: WasmPlugin, actual: WasmPlugin): WasmPlugin {
  return {
    ...actual,
    metadata: {
      ...actual.metadata,
      labels: { ...(actual.metadata.labels ?? {}), ...(desired.metadata.labels ?? {}) },
      annotations: { ...(actual.metadata.annotations ?? {}), ...(desired.metadata.annotations ?? {}) },
    },
    spec: desired.spec,
  };
}
