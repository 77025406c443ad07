// Moving policies from an embedded store into the cluster: prints every current policy of a file
// store as a SamplingPolicy manifest (one YAML document each), for `kubectl apply -f -`. The store
// is loaded exactly as the control plane loads it (every record validated again; it writes no
// change); quarantined records are reported on stderr, not exported. Stop the embedded control
// plane first, or copy its store file.
//   node --import tsx control-plane/src/k8s/export-policies.ts <policies.json> | kubectl apply -f -
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { FilePolicyStore } from "../policy/file-store.js";
import type { Policy } from "../policy/model.js";
import { samplingPolicyGroup, samplingPolicyVersion, type SamplingPolicyObject } from "./policy-store.js";

/** The SamplingPolicy a policy becomes: its name and target namespace move into metadata. */
export function samplingPolicyOf(policy: Policy): SamplingPolicyObject {
  const { name, target, ...rest } = policy;
  const { namespace, ...targetRest } = target;
  return {
    apiVersion: `${samplingPolicyGroup}/${samplingPolicyVersion}`,
    kind: "SamplingPolicy",
    metadata: { name, namespace },
    spec: { target: targetRest as Record<string, unknown>, ...rest },
  };
}

/** The manifests for a file store's current policies, and what could not be exported. */
export async function exportPolicies(path: string): Promise<{ yaml: string; skipped: string[] }> {
  const store = new FilePolicyStore({ path, fsync: false });
  try {
    const yaml = store.list().map((record) => `---\n${stringify(samplingPolicyOf(record.policy), { lineWidth: 0 })}`).join("");
    return { yaml, skipped: store.quarantined().map((q) => `${q.name} (version ${q.version}): ${q.errors.map((e) => `${e.field}: ${e.reason}`).join("; ")}`) };
  } finally {
    await store.close();
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = process.argv[2];
  if (path === undefined) {
    process.stderr.write("usage: export-policies.ts <policies.json>\n");
    process.exit(2);
  }
  const { yaml, skipped } = await exportPolicies(path);
  process.stdout.write(yaml);
  for (const line of skipped) process.stderr.write(`not exported (invalid): ${line}\n`);
}
