// Shared by the istio/ tests: reading the manifests as Kubernetes objects.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
export const ISTIO_DIR = join(REPO, "istio");

/** A manifest document with where it came from. */
export interface Manifest {
  file: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // Manifests are checked against their schemas before anything reads deeper.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [key: string]: any;
}

/** Every YAML document of a file (errors fail loudly, naming the file). */
export function readYaml(path: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"));
  if (!Array.isArray(docs)) throw new Error(`${path}: not a YAML stream`);
  return docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${path}: ${d.errors[0]?.message}`);
    return d.toJS() as unknown;
  });
}

/** YAML files under istio/ (recursively), repo-relative. */
export function yamlFiles(dir = ISTIO_DIR): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(path));
    else if (/\.ya?ml$/.test(entry.name)) out.push(relative(REPO, path));
  }
  return out.sort();
}

/** Strategic-merge patches (`*-patch.yaml`): partial objects, checked after applying them. */
export const isPatch = (file: string): boolean => file.endsWith("-patch.yaml");

/** Every Kubernetes object in istio/ (Kustomization and Component files and patches excluded). */
export function manifests(): Manifest[] {
  const out: Manifest[] = [];
  for (const file of yamlFiles()) {
    if (isPatch(file)) continue;
    for (const doc of readYaml(join(REPO, file))) {
      const m = doc as Manifest;
      if (m.kind === "Kustomization" || m.kind === "Component") continue;
      out.push({ ...m, file });
    }
  }
  return out;
}

/** The one object of `kind` named `name` (fails when there is not exactly one). */
export function one(all: Manifest[], kind: string, name: string): Manifest {
  const found = all.filter((m) => m.kind === kind && m.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
}
