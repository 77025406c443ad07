// The status the leader writes on each SamplingPolicy (through the status subresource, so it never
// races a spec write): observedGeneration, the WasmPlugin the policy produced, two conditions
// in the metav1.Condition shape: Accepted (this generation is valid, and its name not already
// served from another namespace) and Programmed (its WasmPlugin carries the version in force),
// and the adaptive rates and live tail-keep thresholds in force (`adaptive`, for the generation
// they were computed for), which followers serve from their cache: a filter pulling from a
// follower gets the leader's thresholds, not the static one. A condition's lastTransitionTime moves only when its status
// does; nothing is written when nothing changed. While a refused generation waits for a fix,
// the last accepted version stays in force: Accepted=False says why, Programmed still says what
// the WasmPlugin carries (as a Deployment keeps Available=True while a bad rollout is stuck).
import { canonicalJson } from "../policy/canonical-json.js";
import type { OverrideSource } from "../policy/effective.js";
import type { StatusApi } from "./client.js";
import { adaptiveStatusOf, type AdaptiveStatus, type KubernetesPolicyStore, type SamplingPolicyObject } from "./policy-store.js";
import { keyOf, policyVersionAnnotation, wasmPluginName, type WasmPlugin } from "./wasmplugin.js";

interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

interface PolicyStatus {
  observedGeneration?: number;
  wasmPlugin?: string;
  conditions: Condition[];
  /** null removes published rates (a JSON merge patch deletes a field set to null). */
  adaptive?: AdaptiveStatus | null;
}

/** The status `object` should have now (times kept from `previous` where the status held). */
export function desiredStatus(object: SamplingPolicyObject, store: KubernetesPolicyStore, wasmPlugins: ReadonlyMap<string, WasmPlugin>, now: string, overrides: OverrideSource = () => undefined): PolicyStatus {
  const key = keyOf(object.metadata.namespace, object.metadata.name);
  const generation = object.metadata.generation;
  const invalid = store.quarantined().find((q) => q.name === object.metadata.name && q.version === object.metadata.resourceVersion);
  const conflict = store.conflicts().find((c) => c.key === key);
  const inForce = conflict === undefined ? store.recordOfKey(key) : undefined;
  const record = inForce?.record;
  const pluginKey = keyOf(object.metadata.namespace, wasmPluginName(object.metadata.name));
  const plugin = wasmPlugins.get(pluginKey);
  const previous = (object.status?.conditions as Condition[] | undefined) ?? [];
  const condition = (type: string, status: Condition["status"], reason: string, message: string, observed = generation): Condition => {
    const before = previous.find((c) => c.type === type);
    const out: Condition = { type, status, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now, reason, message };
    if (observed !== undefined) out.observedGeneration = observed;
    return out;
  };
  const lastAccepted = invalid !== undefined && record !== undefined ? `; version ${record.version} (generation ${inForce?.generation ?? "?"}) stays in force` : "";
  const accepted = invalid !== undefined
    ? condition("Accepted", "False", "Invalid", `${invalid.errors.map((e) => `${e.field}: ${e.reason}`).join("; ")}${lastAccepted}`.slice(0, 32768))
    : conflict !== undefined
      ? condition("Accepted", "False", "NameConflict", `the policy name ${conflict.name} is already served by ${conflict.servedBy}; REST names are unique across namespaces`)
      : condition("Accepted", "True", "Accepted", "the policy is valid and served");
  const programmed = record === undefined
    ? condition("Programmed", "False", "NotAccepted", "the policy is not accepted")
    : plugin?.metadata.annotations?.[policyVersionAnnotation] === record.version
      ? condition("Programmed", "True", "Programmed", `WasmPlugin ${pluginKey} carries version ${record.version}`, inForce?.generation)
      : condition("Programmed", "False", "Pending", `WasmPlugin ${pluginKey} does not carry version ${record.version} yet`, inForce?.generation);
  const status: PolicyStatus = { conditions: [accepted, programmed] };
  if (generation !== undefined) status.observedGeneration = generation;
  if (record !== undefined) status.wasmPlugin = pluginKey;
  const rates = record === undefined || inForce?.generation === undefined ? undefined : overrides(record.policy.name);
  status.adaptive = rates === undefined || inForce?.generation === undefined ? null : adaptiveStatusOf(rates, inForce.generation);
  return status;
}

/** Writes the status of every SamplingPolicy whose status differs from the desired one. */
export class PolicyStatusWriter {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly options: {
      api: StatusApi;
      store: KubernetesPolicyStore;
      wasmPlugins: () => ReadonlyMap<string, WasmPlugin>;
      /** The adaptive rates this replica (the leader) runs with. */
      overrides?: OverrideSource;
      now: () => Date;
      log?: (record: object) => void;
    },
  ) {}

  /** Compares every object and patches those out of date (coalesced while a pass runs). */
  sync(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        void this.sync();
      }
    });
    return this.running;
  }

  private async pass(): Promise<void> {
    const now = this.options.now().toISOString().replace(/\.\d{3}Z$/, "Z");
    for (const object of [...this.options.store.objects().values()]) {
      const want = desiredStatus(object, this.options.store, this.options.wasmPlugins(), now, this.options.overrides);
      const have = object.status ?? {};
      // null (remove) equals absent.
      const comparable = (s: object): string => canonicalJson({ ...s, adaptive: (s as PolicyStatus).adaptive ?? undefined });
      if (comparable(want) === comparable(have)) continue;
      const patched = await this.options.api.patchStatus(object.metadata.namespace, object.metadata.name, want);
      if (!patched.ok && patched.code !== 404) this.options.log?.({ level: "warn", msg: "writing policy status failed", policy: keyOf(object.metadata.namespace, object.metadata.name), code: patched.code, reason: patched.reason });
    }
  }
}
