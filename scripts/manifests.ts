// `make manifests`: pins the Istio manifests to the built filter. Writes the sha256 of
// build/filter.wasm into the WasmPlugin, the EnvoyFilter and the control plane's env ConfigMap
// (so the WasmPlugins it creates pin the same module), and copies the WasmPlugin's default
// pluginConfig into the EnvoyFilter, so the two ways to install the filter cannot drift apart.
// Edits keep comments and layout; running it twice changes nothing the second time.
//   node --import tsx scripts/manifests.ts [--root <dir>] [--wasm <file>]
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, type Document } from "yaml";

/** Files (under the root) and the paths in them that `make manifests` writes. */
export const WASMPLUGIN_FILE = "istio/base/wasmplugin.yaml";
export const CONFIGMAP_FILE = "istio/base/configmap.yaml";
export const ENVOYFILTER_FILE = "istio/envoyfilter/envoyfilter.yaml";
const ENVOYFILTER_WASM = ["spec", "configPatches", 0, "patch", "value", "typed_config"];

/** sha256 of a file, lower-case hex (what WasmPlugin.spec.sha256 and Envoy expect). */
export function sha256Of(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

function load(path: string): Document.Parsed[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"));
  if (!Array.isArray(docs)) throw new Error(`${path}: not a YAML stream`);
  for (const doc of docs) if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message}`);
  return docs;
}

function docOfKind(docs: Document.Parsed[], path: string, kind: string, name: string): Document.Parsed {
  const doc = docs.find((d) => d.get("kind") === kind && d.getIn(["metadata", "name"]) === name);
  if (!doc) throw new Error(`${path}: no ${kind} named ${name}`);
  return doc;
}

function save(path: string, docs: Document.Parsed[], before: string): boolean {
  const text = docs.map((d) => d.toString({ lineWidth: 0 })).join("");
  if (text === before) return false;
  writeFileSync(path, text);
  return true;
}

/** Writes the hash (and the EnvoyFilter configuration) under `root`; returns the files changed. */
export function updateManifests(root: string, wasmPath: string): { sha256: string; changed: string[] } {
  const sha256 = sha256Of(wasmPath);
  const changed: string[] = [];

  const wpPath = join(root, WASMPLUGIN_FILE);
  const wpText = readFileSync(wpPath, "utf8");
  const wpDocs = load(wpPath);
  const plugin = docOfKind(wpDocs, wpPath, "WasmPlugin", "tokentrace");
  plugin.setIn(["spec", "sha256"], sha256);
  const pluginConfig: unknown = plugin.getIn(["spec", "pluginConfig"], false);
  const configJson = JSON.stringify((pluginConfig as { toJSON(): unknown } | undefined)?.toJSON() ?? {});
  if (save(wpPath, wpDocs, wpText)) changed.push(WASMPLUGIN_FILE);

  const cmPath = join(root, CONFIGMAP_FILE);
  const cmText = readFileSync(cmPath, "utf8");
  const cmDocs = load(cmPath);
  docOfKind(cmDocs, cmPath, "ConfigMap", "tokentrace-control-plane-env").setIn(["data", "TOKENTRACE_WASM_SHA256"], sha256);
  if (save(cmPath, cmDocs, cmText)) changed.push(CONFIGMAP_FILE);

  const efPath = join(root, ENVOYFILTER_FILE);
  const efText = readFileSync(efPath, "utf8");
  const efDocs = load(efPath);
  const filter = docOfKind(efDocs, efPath, "EnvoyFilter", "tokentrace");
  filter.setIn([...ENVOYFILTER_WASM, "config", "vm_config", "code", "remote", "sha256"], sha256);
  // A block scalar ending in a newline keeps the file readable; Envoy ignores the newline.
  const current = filter.getIn([...ENVOYFILTER_WASM, "config", "configuration", "value"]);
  if (typeof current !== "string" || current.trim() !== configJson) filter.setIn([...ENVOYFILTER_WASM, "config", "configuration", "value"], `${configJson}\n`);
  if (save(efPath, efDocs, efText)) changed.push(ENVOYFILTER_FILE);

  return { sha256, changed };
}

function argValue(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const root = resolve(argValue(argv, "--root") ?? fileURLToPath(new URL("..", import.meta.url)));
  const wasm = resolve(argValue(argv, "--wasm") ?? join(root, "build/filter.wasm"));
  const { sha256, changed } = updateManifests(root, wasm);
  console.log(`sha256 ${sha256} (${wasm}); ${changed.length === 0 ? "manifests already up to date" : `updated ${changed.join(", ")}`}`);
}
