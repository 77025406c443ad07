// `make oci`: packages build/filter.wasm as an OCI image layout (build/oci/) that Istio pulls for
// `oci://` WasmPlugin URLs, without Docker. The format is the Wasm image spec's *compat* variant,
// which istio-agent tries first (pkg/wasm/imagefetcher.go): one `application/vnd.oci.image.layer.
// v1.tar+gzip` layer holding `plugin.wasm`, and the manifest annotation
// `module.wasm.image/variant: compat`. Istio's *oci* variant instead wants two layers in older
// releases, and any registry and tool (oras, skopeo, crane) handles the compat one. Push with e.g.
//   oras cp --from-oci-layout build/oci:0.1.0 ghcr.io/tokentrace/filter:0.1.0
// Byte-for-byte reproducible: fixed tar header fields and mtime 0, so the same module gives the
// same digests.  node --import tsx scripts/oci.ts [--wasm <file>] [--out <dir>] [--tag <tag>]
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync, gzipSync } from "node:zlib";

export const MEDIA_TYPE_INDEX = "application/vnd.oci.image.index.v1+json";
export const MEDIA_TYPE_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const MEDIA_TYPE_CONFIG = "application/vnd.oci.image.config.v1+json";
export const MEDIA_TYPE_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
/** The file name istio-agent looks for inside the layer. */
export const PLUGIN_FILE = "plugin.wasm";
export const VARIANT_ANNOTATION = "module.wasm.image/variant";
export const REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name";

/** An OCI content descriptor. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

const digestOf = (bytes: Uint8Array): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

/** A POSIX ustar archive with one regular file (mode 0644, owner 0, mtime 0). */
export function tarOneFile(name: string, data: Uint8Array): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: name too long: ${name}`);
  const header = Buffer.alloc(512);
  header.write(name, 0, "utf8");
  header.write(octal(0o644, 8), 100, "ascii");
  header.write(octal(0, 8), 108, "ascii");
  header.write(octal(0, 8), 116, "ascii");
  header.write(octal(data.length, 12), 124, "ascii");
  header.write(octal(0, 12), 136, "ascii");
  header.write("        ", 148, "ascii"); // checksum field counts as spaces while summing
  header.write("0", 156, "ascii");
  header.write("ustar\0", 257, "ascii");
  header.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "ascii");
  const padding = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([header, data, padding, Buffer.alloc(1024)]);
}

/** Writes the image layout for `wasm` into `outDir` (replacing it); returns the manifest descriptor. */
export function writeOciLayout(wasm: Uint8Array, outDir: string, tag: string): { manifest: Descriptor; layer: Descriptor; config: Descriptor } {
  rmSync(outDir, { recursive: true, force: true });
  const blobs = join(outDir, "blobs", "sha256");
  mkdirSync(blobs, { recursive: true });
  const putBlob = (bytes: Uint8Array, mediaType: string): Descriptor => {
    const digest = digestOf(bytes);
    writeFileSync(join(blobs, digest.slice("sha256:".length)), bytes);
    return { mediaType, digest, size: bytes.length };
  };

  const tar = tarOneFile(PLUGIN_FILE, wasm);
  // level 9 and Node's fixed gzip header (mtime 0): the same input gives the same bytes.
  const layer = putBlob(gzipSync(tar, { level: 9 }), MEDIA_TYPE_LAYER);
  const configJson = { architecture: "wasm", os: "wasip1", rootfs: { type: "layers", diff_ids: [digestOf(tar)] }, config: {} };
  const config = putBlob(Buffer.from(JSON.stringify(configJson)), MEDIA_TYPE_CONFIG);
  const manifestJson = { schemaVersion: 2, mediaType: MEDIA_TYPE_MANIFEST, config, layers: [layer], annotations: { [VARIANT_ANNOTATION]: "compat" } };
  const manifest = putBlob(Buffer.from(JSON.stringify(manifestJson)), MEDIA_TYPE_MANIFEST);

  const index = { schemaVersion: 2, mediaType: MEDIA_TYPE_INDEX, manifests: [{ ...manifest, annotations: { [REF_NAME_ANNOTATION]: tag } }] };
  writeFileSync(join(outDir, "index.json"), JSON.stringify(index));
  writeFileSync(join(outDir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  return { manifest, layer, config };
}

/** The image a tag names in a layout (as `oras cp --from-oci-layout <dir>:<tag>` pushes it). */
export interface LayoutImage {
  /** The manifest's descriptor; its digest is what a registry serves the tag as. */
  manifest: Descriptor;
  /** The wasm module inside the compat layer. */
  wasm: Buffer;
}

/** Reads the image tagged `tag` from a layout written by {@link writeOciLayout}; throws when absent or corrupt. */
export function readOciLayout(dir: string, tag: string): LayoutImage {
  const indexPath = join(dir, "index.json");
  if (!existsSync(indexPath)) throw new Error(`${dir}: no OCI image layout (run \`make oci\`)`);
  const index = JSON.parse(readFileSync(indexPath, "utf8")) as { manifests?: Descriptor[] };
  const manifest = index.manifests?.find((d) => d.annotations?.[REF_NAME_ANNOTATION] === tag);
  if (manifest === undefined) throw new Error(`${dir}: no image tagged ${tag}`);
  const blob = (d: Descriptor): Buffer => {
    const bytes = readFileSync(join(dir, "blobs", "sha256", d.digest.replace(/^sha256:/, "")));
    if (digestOf(bytes) !== d.digest) throw new Error(`${dir}: blob ${d.digest} does not match its digest`);
    return bytes;
  };
  const body = JSON.parse(blob(manifest).toString("utf8")) as { layers: Descriptor[] };
  const layer = body.layers[body.layers.length - 1];
  if (layer === undefined) throw new Error(`${dir}: image ${tag} has no layer`);
  return { manifest: { mediaType: manifest.mediaType, digest: manifest.digest, size: manifest.size }, wasm: untarOneFile(gunzipSync(blob(layer)), PLUGIN_FILE) };
}

/** The bytes of `name` in a ustar archive (the inverse of {@link tarOneFile}). */
export function untarOneFile(tar: Buffer, name: string): Buffer {
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const entry = header.toString("utf8", 0, 100).replace(/\0.*$/s, "");
    const size = parseInt(header.toString("ascii", 124, 136).replace(/\0.*$/s, "").trim() || "0", 8);
    if (entry === name) return Buffer.from(tar.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`tar: ${name} not found`);
}

function argValue(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const root = fileURLToPath(new URL("..", import.meta.url));
  const wasmPath = resolve(argValue(argv, "--wasm") ?? join(root, "build/filter.wasm"));
  const outDir = resolve(argValue(argv, "--out") ?? join(root, "build/oci"));
  const tag = argValue(argv, "--tag") ?? "0.1.0";
  const { manifest } = writeOciLayout(readFileSync(wasmPath), outDir, tag);
  console.log(`${outDir}: ${tag} -> ${manifest.digest} (${manifest.size} bytes manifest)`);
}
