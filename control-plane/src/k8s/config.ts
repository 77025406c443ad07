// Kubernetes mode's configuration section (`kubernetes`): the cluster, the WasmPlugins written,
// resync and backoff, and the leader election among replicas.
import type { ConfigSection } from "../config-section.js";
import { leaderElectionProblems } from "./leader-election.js";
import type { ContentModuleSettings, WasmPluginSettings } from "./wasmplugin.js";

/** The `kubernetes` section. */
export interface KubernetesConfig {
  /** kubeconfig path; empty = in-cluster service account, else the client's default lookup. */
  kubeconfig: string;
  /** Namespace to manage WasmPlugins in; empty = every namespace a policy names. */
  namespace: string;
  wasmPlugin: WasmPluginSettings;
  /**
   * The content-capture module (build/filter-content.wasm), loaded instead of `wasmPlugin.url` by
   * the WasmPlugin of a policy that turns capture on; url "" = none, and then such a policy is refused.
   */
  contentWasmPlugin: ContentModuleSettings;
  /**
   * Namespace the policy history (ControllerRevisions) is kept in: the control plane's own (the
   * StatefulSet passes it by the downward API), so a Role confines the revision writes to it.
   */
  historyNamespace: string;
  /** Full re-list and compare even without events, to catch anything a watch missed. */
  resyncSeconds: number;
  backoff: { initialMs: number; maxMs: number };
  /**
   * One leader among the replicas (a coordination.k8s.io Lease) reconciles and adapts; every
   * replica serves the API. Timing as client-go's leader election (15 s / 10 s / 2 s defaults).
   */
  leaderElection: {
    enabled: boolean;
    /** Namespace of the Lease: the control plane's own (the Deployment passes it by the downward API). */
    namespace: string;
    leaseName: string;
    /** This replica's name in the Lease; empty = the host name (the pod name in Kubernetes). */
    identity: string;
    leaseDurationSeconds: number;
    renewDeadlineSeconds: number;
    retryPeriodSeconds: number;
  };
}

const dnsLabel = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/** Defaults, schema and checks of `kubernetes`. */
export const kubernetesSection: ConfigSection<KubernetesConfig> = {
  defaults: {
    kubeconfig: "",
    namespace: "",
    wasmPlugin: {
      url: "oci://ghcr.io/tokentrace/filter:0.1.0",
      sha256: "",
      pluginName: "tokentrace",
      phase: "STATS",
      failStrategy: "FAIL_OPEN",
      imagePullSecret: "",
    },
    contentWasmPlugin: { url: "", sha256: "" },
    historyNamespace: "tokentrace-system",
    resyncSeconds: 300,
    backoff: { initialMs: 500, maxMs: 30000 },
    leaderElection: {
      enabled: true,
      namespace: "tokentrace-system",
      leaseName: "tokentrace-control-plane",
      identity: "",
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    },
  },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["kubeconfig", "namespace", "wasmPlugin", "contentWasmPlugin", "historyNamespace", "resyncSeconds", "backoff", "leaderElection"],
    properties: {
      kubeconfig: { type: "string" },
      namespace: { type: "string", pattern: `^$|${dnsLabel}`, maxLength: 63 },
      wasmPlugin: {
        type: "object",
        additionalProperties: false,
        required: ["url", "sha256", "pluginName", "phase", "failStrategy", "imagePullSecret"],
        properties: {
          url: { type: "string", pattern: "^(oci|https?|file)://.+" },
          sha256: { type: "string", pattern: "^$|^[a-f0-9]{64}$" },
          pluginName: { type: "string", minLength: 1, maxLength: 256 },
          phase: { enum: ["STATS", "AUTHN", "AUTHZ", "UNSPECIFIED_PHASE"] },
          failStrategy: { enum: ["FAIL_OPEN", "FAIL_CLOSE", "FAIL_RELOAD"] },
          // A Secret's name (DNS-1123 subdomain), never its content: the credential stays in the Secret.
          imagePullSecret: { type: "string", maxLength: 253, pattern: "^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" },
        },
      },
      contentWasmPlugin: {
        type: "object",
        additionalProperties: false,
        required: ["url", "sha256"],
        properties: {
          url: { type: "string", pattern: "^$|^(oci|https?|file)://.+" },
          sha256: { type: "string", pattern: "^$|^[a-f0-9]{64}$" },
        },
      },
      historyNamespace: { type: "string", pattern: dnsLabel, maxLength: 63 },
      resyncSeconds: { type: "integer", minimum: 10, maximum: 86400 },
      backoff: {
        type: "object",
        additionalProperties: false,
        required: ["initialMs", "maxMs"],
        properties: { initialMs: { type: "integer", minimum: 1 }, maxMs: { type: "integer", minimum: 1 } },
      },
      leaderElection: {
        type: "object",
        additionalProperties: false,
        required: ["enabled", "namespace", "leaseName", "identity", "leaseDurationSeconds", "renewDeadlineSeconds", "retryPeriodSeconds"],
        properties: {
          enabled: { type: "boolean" },
          namespace: { type: "string", pattern: dnsLabel, maxLength: 63 },
          leaseName: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", maxLength: 253 },
          identity: { type: "string", maxLength: 253 },
          leaseDurationSeconds: { type: "integer", minimum: 1, maximum: 3600 },
          renewDeadlineSeconds: { type: "integer", minimum: 1, maximum: 3600 },
          retryPeriodSeconds: { type: "integer", minimum: 1, maximum: 3600 },
        },
      },
    },
  },
  problems: kubernetesProblems,
};

