// The pipeline child as the image runs the control plane: compiled by tsc (`make dist`'s options)
// and started under plain node with the runtime settings of istio/base/configmap.yaml. The agent
// bench and the profiler both run it this way, so what they measure is what ships.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

/** The runtime the env ConfigMap gives the control plane: node's NODE_OPTIONS (heap limits) and glibc's MALLOC_ARENA_MAX. */
export interface ShippedRuntime {
  nodeOptions: string[];
  env: Record<string, string>;
}

/** What the shipped control plane's runtime reads from istio/base/configmap.yaml's env ConfigMap. */
export function shippedRuntime(): ShippedRuntime {
  const file = fileURLToPath(new URL("../../../istio/base/configmap.yaml", import.meta.url));
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    const data = (doc.toJS() as { data?: Record<string, string> } | null)?.data;
    if (data?.NODE_OPTIONS === undefined) continue;
    const env: Record<string, string> = data.MALLOC_ARENA_MAX === undefined ? {} : { MALLOC_ARENA_MAX: data.MALLOC_ARENA_MAX };
    return { nodeOptions: data.NODE_OPTIONS.split(" ").filter((o) => o !== ""), env };
  }
  throw new Error(`${file}: no NODE_OPTIONS`);
}

/**
 * pipeline-child.ts and the control-plane modules it imports, compiled by tsc with the options
 * control-plane/tsconfig.build.json builds the shipped control plane with (both extend tsconfig.json).
 * Returns the compiled script's path.
 */
export function compiledPipelineChild(): string {
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  execFileSync(join(root, "node_modules/.bin/tsc"), ["-p", join(root, "test/bench/support/tsconfig.pipeline-child.json")], { stdio: "inherit" });
  // ES modules, as control-plane/package.json and test/package.json declare their sources.
  writeFileSync(join(root, "build/bench-js/package.json"), `${JSON.stringify({ type: "module" })}\n`);
  return join(root, "build/bench-js/test/bench/support/pipeline-child.js");
}
