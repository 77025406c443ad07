// A read-only OCI distribution registry on 127.0.0.1 serving one image layout (what
// `oras cp --from-oci-layout build/oci:<tag> <registry>/<repo>:<tag>` leaves in a registry): the
// tag's manifest, byte for byte, under GET /v2/<repo>/manifests/<tag|digest>, and its blobs.
// The manifest is served with its own media type, as registries do (distribution spec "Pulling
// manifests"); clients compute the digest from these exact bytes.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A running registry. */
export interface OciRegistry {
  /** host:port, to put in place of the image's registry host. */
  host: string;
  /** Manifest pulls served (tag or digest), for assertions. */
  pulls: string[];
  close(): Promise<void>;
}

interface IndexEntry {
  mediaType: string;
  digest: string;
  annotations?: Record<string, string>;
}

/**
 * Serves `layoutDir` as repository `repo`; tags come from the layout's ref.name annotations. With
 * `basicAuth` it is a private registry: every /v2/ request without those credentials gets 401 and
 * a Basic challenge (distribution spec "Authentication", as a registry behind basic auth answers).
 */
export async function startOciRegistry(layoutDir: string, repo: string, basicAuth?: { username: string; password: string }): Promise<OciRegistry> {
  const index = JSON.parse(readFileSync(join(layoutDir, "index.json"), "utf8")) as { manifests: IndexEntry[] };
  const blob = (digest: string): Buffer | undefined => {
    if (!/^sha256:[a-f0-9]{64}$/.test(digest)) return undefined;
    try {
      return readFileSync(join(layoutDir, "blobs", "sha256", digest.slice(7)));
    } catch {
      return undefined;
    }
  };
  const pulls: string[] = [];
  const expectedAuth = basicAuth === undefined ? undefined : `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`).toString("base64")}`;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://registry");
    if (expectedAuth !== undefined && req.headers.authorization !== expectedAuth) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": 'Basic realm="registry"' }).end(JSON.stringify({ errors: [{ code: "UNAUTHORIZED" }] }));
      return;
    }
    const prefix = `/v2/${repo}/`;
    if (url.pathname === "/v2/") {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      return;
    }
    if (!url.pathname.startsWith(prefix)) {
      res.writeHead(404).end(JSON.stringify({ errors: [{ code: "NAME_UNKNOWN" }] }));
      return;
    }
    const [kind, reference] = url.pathname.slice(prefix.length).split("/") as [string, string | undefined];
    if (kind === "manifests" && reference !== undefined) {
      pulls.push(reference);
      const entry = index.manifests.find((m) => m.digest === reference || m.annotations?.["org.opencontainers.image.ref.name"] === reference);
      const bytes = entry === undefined ? undefined : blob(entry.digest);
      if (entry === undefined || bytes === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ code: "MANIFEST_UNKNOWN" }] }));
        return;
      }
      const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
      res.writeHead(200, { "content-type": entry.mediaType, "docker-content-digest": digest, "content-length": bytes.length }).end(bytes);
      return;
    }
    const bytes = kind === "blobs" && reference !== undefined ? blob(reference) : undefined;
    if (bytes === undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ code: "BLOB_UNKNOWN" }] }));
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.length }).end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    pulls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
