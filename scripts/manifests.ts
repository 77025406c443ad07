// `make manifests`: pins the Istio manifests to the built filter, in the form Istio checks. For an
// `oci://` URL istio-agent compares `sha256` with the image *manifest* digest (istio/istio
// pkg/wasm/imagefetcher.go PrepareFetch takes `img.Digest()`, pkg/wasm/cache.go getOrFetch
// compares it), so those places get the digest of the image `make oci` wrote to build/oci; for
// `http(s)://` (and `file://`) URLs it hashes the fetched bytes, so those get the file's sha256.
// Places: the WasmPlugin, the EnvoyFilter and the control plane's env ConfigMap (so the
// WasmPlugins it creates pin the same image). It also copies the WasmPlugin's default
// pluginConfig into the EnvoyFilter, so the two ways to install the filter cannot drift apart.
// Edits keep comments and layout; running it twice changes nothing the second time.
//   node --import tsx scripts/manifests.ts [--root <dir>] [--wasm <file>] [--oci <layout dir>]
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readOciLayout } from "./oci.js";
import { parseAllDocuments, type Document } from "yaml";

/** Files (under the root) and the paths in them that `make manifests` writes. */
export const WASMPLUGIN_FILE = "istio/base/wasmplugin.yaml";
export const CONFIGMAP_FILE = "istio/base/configmap.yaml";
export const ENVOYFILTER_FILE = "istio/envoyfilter/envoyfilter.yaml";
const ENVOYFILTER_WASM = ["spec", "configPatches", 0, "patch", "value", "typed_config"];

/** sha256 of bytes, lower-case hex (the form of WasmPlugin.spec.sha256). */
export function sha256Of(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The tag an `oci://` URL names, or undefined for a digest reference (`@sha256:...`) or another scheme. */
export function ociTagOf(url: string): string | undefined {
  if (!url.startsWith("oci://") || url.includes("@")) return undefined;
  const lastSegment = url.slice("oci://".length).split("/").slice(1).pop() ?? "";
  const colon = lastSegment.lastIndexOf(":");
  return colon < 0 ? "latest" : lastSegment.slice(colon + 1);
}

/** What pins the module for one URL: the OCI manifest digest for oci://, else the file's sha256. */
export interface Pins {
  fileSha256: string;
  /** Manifest digest (hex) by tag, read from the OCI layout. */
  manifestDigest(tag: string): string;
}

/** The sha256 Istio checks for `url` (see the file comment). */
export function pinFor(url: string, pins: Pins): string {
  if (!url.startsWith("oci://")) return pins.fileSha256;
  const tag = ociTagOf(url);
  if (tag === undefined) throw new Error(`${url}: pin oci:// URLs by tag; the sha256 field then carries the digest`);
  return pins.manifestDigest(tag);
}

/** Pins from a built module and the OCI layout of it; fails when the layout holds another module. */
export function pinsFrom(wasmPath: string, ociDir: string): Pins {
  const wasm = readFileSync(wasmPath);
  return {
    fileSha256: sha256Of(wasm),
    manifestDigest(tag) {
      const image = readOciLayout(ociDir, tag);
      if (!image.wasm.equals(wasm)) throw new Error(`${ociDir}: image ${tag} holds another module than ${wasmPath}: run \`make oci\``);
      return image.manifest.digest.slice("sha256:".length);
    },
  };
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

/** Writes the pins (and the EnvoyFilter configuration) under `root`; returns each place's pin and the files changed. */
export function updateManifests(root: string, pins: Pins): { pinned: Record<string, string>; changed: string[] } {
  const changed: string[] = [];
  const pinned: Record<string, string> = {};

  const wpPath = join(root, WASMPLUGIN_FILE);
  const wpText = readFileSync(wpPath, "utf8");
  const wpDocs = load(wpPath);
  const plugin = docOfKind(wpDocs, wpPath, "WasmPlugin", "tokentrace");
  pinned.wasmPlugin = pinFor(String(plugin.getIn(["spec", "url"])), pins);
  plugin.setIn(["spec", "sha256"], pinned.wasmPlugin);
  const pluginConfig: unknown = plugin.getIn(["spec", "pluginConfig"], false);
  const configJson = JSON.stringify((pluginConfig as { toJSON(): unknown } | undefined)?.toJSON() ?? {});
  if (save(wpPath, wpDocs, wpText)) changed.push(WASMPLUGIN_FILE);

  const cmPath = join(root, CONFIGMAP_FILE);
  const cmText = readFileSync(cmPath, "utf8");
  const cmDocs = load(cmPath);
  const env = docOfKind(cmDocs, cmPath, "ConfigMap", "tokentrace-control-plane-env");
  pinned.controlPlane = pinFor(String(env.getIn(["data", "TOKENTRACE_WASM_URL"])), pins);
  env.setIn(["data", "TOKENTRACE_WASM_SHA256"], pinned.controlPlane);
  if (save(cmPath, cmDocs, cmText)) changed.push(CONFIGMAP_FILE);

  const efPath = join(root, ENVOYFILTER_FILE);
  const efText = readFileSync(efPath, "utf8");
  const efDocs = load(efPath);
  const filter = docOfKind(efDocs, efPath, "EnvoyFilter", "tokentrace");
  const remote = [...ENVOYFILTER_WASM, "config", "vm_config", "code", "remote"];
  pinned.envoyFilter = pinFor(String(filter.getIn([...remote, "http_uri", "uri"])), pins);
  filter.setIn([...remote, "sha256"], pinned.envoyFilter);
  // A block scalar ending in a newline keeps the file readable; Envoy ignores the newline.
  const current = filter.getIn([...ENVOYFILTER_WASM, "config", "configuration", "value"]);
  if (typeof current !== "string" || current.trim() !== configJson) filter.setIn([...ENVOYFILTER_WASM, "config", "configuration", "value"], `${configJson}\n`);
  if (save(efPath, efDocs, efText)) changed.push(ENVOYFILTER_FILE);

  return { pinned, changed };
}

function argValue(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const root = resolve(argValue(argv, "--root") ?? fileURLToPath(new URL("..", import.meta.url)));
  const wasm = resolve(argValue(argv, "--wasm") ?? join(root, "build/filter.wasm"));
  const oci = resolve(argValue(argv, "--oci") ?? join(root, "build/oci"));
  const { pinned, changed } = updateManifests(root, pinsFrom(wasm, oci));
  const places = Object.entries(pinned).map(([place, pin]) => `${place} ${pin}`).join(", ");
  console.log(`pinned ${places}; ${changed.length === 0 ? "manifests already up to date" : `updated ${changed.join(", ")}`}`);
}