/** The checks across keys, in order; the first that fails ends them (a later one would read a bad value). */
function kubernetesProblems(k: KubernetesConfig, key: string): string[] {
  if (k.backoff.maxMs < k.backoff.initialMs) {
    return [`${key}.backoff.maxMs: must be >= ${key}.backoff.initialMs (${k.backoff.initialMs}), got ${k.backoff.maxMs}`];
  }
  if (k.leaderElection.enabled) {
    const election = k.leaderElection;
    const timing = { leaseDurationMs: election.leaseDurationSeconds * 1000, renewDeadlineMs: election.renewDeadlineSeconds * 1000, retryPeriodMs: election.retryPeriodSeconds * 1000 };
    const problems = leaderElectionProblems(timing).map(
      (problem) => `${key}.leaderElection: ${problem} (leaseDurationSeconds ${election.leaseDurationSeconds}, renewDeadlineSeconds ${election.renewDeadlineSeconds}, retryPeriodSeconds ${election.retryPeriodSeconds})`,
    );
    if (problems.length > 0) return problems;
  }
  const pinned = /@sha256:([a-f0-9]{64})$/.exec(k.wasmPlugin.url);
  if (pinned !== null && k.wasmPlugin.sha256 !== "" && pinned[1] !== k.wasmPlugin.sha256) {
    // istio/api extensions/v1alpha1/wasm.proto (sha256): a digest in the url must match this field.
    return [`${key}.wasmPlugin.sha256: must equal the digest in ${key}.wasmPlugin.url (${pinned[1]}), got "${k.wasmPlugin.sha256}"`];
  }
  const content = k.contentWasmPlugin;
  if (content.url !== "") {
    const contentPinned = /@sha256:([a-f0-9]{64})$/.exec(content.url);
    if (contentPinned !== null && content.sha256 !== "" && contentPinned[1] !== content.sha256) {
      return [`${key}.contentWasmPlugin.sha256: must equal the digest in ${key}.contentWasmPlugin.url (${contentPinned[1]}), got "${content.sha256}"`];
    }
    // The module that sees raw prompts is always pinned: a moved tag must not swap it underneath.
    if (contentPinned === null && content.sha256 === "") {
      return [`${key}.contentWasmPlugin.sha256: required when ${key}.contentWasmPlugin.url is set (the content module reads raw prompts; pin it by digest), got ""`];
    }
  }
  return [];
}
