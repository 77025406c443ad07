// istio-agent's Wasm module fetch, as it runs for every ECDS update that names a remote module
// (read at istio/istio 86c9f01f pkg/wasm/): the cache's checksum check (cache.go getOrFetch), the
// image fetch (imagefetcher.go PrepareFetch, with go-containerregistry's remote image whose
// Digest() is the sha256 of the raw manifest bytes), the compat-image extraction, and the
// fallback when any of it fails (convert.go MaybeConvertWasmExtensionConfig).
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { RBAC_HTTP_TYPE, WASM_HTTP_TYPE } from "./emulated-xds.js";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
const DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip";

/** A fetch result: the module bytes and the checksum the cache files them under, or Istio's error text. */
export type FetchResult = { ok: true; wasm: Buffer; checksum: string } | { ok: false; error: string };

const hex = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** cache.go isValidWasmBinary: at least 8 bytes (magic + version), starting with \0asm. */
function isValidWasmBinary(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes[0] === 0x00 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
}

/** imagefetcher.go extractWasmPluginBinary: the first tar entry whose base name is plugin.wasm. */
function extractPluginWasm(layer: Buffer): Buffer {
  const tar = gunzipSync(layer);
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.toString("utf8", 0, 100).replace(/\0.*$/s, "");
    const size = parseInt(header.toString("ascii", 124, 136).replace(/\0.*$/s, "").trim() || "0", 8);
    if (name.split("/").pop() === "plugin.wasm") return Buffer.from(tar.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error("plugin.wasm not found in the archive");
}

/** Where the emulated agent sends requests for a registry host (the test's local registry). */
export type RegistryResolver = (host: string) => string;

/**
 * imagefetcher.go wasmKeyChain.Resolve: the dockerconfigjson's `auths` entry for the registry
 * (host[:port]) gives Basic credentials (`auth` = base64 user:password, or username and password);
 * no entry, or no pull secret, is anonymous.
 */
function authorizationFor(registry: string, pullSecret: Buffer | undefined): string | undefined {
  if (pullSecret === undefined) return undefined;
  const config = JSON.parse(pullSecret.toString("utf8")) as { auths?: Record<string, { auth?: string; username?: string; password?: string }> };
  const entry = config.auths?.[registry];
  if (entry === undefined) return undefined;
  if (entry.auth !== undefined) return `Basic ${entry.auth}`;
  if (entry.username !== undefined) return `Basic ${Buffer.from(`${entry.username}:${entry.password ?? ""}`).toString("base64")}`;
  return undefined;
}

/**
 * cache.go getOrFetch for `url` with the WasmPlugin's `sha256` (`checksum`, "" = none):
 * http(s) hashes the downloaded bytes; oci pulls the manifest and takes its digest *before*
 * downloading the layer, compares, then extracts the compat (or Docker) variant.
 */
export async function fetchWasmModule(url: string, checksum: string, resolve: RegistryResolver, pullSecret?: Buffer): Promise<FetchResult> {
  const parsed = new URL(url);
  let expected = checksum;
  if (parsed.protocol === "http:" || parsed.protocol === "https:") {
    const response = await fetch(url);
    if (!response.ok) return { ok: false, error: `wasm module download failed with status code ${response.status}` };
    const wasm = Buffer.from(await response.arrayBuffer());
    const actual = hex(wasm);
    if (expected !== "" && actual !== expected) return { ok: false, error: `module downloaded from ${url} has checksum ${actual}, which does not match: ${expected}` };
    return isValidWasmBinary(wasm) ? { ok: true, wasm, checksum: actual } : { ok: false, error: `fetched Wasm binary from ${url} is invalid` };
  }
  if (parsed.protocol !== "oci:") return { ok: false, error: `unsupported Wasm module downloading URL scheme: ${parsed.protocol.slice(0, -1)}` };
  // Reference: host + path, the last segment carrying `:tag` or `@sha256:digest` (name.ParseReference).
  const path = `${parsed.host}${parsed.pathname}`;
  const at = path.indexOf("@");
  const slash = path.indexOf("/");
  const hostPart = path.slice(0, slash);
  const rest = path.slice(slash + 1);
  let repo: string;
  let reference: string;
  if (at >= 0) {
    repo = path.slice(slash + 1, at);
    reference = path.slice(at + 1);
    // getEntry: with no checksum given, the digest in the URL is the expected one.
    if (expected === "" && reference.startsWith("sha256:")) expected = reference.slice(7);
  } else {
    const colon = rest.lastIndexOf(":");
    repo = colon < 0 ? rest : rest.slice(0, colon);
    reference = colon < 0 ? "latest" : rest.slice(colon + 1);
  }
  const base = `http://${resolve(hostPart)}/v2/${repo}`;
  const authorization = authorizationFor(hostPart, pullSecret);
  const auth: Record<string, string> = authorization === undefined ? {} : { authorization };
  // remote.Get accepts image manifests of these media types only (remote/image.go acceptableImageMediaTypes).
  const manifestResponse = await fetch(`${base}/manifests/${reference}`, { headers: { accept: [OCI_MANIFEST, DOCKER_MANIFEST].join(","), ...auth } });
  if (!manifestResponse.ok) return { ok: false, error: `could not fetch Wasm OCI image: could not fetch manifest: status ${manifestResponse.status}` };
  const mediaType = (manifestResponse.headers.get("content-type") ?? "").split(";")[0]?.trim();
  if (mediaType !== OCI_MANIFEST && mediaType !== DOCKER_MANIFEST) return { ok: false, error: `could not fetch Wasm OCI image: unexpected media type ${mediaType}` };
  const raw = Buffer.from(await manifestResponse.arrayBuffer());
  // imagefetcher.go: `d, _ := img.Digest(); actualDigest = d.Hex` -- the digest of the raw manifest.
  const actual = hex(raw);
  if (expected !== "" && actual !== expected) return { ok: false, error: `module downloaded from ${url} has checksum ${actual}, which does not match: ${expected}` };
  const manifest = JSON.parse(raw.toString("utf8")) as { mediaType?: string; layers?: { mediaType: string; digest: string }[] };
  const layers = manifest.layers ?? [];
  const last = layers[layers.length - 1];
  if (last === undefined) return { ok: false, error: "could not fetch Wasm binary: number of layers must be greater than zero" };
  // extractOCIStandardImage / extractDockerImage: the last layer, of the variant's layer type.
  const wantLayer = manifest.mediaType === DOCKER_MANIFEST ? DOCKER_LAYER : OCI_LAYER;
  if (last.mediaType !== wantLayer) return { ok: false, error: `could not fetch Wasm binary: invalid media type ${last.mediaType} (expect ${wantLayer})` };
  const layerResponse = await fetch(`${base}/blobs/${last.digest}`, { headers: auth });
  const layer = Buffer.from(await layerResponse.arrayBuffer());
  // go-containerregistry verifies every blob it reads against its digest.
  if (!layerResponse.ok || `sha256:${hex(layer)}` !== last.digest) return { ok: false, error: `could not fetch Wasm binary: layer ${last.digest} failed verification` };
  let wasm: Buffer;
  try {
    wasm = extractPluginWasm(layer);
  } catch (error) {
    return { ok: false, error: `could not fetch Wasm binary: ${(error as Error).message}` };
  }
  return isValidWasmBinary(wasm) ? { ok: true, wasm, checksum: actual } : { ok: false, error: `fetched Wasm binary from ${url} is invalid` };
}

/** The Wasm filter config of an ECDS resource, as far as the agent reads it. */
export interface WasmFilterConfig {
  failure_policy?: "UNSPECIFIED" | "FAIL_RELOAD" | "FAIL_CLOSED" | "FAIL_OPEN";
  fail_open?: boolean;
  vm_config: { code: { remote: { http_uri: { uri: string }; sha256?: string } }; environment_variables?: { key_values: Record<string, string> } };
}

/** pkg/model/wasm.go WasmSecretEnv: the VM env var istiod puts a pull secret in, for the agent to take out. */
export const WASM_SECRET_ENV = "ISTIO_META_WASM_IMAGE_PULL_SECRET";

/** The ECDS resource the agent forwards to Envoy. */
export type ForwardedConfig = { typeUrl: typeof WASM_HTTP_TYPE; wasm: Buffer } | { typeUrl: typeof RBAC_HTTP_TYPE; allowAll: boolean; error: string };

/** convert.go httpWasmFailOpen: failure_policy decides when set, else the deprecated fail_open. */
export function failsOpen(config: WasmFilterConfig): boolean {
  if (config.failure_policy !== undefined && config.failure_policy !== "UNSPECIFIED") return config.failure_policy === "FAIL_OPEN";
  return config.fail_open === true;
}

/**
 * convert.go MaybeConvertWasmExtensionConfig for one HTTP Wasm resource: the module is fetched
 * and the resource rewritten to a local file; on any failure the resource becomes an RBAC filter,
 * allow-all when failing open, deny-all otherwise.
 */
export async function convertWasmExtensionConfig(config: WasmFilterConfig, resolve: RegistryResolver): Promise<ForwardedConfig> {
  const remote = config.vm_config.code.remote;
  // rewriteVMConfig: a pull secret env present but empty (istiod found no such Secret) fails the fetch.
  const secret = config.vm_config.environment_variables?.key_values[WASM_SECRET_ENV];
  if (secret === "") return { typeUrl: RBAC_HTTP_TYPE, allowAll: failsOpen(config), error: "cannot fetch Wasm module: missing image pulling secret" };
  const fetched = await fetchWasmModule(remote.http_uri.uri, remote.sha256 ?? "", resolve, secret === undefined ? undefined : Buffer.from(secret, "utf8"));
  if (fetched.ok) return { typeUrl: WASM_HTTP_TYPE, wasm: fetched.wasm };
  return { typeUrl: RBAC_HTTP_TYPE, allowAll: failsOpen(config), error: fetched.error };
}

/** A Secret as istiod's credentials controller reads it. */
export interface SecretObject {
  type: string;
  data: Record<string, Buffer>;
}

/**
 * The Wasm config istiod sends for a WasmPlugin (pilot/pkg/model/extensions.go buildWasmConfig and
 * buildDataSource): url (oci:// when no scheme) and sha256 into remote, failStrategy into
 * failure_policy. An imagePullSecret is looked up in the plugin's own namespace whatever its name
 * says (extensions.go forces the namespace), through GetDockerCredential (credentials/kube/secrets.go:
 * type kubernetes.io/dockerconfigjson, key .dockerconfigjson); updatePluginConfig
 * (networking/core/extension/extensionfilter.go) puts its content in the VM env, or "" when not found.
 */
export function wasmConfigOfPlugin(
  spec: { url: string; sha256?: string; failStrategy?: string; imagePullSecret?: string },
  pullSecrets?: { namespace: string; secrets: Map<string, SecretObject> },
): WasmFilterConfig {
  const url = /^[a-z]+:\/\//.test(spec.url) ? spec.url : `oci://${spec.url}`;
  const policy = spec.failStrategy === "FAIL_OPEN" ? "FAIL_OPEN" : spec.failStrategy === "FAIL_RELOAD" ? "FAIL_RELOAD" : spec.failStrategy === "FAIL_CLOSE" ? "FAIL_CLOSED" : undefined;
  const config: WasmFilterConfig = { vm_config: { code: { remote: { http_uri: { uri: url }, sha256: spec.sha256 ?? "" } } } };
  if (policy !== undefined) config.failure_policy = policy;
  if (spec.imagePullSecret !== undefined && spec.imagePullSecret !== "") {
    const name = spec.imagePullSecret.split("/").pop() ?? "";
    const secret = pullSecrets?.secrets.get(`${pullSecrets.namespace}/${name}`);
    const cred = secret?.type === "kubernetes.io/dockerconfigjson" ? secret.data[".dockerconfigjson"] : undefined;
    config.vm_config.environment_variables = { key_values: { [WASM_SECRET_ENV]: cred === undefined ? "" : cred.toString("utf8") } };
  }
  return config;
}
