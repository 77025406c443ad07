// The control plane's content-key endpoint as the filter meets it, on a real HTTP server on
// 127.0.0.1, to the pseudonym-key contract the lead fixed (the briefs' contract-key.md; the control
// plane builds the real one in control-plane/, issue 22): GET /v1/filters/{namespace}.{name}/content-key
// answers 200 {"version","key"} (lower-case hex) with ETag "<version>" and Cache-Control: no-store,
// 304 when ?version= or If-None-Match names the version in force, 403 when the caller may not read
// that namespace's key, 404 when no key is configured. As strict as the contract: any other method
// or path is a 404 or 405 and is recorded as a problem, so a filter that asks wrongly fails its test.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the server saw. */
export interface KeyRequest {
  path: string;
  /** The ?version= the caller named, if any. */
  version: string | undefined;
  authorization: string | undefined;
  status: number;
}

export interface ContentKeyServer {
  url: string;
  /** Keys by version (raw bytes); `current` names the one in force ("" for none: 404). */
  keys: Map<string, Buffer>;
  current: string;
  /** When set, every answer is this status instead (e.g. 503), or the body is replaced. */
  override: { status?: number; body?: string } | undefined;
  /** Namespaces whose key the caller may read (default: every one); others get 403. */
  allowedNamespaces: Set<string> | undefined;
  /** Required bearer token (deployments without a mesh), or undefined. */
  token: string | undefined;
  requests: KeyRequest[];
  /** What did not follow the contract. Tests expect none. */
  problems: string[];
  close(): Promise<void>;
}

const PATH = /^\/v1\/filters\/([a-z0-9-]+)\.([a-z0-9.-]+)\/content-key$/;

export async function startContentKeyServer(): Promise<ContentKeyServer> {
  const s: ContentKeyServer = {
    url: "",
    keys: new Map(),
    current: "",
    override: undefined,
    allowedNamespaces: undefined,
    token: undefined,
    requests: [],
    problems: [],
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const version = url.searchParams.get("version") ?? undefined;
    const record = (status: number): void => {
      s.requests.push({ path: url.pathname, version, authorization: req.headers.authorization, status });
    };
    const match = PATH.exec(url.pathname);
    if (req.method !== "GET") {
      s.problems.push(`${req.method} ${url.pathname}: only GET is served`);
      record(405);
      res.writeHead(405).end();
      return;
    }
    if (match === null) {
      s.problems.push(`GET ${url.pathname}: not /v1/filters/{namespace}.{name}/content-key`);
      record(404);
      res.writeHead(404).end();
      return;
    }
    if (s.override?.status !== undefined) {
      record(s.override.status);
      res.writeHead(s.override.status, { "content-type": "text/plain" }).end("overridden");
      return;
    }
    const namespace = match[1]!;
    if (s.token !== undefined && req.headers.authorization !== `Bearer ${s.token}`) {
      record(403);
      res.writeHead(403).end();
      return;
    }
    if (s.allowedNamespaces !== undefined && !s.allowedNamespaces.has(namespace)) {
      record(403);
      res.writeHead(403).end();
      return;
    }
    const key = s.keys.get(s.current);
    if (s.current === "" || key === undefined) {
      record(404);
      res.writeHead(404).end();
      return;
    }
    const etag = `"${s.current}"`;
    if (version === s.current || req.headers["if-none-match"] === etag) {
      record(304);
      res.writeHead(304, { etag, "cache-control": "no-store" }).end();
      return;
    }
    record(200);
    const body = s.override?.body ?? JSON.stringify({ version: s.current, key: key.toString("hex") });
    res.writeHead(200, { "content-type": "application/json", etag, "cache-control": "no-store" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return s;
}
