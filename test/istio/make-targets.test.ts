// `make manifests` and `make oci`, run as make runs them (the scripts as child processes) on
// temporary copies, so the repository's files are never touched by a test.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { CONFIGMAP_FILE, ENVOYFILTER_FILE, WASMPLUGIN_FILE } from "../../scripts/manifests.js";
import { MEDIA_TYPE_CONFIG, MEDIA_TYPE_INDEX, MEDIA_TYPE_LAYER, MEDIA_TYPE_MANIFEST, PLUGIN_FILE, REF_NAME_ANNOTATION, VARIANT_ANNOTATION } from "../../scripts/oci.js";
import { FILTER_CONTENT_WASM, FILTER_WASM, requireArtifact } from "../filter/support.js";
import { REPO, readYaml, type Manifest } from "./support.js";

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
const runScript = (script: string, args: string[]): string =>
  execFileSync(process.execPath, ["--import", "tsx", join(REPO, "scripts", script), ...args], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

let work: string;
before(() => {
  work = mkdtempSync(join(tmpdir(), "tokentrace-make-"));
});
after(() => {
  rmSync(work, { recursive: true, force: true });
});

/** A module that is certainly not the committed one, and its image; returns the file and the layout. */
function otherModule(from: string, name: string, extra: number[]): { wasm: string; oci: string; bytes: Buffer; digest: string } {
  const wasm = join(work, `${name}.wasm`);
  const bytes = Buffer.concat([readFileSync(requireArtifact(from)), Buffer.from(extra)]);
  writeFileSync(wasm, bytes);
  const oci = join(work, `${name}-oci`);
  runScript("oci.ts", ["--wasm", wasm, "--out", oci, "--tag", "0.1.0"]);
  const digest = JSON.parse(readFileSync(join(oci, "index.json"), "utf8")).manifests[0].digest.slice("sha256:".length) as string;
  return { wasm, oci, bytes, digest };
}

/** The committed content module and its image (what `make oci` built). */
const contentArgs = (): string[] => ["--content-wasm", requireArtifact(FILTER_CONTENT_WASM), "--content-oci", join(REPO, "build/oci-content")];

describe("make manifests", () => {
  const pinned = (root: string): { plugin: string; filter: string; env: string; content: string; filterConfig: unknown; pluginConfig: unknown } => {
    const [plugin] = readYaml(join(root, WASMPLUGIN_FILE)) as Manifest[];
    const [filter] = readYaml(join(root, ENVOYFILTER_FILE)) as Manifest[];
    const env = (readYaml(join(root, CONFIGMAP_FILE)) as Manifest[]).find((m) => m.metadata.name === "tokentrace-control-plane-env")!;
    const wasm = filter!.spec.configPatches[0].patch.value.typed_config.config;
    return { plugin: plugin!.spec.sha256, filter: wasm.vm_config.code.remote.sha256, env: env.data.TOKENTRACE_WASM_SHA256, content: env.data.TOKENTRACE_CONTENT_WASM_SHA256, filterConfig: JSON.parse(wasm.configuration.value), pluginConfig: plugin!.spec.pluginConfig };
  };

  it("pins the OCI manifest digest of the image for oci:// URLs and the .wasm's sha256 for https://, keeps comments, and is idempotent", () => {
    const root = join(work, "manifests");
    cpSync(join(REPO, "istio"), join(root, "istio"), { recursive: true });
    // Modules that are certainly not the committed ones, so the script has to change all four;
    // the control plane is pointed at an https:// URL, which Istio checks against the file's hash.
    const { wasm, oci, bytes, digest } = otherModule(FILTER_WASM, "other", [0, 1, 2, 3]);
    const content = otherModule(FILTER_CONTENT_WASM, "other-content", [4, 5, 6]);
    const cmPath = join(root, CONFIGMAP_FILE);
    writeFileSync(cmPath, readFileSync(cmPath, "utf8").replace("TOKENTRACE_WASM_URL: oci://ghcr.io/tokentrace/filter:0.1.0", "TOKENTRACE_WASM_URL: https://example.com/filter.wasm"));
    const args = ["--root", root, "--wasm", wasm, "--oci", oci, "--content-wasm", content.wasm, "--content-oci", content.oci];
    const out = runScript("manifests.ts", args);
    assert.match(out, new RegExp(`^pinned wasmPlugin ${digest}, controlPlane ${sha256(bytes)}, contentModule ${content.digest}, envoyFilter ${digest}; updated ${WASMPLUGIN_FILE}, ${CONFIGMAP_FILE}, ${ENVOYFILTER_FILE}\\n$`));
    const p = pinned(root);
    assert.deepEqual([p.plugin, p.filter, p.env, p.content], [digest, digest, sha256(bytes), content.digest]);
    assert.notEqual(content.digest, digest, "the content module's image is its own");
    assert.deepEqual(p.filterConfig, p.pluginConfig);
    const after1 = [WASMPLUGIN_FILE, CONFIGMAP_FILE, ENVOYFILTER_FILE].map((f) => readFileSync(join(root, f), "utf8"));
    assert.match(after1[0]!, /^# The filter on every sidecar/m, "comments survive");
    assert.match(after1[2]!, /^# Why this exists/m, "comments survive");
    // Only the hash lines differ from the committed files.
    const committed = readFileSync(join(REPO, WASMPLUGIN_FILE), "utf8").split("\n");
    const changed = after1[0]!.split("\n").filter((line, i) => line !== committed[i]);
    assert.deepEqual(changed, [`  sha256: ${digest}`, `  sha256: ${digest}`], "the sidecars' and the waypoints' WasmPlugin");
    assert.match(runScript("manifests.ts", args), /manifests already up to date\n$/);
    const after2 = [WASMPLUGIN_FILE, CONFIGMAP_FILE, ENVOYFILTER_FILE].map((f) => readFileSync(join(root, f), "utf8"));
    assert.deepEqual(after2, after1);
  });

  it("refuses an OCI layout that holds another module than the .wasm (a stale `make oci`)", () => {
    const root = join(work, "stale");
    cpSync(join(REPO, "istio"), join(root, "istio"), { recursive: true });
    const oci = join(work, "stale-oci");
    runScript("oci.ts", ["--wasm", requireArtifact(FILTER_WASM), "--out", oci, "--tag", "0.1.0"]);
    const wasm = join(work, "stale.wasm");
    writeFileSync(wasm, Buffer.concat([readFileSync(FILTER_WASM), Buffer.from([9])]));
    assert.throws(() => runScript("manifests.ts", ["--root", root, "--wasm", wasm, "--oci", oci, ...contentArgs()]), /holds another module than .*run `make oci`/);
  });

  it("refuses a content-module OCI layout that holds another module than build/filter-content.wasm (a stale pin), and pins the content module's own image", () => {
    const root = join(work, "stale-content");
    cpSync(join(REPO, "istio"), join(root, "istio"), { recursive: true });
    const base = ["--root", root, "--wasm", requireArtifact(FILTER_WASM), "--oci", join(REPO, "build/oci")];
    // The default module's image in place of the content module's: a pin of the wrong module.
    assert.throws(() => runScript("manifests.ts", [...base, "--content-wasm", FILTER_CONTENT_WASM, "--content-oci", join(REPO, "build/oci")]), /oci: image 0\.1\.0 holds another module than .*filter-content\.wasm: run `make oci`/);
    const content = otherModule(FILTER_CONTENT_WASM, "stale-content", [7]);
    assert.throws(() => runScript("manifests.ts", [...base, "--content-wasm", FILTER_CONTENT_WASM, "--content-oci", content.oci]), /holds another module than/);
    // Control: the matching layout pins its digest, which is not the default module's.
    assert.match(runScript("manifests.ts", [...base, ...contentArgs()]), /contentModule ([0-9a-f]{64}),/);
    assert.notEqual(pinned(root).content, pinned(root).env);
  });

  it("copies a changed default pluginConfig into the EnvoyFilter", () => {
    const root = join(work, "config");
    cpSync(join(REPO, "istio"), join(root, "istio"), { recursive: true });
    const path = join(root, WASMPLUGIN_FILE);
    writeFileSync(path, readFileSync(path, "utf8").replace("defaultRate: 0.01", "defaultRate: 0.25"));
    runScript("manifests.ts", ["--root", root, "--wasm", requireArtifact(FILTER_WASM), "--oci", join(REPO, "build/oci"), ...contentArgs()]);
    const p = pinned(root);
    assert.equal((p.filterConfig as { sampling: { defaultRate: number } }).sampling.defaultRate, 0.25);
    assert.deepEqual(p.filterConfig, p.pluginConfig);
  });
});

describe("make oci", () => {
  const out = (): string => join(work, "oci");
  const blob = (digest: string): Buffer => readFileSync(join(out(), "blobs", "sha256", digest.replace(/^sha256:/, "")));
  let wasm: Buffer;

  before(() => {
    wasm = readFileSync(requireArtifact(FILTER_WASM));
    mkdirSync(out(), { recursive: true });
    // A stale blob from an earlier build must not survive.
    mkdirSync(join(out(), "blobs", "sha256"), { recursive: true });
    writeFileSync(join(out(), "blobs", "sha256", "0".repeat(64)), "stale");
    runScript("oci.ts", ["--wasm", FILTER_WASM, "--out", out(), "--tag", "9.9.9"]);
  });

  it("writes an OCI image layout whose every descriptor's digest and size match its blob, and no other blob", () => {
    assert.deepEqual(JSON.parse(readFileSync(join(out(), "oci-layout"), "utf8")), { imageLayoutVersion: "1.0.0" });
    const index = JSON.parse(readFileSync(join(out(), "index.json"), "utf8"));
    assert.equal(index.schemaVersion, 2);
    assert.equal(index.mediaType, MEDIA_TYPE_INDEX);
    assert.equal(index.manifests.length, 1);
    const ref = index.manifests[0];
    assert.equal(ref.mediaType, MEDIA_TYPE_MANIFEST);
    assert.equal(ref.annotations[REF_NAME_ANNOTATION], "9.9.9");
    const seen: string[] = [];
    const check = (d: { digest: string; size: number }): Buffer => {
      const bytes = blob(d.digest);
      assert.equal(`sha256:${sha256(bytes)}`, d.digest);
      assert.equal(bytes.length, d.size);
      seen.push(d.digest.slice(7));
      return bytes;
    };
    const manifest = JSON.parse(check(ref).toString("utf8"));
    assert.equal(manifest.schemaVersion, 2);
    assert.equal(manifest.mediaType, MEDIA_TYPE_MANIFEST);
    assert.equal(manifest.config.mediaType, MEDIA_TYPE_CONFIG);
    assert.deepEqual(manifest.annotations, { [VARIANT_ANNOTATION]: "compat" });
    assert.equal(manifest.layers.length, 1, "Istio's compat variant: exactly one layer");
    assert.equal(manifest.layers[0].mediaType, MEDIA_TYPE_LAYER);
    const config = JSON.parse(check(manifest.config).toString("utf8"));
    const layer = check(manifest.layers[0]);
    assert.deepEqual(config.rootfs, { type: "layers", diff_ids: [`sha256:${sha256(gunzipSync(layer))}`] });
    assert.deepEqual(readdirSync(join(out(), "blobs", "sha256")).sort(), seen.sort());
  });

  it("the layer is a gzip tar holding exactly plugin.wasm, byte-identical to build/filter.wasm (read by system tar)", () => {
    const index = JSON.parse(readFileSync(join(out(), "index.json"), "utf8"));
    const manifest = JSON.parse(blob(index.manifests[0].digest).toString("utf8"));
    const layerPath = join(out(), "blobs", "sha256", manifest.layers[0].digest.slice(7));
    assert.equal(execFileSync("tar", ["-tzf", layerPath], { encoding: "utf8" }), `${PLUGIN_FILE}\n`);
    const extracted = execFileSync("tar", ["-xOzf", layerPath, PLUGIN_FILE]);
    assert.equal(sha256(extracted), sha256(wasm));
    assert.equal(extracted.length, statSync(FILTER_WASM).size);
    // The magic number of a wasm module, for a human reading a failure.
    assert.deepEqual([...extracted.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d]);
  });

  it("is reproducible: a second run gives the same manifest digest", () => {
    const first = JSON.parse(readFileSync(join(out(), "index.json"), "utf8")).manifests[0].digest;
    const again = join(work, "oci-again");
    runScript("oci.ts", ["--wasm", FILTER_WASM, "--out", again, "--tag", "9.9.9"]);
    assert.equal(JSON.parse(readFileSync(join(again, "index.json"), "utf8")).manifests[0].digest, first);
  });

  it("the Makefile has both targets, documented for make help", () => {
    const makefile = readFileSync(join(REPO, "Makefile"), "utf8");
    assert.match(makefile, /^manifests: build\/filter\.wasm build\/oci\/index\.json .*## .+\n\tnode --import tsx scripts\/manifests\.ts$/m);
    assert.match(makefile, /^build\/oci\/index\.json: build\/filter\.wasm scripts\/oci\.ts .*\n\tnode --import tsx scripts\/oci\.ts$/m);
    assert.match(makefile, /^build\/oci-content\/index\.json: build\/filter-content\.wasm scripts\/oci\.ts .*\n\tnode --import tsx scripts\/oci\.ts --wasm build\/filter-content\.wasm --out build\/oci-content$/m);
    assert.match(makefile, /^manifests: .*build\/filter-content\.wasm build\/oci-content\/index\.json .*## .+$/m);
    assert.match(makefile, /^oci: build\/oci\/index\.json build\/oci-content\/index\.json ## .+$/m);
    assert.match(makefile, /^test: .*build\/oci-content\/index\.json/m);
  });
});
