// An emulated Kubernetes apiserver over HTTP on 127.0.0.1, generic over resource paths:
//   /api/v1/{plural}                                  cluster-wide list/watch (and create, cluster-scoped)
//   /api/v1/namespaces/{ns}/{plural}[/{name}]          namespaced collection / object
//   /apis/{group}/{version}/...                        the same for named groups
// It implements what controllers rely on: list with resourceVersion and limit/continue, watch
// from a resourceVersion with bookmarks and 410 Gone for compacted history, create/get/update
// (409 on a stale resourceVersion)/delete, merge and JSON patch, label and field selectors,
// dry-run, and CRD OpenAPI validation with 422 Invalid statuses. Fault hooks let tests take the
// "apiserver" down, fail the next requests, cut watches and compact history, so no test sleeps.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { jsonPatch, mergePatch, type Json } from "./patch.js";
import { matchesSelector, parseFieldSelector, parseLabelSelector, type Requirement } from "./selector.js";
import { validateObject } from "./schema.js";
import { validateObjectMeta } from "./object-meta.js";
import { leaseType } from "./lease.js";
import { controllerRevisionType } from "./controller-revision.js";
import { crdType, establishedStatus, typesOfCrd } from "./crd-registration.js";
import { toTable, wantsTable } from "./table.js";
import { forbiddenMessage, verbOf, type RbacAuthorizer } from "./rbac.js";
import * as status from "./status.js";
import { apiVersionOf, ObjectStore, resourceKey, type KubeObject, type ResourceType, type StoredEvent } from "./store.js";

/** Options for {@link startKubeEmulator}. */
export interface KubeEmulatorOptions {
  /** Resource types to serve in addition to core/v1 pods and namespaces. */
  resources?: ResourceType[];
  /** Clock for creationTimestamp; defaults to the wall clock. */
  now?: () => Date;
  /** Events retained for watch replay; older ones are compacted (410 Gone). */
  historyLimit?: number;
  /** Periodic BOOKMARK events to watches that asked for them; 0 (default) = only on {@link KubeEmulator.bookmark}. */
  bookmarkIntervalMs?: number;
  /** Request body limit; the real apiserver's is 3 MiB. */
  maxBodyBytes?: number;
  /**
   * RBAC: a request with `Authorization: Bearer <token>` acts as `users.get(token)` (401 for an
   * unknown token) and gets 403 unless the authorizer allows it; requests without a token are the
   * test's own and are not checked.
   */
  rbac?: { authorizer: RbacAuthorizer; users: ReadonlyMap<string, string> };
}

/** A request as the emulator saw it, for assertions. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
}

interface ParsedPath {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  /** The status subresource (`.../{name}/status`), served only for types that declare it. */
  status: boolean;
}

interface Watcher {
  type: ResourceType;
  namespace: string | undefined;
  labels: Requirement[];
  fields: Requirement[];
  bookmarks: boolean;
  response: ServerResponse;
  lastSentRevision: number;
}

type Fault = { code: number; reason: string; remaining: number; method: string | undefined };

const coreTypes: ResourceType[] = [
  { group: "", version: "v1", plural: "pods", kind: "Pod", namespaced: true, allowUnconditionalUpdate: true },
  { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false, allowUnconditionalUpdate: true },
  leaseType,
  controllerRevisionType,
  crdType,
];

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function canonical(value: Json | undefined): string {
  const sort = (v: Json | undefined): Json | undefined => {
    if (Array.isArray(v)) return v.map((x) => sort(x) as Json);
    if (isObject(v)) {
      const out: { [key: string]: Json } = {};
      for (const key of Object.keys(v).sort()) out[key] = sort(v[key]) as Json;
      return out;
    }
    return v;
  };
  return JSON.stringify(sort(value) ?? null);
}

// customresource/strategy.go PrepareForUpdate: any change outside metadata bumps generation
// (status is outside the comparison only when the status subresource owns it).
function generationPart(object: KubeObject, type: ResourceType): string {
  const { metadata: _m, ...rest } = object;
  if (type.statusSubresource) delete rest.status;
  return canonical(rest as Json);
}

/** A running emulated apiserver; see the file comment for what it serves. */
export class KubeEmulator extends EventEmitter {
  readonly store: ObjectStore;
  readonly requests: RecordedRequest[] = [];
  private readonly types = new Map<string, ResourceType>();
  private readonly watchers = new Set<Watcher>();
  private readonly faults: Fault[] = [];
  private available = true;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private readonly server: Server;
  /** Further instances serving the same store (see {@link listenAnother}). */
  private readonly instances: Server[] = [];
  /** Ports of the instances that hang ("" = every instance). */
  private readonly hung = new Set<number | "">();
  /** Requests held by a hang, resumed when it ends. */
  private readonly held = new Set<() => void>();
  private readonly now: () => Date;
  private readonly maxBodyBytes: number;
  private readonly rbac: KubeEmulatorOptions["rbac"];
  /** Base URL, e.g. http://127.0.0.1:40123 (set once started). */
  url = "";

  constructor(options: KubeEmulatorOptions = {}) {
    super();
    this.store = new ObjectStore(options.historyLimit ?? 1000);
    this.now = options.now ?? (() => new Date());
    this.maxBodyBytes = options.maxBodyBytes ?? 3 * 1024 * 1024;
    this.rbac = options.rbac;
    for (const type of [...coreTypes, ...(options.resources ?? [])]) this.register(type);
    this.server = this.createInstance();
    this.store.subscribe((event) => this.fanOut(event));
    // A CRD written through the API starts (or stops) serving its resource.
    this.store.subscribe((event) => {
      if (event.resource !== resourceKey(crdType)) return;
      for (const type of typesOfCrd(event.previous ?? event.object)) this.types.delete(resourceKey(type));
      if (event.type !== "DELETED") for (const type of typesOfCrd(event.object)) this.register(type);
    });
    if ((options.bookmarkIntervalMs ?? 0) > 0) {
      this.bookmarkTimer = setInterval(() => this.bookmark(), options.bookmarkIntervalMs);
      this.bookmarkTimer.unref();
    }
  }

  private createInstance(): Server {
    return createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.send(res, status.failure(500, "InternalError", `kube-emulator bug: ${String(error)}`));
      });
    });
  }

  /**
   * Starts another apiserver instance over the same objects, on its own port (an HA control plane
   * behind per-client endpoints: one instance can hang while the others answer); returns its URL.
   */
  async listenAnother(): Promise<string> {
    const server = this.createInstance();
    this.instances.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /**
   * A hung apiserver (an etcd stall, a wedged instance): while `hung`, requests to the instance at
   * `url` (every instance when omitted) are accepted and never answered (watches already open are
   * left as they are). When the hang ends, a held request whose client still waits is served then (a
   * late answer); one whose client gave up (closed the connection) is never executed.
   */
  setHung(hung: boolean, url?: string): void {
    const key = url === undefined ? "" : Number(new URL(url).port);
    if (hung) {
      this.hung.add(key);
      return;
    }
    this.hung.delete(key);
    for (const resume of [...this.held]) resume();
  }

  private isHung(port: number | undefined): boolean {
    return this.hung.has("") || (port !== undefined && this.hung.has(port));
  }

  /** Holds a request while its instance hangs: true once it may be served, false when its client left. */
  private async holdWhileHung(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    while (this.isHung(req.socket.localPort)) {
      const served = await new Promise<boolean>((resolve) => {
        const resume = (): void => {
          this.held.delete(resume);
          res.off("close", gone);
          resolve(true);
        };
        const gone = (): void => {
          this.held.delete(resume);
          resolve(false);
        };
        this.held.add(resume);
        res.once("close", gone);
      });
      if (!served) return false;
    }
    return true;
  }

  /** Serves another group/version/resource. */
  register(type: ResourceType): void {
    this.types.set(resourceKey(type), type);
  }

  /** Listens on 127.0.0.1 with an ephemeral port. */
  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    return this;
  }

  /** Ends every watch and stops listening. */
  async close(): Promise<void> {
    if (this.bookmarkTimer !== undefined) clearInterval(this.bookmarkTimer);
    this.closeWatches();
    this.hung.clear();
    for (const server of [this.server, ...this.instances]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  // ---- fault and time hooks for tests ----

  /** While false, every request gets 503 ServiceUnavailable and open watches are cut. */
  setAvailable(available: boolean): void {
    this.available = available;
    if (!available) this.closeWatches();
  }

  /** The next `count` requests (of `method`, when given; watches included) fail with `code`. */
  failNext(count: number, code = 500, method?: string): void {
    const reason = code === 409 ? "Conflict" : code === 429 ? "TooManyRequests" : code === 503 ? "ServiceUnavailable" : "InternalError";
    this.faults.push({ code, reason, remaining: count, method: method?.toUpperCase() });
  }

  /** Ends every open watch stream, as an apiserver restart or a load balancer timeout would. */
  closeWatches(): void {
    for (const watcher of this.watchers) watcher.response.end();
    this.watchers.clear();
  }

  /** Number of open watch streams. */
  get openWatches(): number {
    return this.watchers.size;
  }

  /** Drops the event history: watches from an older resourceVersion now get 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch that allowed bookmarks. */
  bookmark(): void {
    for (const watcher of this.watchers) {
      if (!watcher.bookmarks) continue;
      const object = {
        kind: watcher.type.kind,
        apiVersion: apiVersionOf(watcher.type),
        metadata: { resourceVersion: String(this.store.currentRevision) },
      };
      watcher.response.write(`${JSON.stringify({ type: "BOOKMARK", object })}\n`);
    }
  }

  /** The stored objects of a resource (copies), e.g. `objects("extensions.istio.io/v1alpha1/wasmplugins")`. */
  objects(resource: string): KubeObject[] {
    return this.store.list(resource).map(([, object]) => structuredClone(object));
  }

  // ---- HTTP ----

  private send(res: ServerResponse, body: object, code?: number, headers: Record<string, string> = {}): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    const httpCode = code ?? (body as { code?: number }).code ?? 200;
    res.writeHead(httpCode, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }

  private parsePath(pathname: string): ParsedPath | undefined {
    const segments = pathname.split("/").filter((s) => s !== "").map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === "api" && segments.length >= 2) {
      group = "";
      version = segments[1] as string;
      rest = segments.slice(2);
    } else if (segments[0] === "apis" && segments.length >= 3) {
      group = segments[1] as string;
      version = segments[2] as string;
      rest = segments.slice(3);
    } else {
      return undefined;
    }
    const lookup = (plural: string): ResourceType | undefined => this.types.get(`${group}/${version}/${plural}`);
    // `.../{name}/status` exists only where the type has the status subresource.
    const subresource = (tail: string | undefined, type: ResourceType): boolean | undefined =>
      tail === undefined ? false : tail === "status" && type.statusSubresource === true ? true : undefined;
    if (rest[0] === "namespaces" && rest.length >= 3) {
      const type = lookup(rest[2] as string);
      if (type === undefined || !type.namespaced || rest.length > 5) return undefined;
      const status = subresource(rest[4], type);
      return status === undefined ? undefined : { type, namespace: rest[1], name: rest[3], status };
    }
    if (rest.length >= 1 && rest.length <= 3) {
      const type = lookup(rest[0] as string);
      if (type === undefined) return undefined;
      if (rest.length >= 2 && type.namespaced) return undefined;
      const status = subresource(rest[2], type);
      return status === undefined ? undefined : { type, namespace: undefined, name: rest[1], status };
    }
    return undefined;
  }

  private async readBody(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false; status: status.KubeStatus }> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > this.maxBodyBytes) return { ok: false, status: status.failure(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728") };
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (text === "") return { ok: true, value: undefined };
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (error) {
      return { ok: false, status: status.badRequest(`the body of the request could not be decoded: ${(error as Error).message}`) };
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    const query = Object.fromEntries(url.searchParams.entries());
    const method = (req.method ?? "GET").toUpperCase();
    const recorded: RecordedRequest = { method, path: url.pathname, query, contentType: req.headers["content-type"] };
    this.requests.push(recorded);
    this.emit("request", recorded);
    if (!(await this.holdWhileHung(req, res))) return;
    if (!this.available) {
      this.send(res, status.failure(503, "ServiceUnavailable", "the server is currently unable to handle the request"));
      return;
    }
    const fault = this.faults.find((f) => f.remaining > 0 && (f.method === undefined || f.method === method));
    if (fault !== undefined) {
      fault.remaining -= 1;
      this.send(res, status.failure(fault.code, fault.reason, `injected failure (${fault.code})`));
      return;
    }
    const parsed = this.parsePath(url.pathname);
    if (parsed === undefined) {
      this.send(res, status.failure(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    const isWatch = query.watch === "true" || query.watch === "1";
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (this.rbac !== undefined && bearer !== undefined) {
      const user = this.rbac.users.get(bearer);
      if (user === undefined) {
        this.send(res, status.failure(401, "Unauthorized", "Unauthorized"));
        return;
      }
      const attributes = { user, verb: verbOf(method, parsed.name !== undefined, isWatch), apiGroup: parsed.type.group, resource: parsed.type.plural, subresource: parsed.status ? "status" : "", namespace: parsed.namespace ?? "", name: parsed.name ?? "" };
      if (!this.rbac.authorizer.allows(attributes)) {
        this.send(res, status.failure(403, "Forbidden", forbiddenMessage(attributes)));
        return;
      }
    }
    const table = wantsTable(req.headers.accept);
    if (method === "GET" && parsed.name === undefined) {
      if (isWatch) this.watch(parsed, query, res);
      else this.list(parsed, query, res, table);
      return;
    }
    if (method === "GET") {
      this.get(parsed, res, table);
      return;
    }
    const body = await this.readBody(req);
    if (!body.ok) {
      this.send(res, body.status);
      return;
    }
    const dryRun = query.dryRun === "All";
    const strict = query.fieldValidation === "Strict";
    if (parsed.status && (method === "PUT" || method === "PATCH")) this.writeStatus(parsed, method, body.value, recorded.contentType, dryRun, strict, res);
    else if (parsed.status) this.send(res, status.failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
    else if (method === "POST" && parsed.name === undefined) this.create(parsed, body.value, dryRun, strict, res);
    else if (method === "PUT" && parsed.name !== undefined) this.update(parsed, body.value, dryRun, strict, res);
    else if (method === "PATCH" && parsed.name !== undefined) this.patch(parsed, body.value, recorded.contentType, dryRun, strict, res);
    else if (method === "DELETE" && parsed.name !== undefined) this.delete(parsed, body.value, dryRun, res);
    else this.send(res, status.failure(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`));
  }

  private target(parsed: ParsedPath, name: string): status.Target {
    return { plural: parsed.type.plural, group: parsed.type.group, kind: parsed.type.kind, name };
  }

  private key(namespace: string | undefined, name: string): string {
    return namespace === undefined ? name : `${namespace}/${name}`;
  }

  private selectors(query: Record<string, string>): { labels: Requirement[]; fields: Requirement[] } | status.KubeStatus {
    const labels = parseLabelSelector(query.labelSelector);
    if (!labels.ok) return status.badRequest(`unable to parse requirement: ${labels.error}`);
    const fields = parseFieldSelector(query.fieldSelector);
    if (!fields.ok) return status.badRequest(fields.error);
    return { labels: labels.requirements, fields: fields.requirements };
  }

  private selected(object: KubeObject, namespace: string | undefined, labels: Requirement[], fields: Requirement[]): boolean {
    const meta = object.metadata ?? {};
    if (namespace !== undefined && meta.namespace !== namespace) return false;
    if (!matchesSelector(labels, meta.labels)) return false;
    const fieldValues: Record<string, string> = { "metadata.name": meta.name ?? "", "metadata.namespace": meta.namespace ?? "" };
    return matchesSelector(fields, fieldValues);
  }

  private list(parsed: ParsedPath, query: Record<string, string>, res: ServerResponse, table = false): void {
    const sel = this.selectors(query);
    if ("kind" in sel) {
      this.send(res, sel);
      return;
    }
    if (query.resourceVersion !== undefined && query.resourceVersion !== "" && query.resourceVersion !== "0") {
      const wanted = Number(query.resourceVersion);
      if (!Number.isInteger(wanted)) {
        this.send(res, status.badRequest(`invalid resource version: ${query.resourceVersion}`));
        return;
      }
      if (wanted > this.store.currentRevision) {
        this.send(res, status.failure(504, "Timeout", `Too large resource version: ${wanted}, current: ${this.store.currentRevision}`));
        return;
      }
    }
    let after = "";
    let listRevision = this.store.currentRevision;
    if (query.continue !== undefined && query.continue !== "") {
      let token: { rv?: number; after?: string };
      try {
        token = JSON.parse(Buffer.from(query.continue, "base64url").toString("utf8")) as { rv?: number; after?: string };
      } catch {
        this.send(res, status.badRequest("invalid continue token"));
        return;
      }
      if (typeof token.rv !== "number" || typeof token.after !== "string") {
        this.send(res, status.badRequest("invalid continue token"));
        return;
      }
      if (token.rv < this.store.compactedRevision) {
        this.send(
          res,
          status.expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."),
        );
        return;
      }
      after = token.after;
      listRevision = token.rv;
    }
    const all = this.store
      .list(resourceKey(parsed.type))
      .filter(([key, object]) => key > after && this.selected(object, parsed.namespace, sel.labels, sel.fields));
    const limit = query.limit !== undefined ? Number(query.limit) : 0;
    const page = limit > 0 ? all.slice(0, limit) : all;
    const metadata: { [key: string]: Json } = { resourceVersion: String(listRevision) };
    if (limit > 0 && all.length > limit) {
      const lastKey = (page[page.length - 1] as [string, KubeObject])[0];
      metadata.continue = Buffer.from(JSON.stringify({ rv: listRevision, after: lastKey })).toString("base64url");
      metadata.remainingItemCount = all.length - limit;
    }
    if (table) {
      this.send(res, toTable(parsed.type, page.map(([, object]) => object), String(listRevision), this.now().getTime()) as object, 200);
      return;
    }
    this.send(res, {
      kind: `${parsed.type.kind}List`,
      apiVersion: apiVersionOf(parsed.type),
      metadata,
      items: page.map(([, object]) => object),
    }, 200);
  }

  private watch(parsed: ParsedPath, query: Record<string, string>, res: ServerResponse): void {
    const sel = this.selectors(query);
    if ("kind" in sel) {
      this.send(res, sel);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.flushHeaders();
    const watcher: Watcher = {
      type: parsed.type,
      namespace: parsed.namespace,
      labels: sel.labels,
      fields: sel.fields,
      bookmarks: query.allowWatchBookmarks === "true" || query.allowWatchBookmarks === "1",
      response: res,
      lastSentRevision: this.store.currentRevision,
    };
    const rv = query.resourceVersion;
    if (rv === undefined || rv === "" || rv === "0") {
      // "Any" start: the current state as synthetic ADDED events, then live changes.
      for (const [, object] of this.store.list(resourceKey(parsed.type))) {
        if (this.selected(object, parsed.namespace, sel.labels, sel.fields)) res.write(`${JSON.stringify({ type: "ADDED", object })}\n`);
      }
    } else {
      const from = Number(rv);
      if (!Number.isInteger(from) || from < this.store.compactedRevision) {
        const gone = status.expired(`too old resource version: ${rv} (${this.store.compactedRevision + 1})`);
        gone.code = 410;
        gone.reason = "Expired";
        res.end(`${JSON.stringify({ type: "ERROR", object: gone })}\n`);
        return;
      }
      watcher.lastSentRevision = from;
      for (const event of this.store.eventsAfter(from)) this.deliver(watcher, event);
    }
    this.watchers.add(watcher);
    const timeoutSeconds = Number(query.timeoutSeconds ?? 0);
    let timer: NodeJS.Timeout | undefined;
    if (timeoutSeconds > 0) {
      timer = setTimeout(() => res.end(), timeoutSeconds * 1000);
      timer.unref();
    }
    res.on("close", () => {
      if (timer !== undefined) clearTimeout(timer);
      this.watchers.delete(watcher);
    });
  }

  private fanOut(event: StoredEvent): void {
    for (const watcher of this.watchers) this.deliver(watcher, event);
  }

  private deliver(watcher: Watcher, event: StoredEvent): void {
    if (event.resource !== resourceKey(watcher.type) || event.resourceVersion <= watcher.lastSentRevision) return;
    watcher.lastSentRevision = event.resourceVersion;
    const matchesNow = this.selected(event.object, watcher.namespace, watcher.labels, watcher.fields);
    const matchedBefore = event.previous !== undefined && this.selected(event.previous, watcher.namespace, watcher.labels, watcher.fields);
    let type: string = event.type;
    // A label change moves an object in or out of a selector: the watch sees it appear or vanish.
    if (event.type === "MODIFIED" && matchesNow && !matchedBefore) type = "ADDED";
    else if (event.type === "MODIFIED" && !matchesNow && matchedBefore) type = "DELETED";
    else if (!matchesNow) return;
    watcher.response.write(`${JSON.stringify({ type, object: event.object })}\n`);
  }

  private get(parsed: ParsedPath, res: ServerResponse, table = false): void {
    const name = parsed.name as string;
    const object = this.store.get(resourceKey(parsed.type), this.key(parsed.namespace, name));
    if (object === undefined) this.send(res, status.notFound(this.target(parsed, name)));
    else if (table) this.send(res, toTable(parsed.type, [object], object.metadata?.resourceVersion ?? "", this.now().getTime()) as object, 200);
    else this.send(res, object, 200);
  }

  // Checks kind/apiVersion/name/namespace of a body against the URL.
  private checkIdentity(parsed: ParsedPath, body: unknown): { ok: true; object: KubeObject } | { ok: false; status: status.KubeStatus } {
    if (!isObject(body)) return { ok: false, status: status.badRequest("the body of the request must be a JSON object") };
    const object = structuredClone(body) as KubeObject;
    const expectedApiVersion = apiVersionOf(parsed.type);
    if (object.kind !== parsed.type.kind || object.apiVersion !== expectedApiVersion) {
      return {
        ok: false,
        status: status.badRequest(`the API version in the data (${String(object.apiVersion)}) and kind (${String(object.kind)}) do not match ${expectedApiVersion}, Kind=${parsed.type.kind}`),
      };
    }
    if (!isObject(object.metadata)) object.metadata = {};
    const meta = object.metadata;
    if (parsed.namespace !== undefined) {
      if (meta.namespace !== undefined && meta.namespace !== parsed.namespace) {
        return { ok: false, status: status.badRequest("the namespace of the provided object does not match the namespace sent on the request") };
      }
      meta.namespace = parsed.namespace;
    } else if (parsed.type.namespaced) {
      return { ok: false, status: status.failure(405, "MethodNotAllowed", "namespaced resources must be written through a namespace path") };
    }
    if (parsed.name !== undefined && meta.name !== parsed.name) {
      return { ok: false, status: status.badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${parsed.name})`) };
    }
    return { ok: true, object };
  }

  // ObjectMeta, then the CRD schema or the built-in type's decoding and validation; returns a
  // Status to send, or the warnings for pruned fields. `old` is the stored object on updates.
  private validate(parsed: ParsedPath, object: KubeObject, strict: boolean, old?: KubeObject): { ok: true; warnings: string[] } | { ok: false; status: status.KubeStatus } {
    const name = object.metadata?.name ?? "";
    const causes: status.StatusCause[] = validateObjectMeta(object.metadata ?? {});
    let unknown: string[] = [];
    const schema = parsed.type.schema ?? parsed.type.native?.schema;
    if (schema !== undefined) {
      const outcome = validateObject(schema, object, old);
      unknown = outcome.unknownFields;
      if (parsed.type.native !== undefined) {
        // A built-in type's wire types are Go struct fields: a mismatch fails decoding (400).
        const typeError = outcome.causes.find((c) => c.reason === "FieldValueTypeInvalid" || c.reason === "FieldValueInvalid");
        if (typeError !== undefined) return { ok: false, status: status.badRequest(`json: cannot unmarshal into Go struct field ${parsed.type.kind}.${typeError.field}: ${typeError.message}`) };
      } else {
        causes.push(...outcome.causes);
      }
    }
    if (unknown.length > 0 && strict) {
      return { ok: false, status: status.badRequest(`strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(", ")}`) };
    }
    if (parsed.type.native !== undefined) {
      const native = parsed.type.native.validate(object, old);
      if (native.decode !== undefined) return { ok: false, status: status.badRequest(native.decode) };
      causes.push(...native.causes);
    }
    if (causes.length > 0) return { ok: false, status: status.invalid(this.target(parsed, name), causes) };
    return { ok: true, warnings: unknown.map((f) => `unknown field "${f}"`) };
  }

  private warningHeaders(warnings: string[]): Record<string, string> {
    return warnings.length === 0 ? {} : { warning: warnings.map((w) => `299 - "${w}"`).join(", ") };
  }

  private create(parsed: ParsedPath, body: unknown, dryRun: boolean, strict: boolean, res: ServerResponse): void {
    const identity = this.checkIdentity(parsed, body);
    if (!identity.ok) {
      this.send(res, identity.status);
      return;
    }
    const object = identity.object;
    const meta = object.metadata as NonNullable<KubeObject["metadata"]>;
    if (meta.name === undefined && typeof meta.generateName === "string") meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== "") {
      this.send(res, status.invalid(this.target(parsed, meta.name ?? ""), [
        { reason: "FieldValueForbidden", field: "metadata.resourceVersion", message: "Forbidden: resourceVersion should not be set on objects to be created" },
      ]));
      return;
    }
    const checked = this.validate(parsed, object, strict);
    if (!checked.ok) {
      this.send(res, checked.status);
      return;
    }
    const name = meta.name as string;
    const key = this.key(parsed.namespace, name);
    const resource = resourceKey(parsed.type);
    if (this.store.get(resource, key) !== undefined) {
      this.send(res, status.alreadyExists(this.target(parsed, name)));
      return;
    }
    meta.uid = randomUUID();
    meta.creationTimestamp = this.now().toISOString().replace(/\.\d{3}Z$/, "Z");
    meta.generation = 1;
    if (parsed.type.statusSubresource) delete object.status;
    // The establishing controller accepts the names and serves the versions at once here.
    if (parsed.type === crdType) object.status = establishedStatus(object, meta.creationTimestamp);
    if (dryRun) {
      this.send(res, object, 201, this.warningHeaders(checked.warnings));
      return;
    }
    const revision = this.store.nextRevision();
    meta.resourceVersion = String(revision);
    this.store.commit({ resourceVersion: revision, type: "ADDED", resource, object }, key);
    this.send(res, object, 201, this.warningHeaders(checked.warnings));
  }

  // Shared by PUT and PATCH: `object` is the full desired object; `current` the stored one.
  private write(parsed: ParsedPath, current: KubeObject, object: KubeObject, dryRun: boolean, strict: boolean, res: ServerResponse): void {
    const name = parsed.name as string;
    const meta = object.metadata as NonNullable<KubeObject["metadata"]>;
    const currentMeta = current.metadata ?? {};
    if (meta.resourceVersion === undefined || meta.resourceVersion === "") {
      if (!parsed.type.allowUnconditionalUpdate) {
        this.send(res, status.invalid(this.target(parsed, name), [
          { reason: "FieldValueInvalid", field: "metadata.resourceVersion", message: "Invalid value: 0x0: must be specified for an update" },
        ]));
        return;
      }
    } else if (meta.resourceVersion !== currentMeta.resourceVersion) {
      this.send(res, status.conflict(this.target(parsed, name)));
      return;
    }
    const checked = this.validate(parsed, object, strict, current);
    if (!checked.ok) {
      this.send(res, checked.status);
      return;
    }
    // Server-owned fields survive any write.
    meta.uid = currentMeta.uid as string;
    meta.creationTimestamp = currentMeta.creationTimestamp as string;
    meta.resourceVersion = currentMeta.resourceVersion as string;
    meta.generation = currentMeta.generation as number;
    if (parsed.type.statusSubresource) {
      if (current.status === undefined) delete object.status;
      else object.status = current.status;
    }
    const headers = this.warningHeaders(checked.warnings);
    if (canonical(object as Json) === canonical(current as Json)) {
      // A no-op write changes nothing: same resourceVersion, no watch event.
      this.send(res, current, 200, headers);
      return;
    }
    if (generationPart(object, parsed.type) !== generationPart(current, parsed.type)) meta.generation = (currentMeta.generation ?? 0) + 1;
    if (dryRun) {
      this.send(res, object, 200, headers);
      return;
    }
    const revision = this.store.nextRevision();
    meta.resourceVersion = String(revision);
    this.store.commit({ resourceVersion: revision, type: "MODIFIED", resource: resourceKey(parsed.type), object, previous: current }, this.key(parsed.namespace, name));
    this.send(res, object, 200, headers);
  }

  private update(parsed: ParsedPath, body: unknown, dryRun: boolean, strict: boolean, res: ServerResponse): void {
    const identity = this.checkIdentity(parsed, body);
    if (!identity.ok) {
      this.send(res, identity.status);
      return;
    }
    const name = parsed.name as string;
    const current = this.store.get(resourceKey(parsed.type), this.key(parsed.namespace, name));
    if (current === undefined) {
      this.send(res, status.notFound(this.target(parsed, name)));
      return;
    }
    this.write(parsed, current, identity.object, dryRun, strict, res);
  }

  private patch(parsed: ParsedPath, body: unknown, contentType: string | undefined, dryRun: boolean, strict: boolean, res: ServerResponse): void {
    const name = parsed.name as string;
    const current = this.store.get(resourceKey(parsed.type), this.key(parsed.namespace, name));
    const mediaType = (contentType ?? "").split(";")[0]?.trim();
    if (mediaType !== "application/merge-patch+json" && mediaType !== "application/json-patch+json") {
      this.send(res, status.failure(
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json`,
      ));
      return;
    }
    if (current === undefined) {
      this.send(res, status.notFound(this.target(parsed, name)));
      return;
    }
    let patched: Json;
    if (mediaType === "application/merge-patch+json") {
      if (!isObject(body)) {
        this.send(res, status.badRequest("merge patch must be a JSON object"));
        return;
      }
      patched = mergePatch(current as Json, body);
    } else {
      const result = jsonPatch(current as Json, body);
      if (!result.ok) {
        this.send(res, status.failure(422, "Invalid", result.error));
        return;
      }
      patched = result.value;
    }
    const identity = this.checkIdentity(parsed, patched);
    if (!identity.ok) {
      this.send(res, identity.status);
      return;
    }
    // A patch is conditional only when it sets metadata.resourceVersion itself.
    const object = identity.object;
    const meta = object.metadata as NonNullable<KubeObject["metadata"]>;
    if (meta.resourceVersion === undefined) meta.resourceVersion = current.metadata?.resourceVersion as string;
    this.write(parsed, current, object, dryRun, strict, res);
  }

  // customresource/status_strategy.go PrepareForUpdate: a write to /status changes status only;
  // spec and metadata come from the stored object, and generation does not move.
  private writeStatus(parsed: ParsedPath, method: string, body: unknown, contentType: string | undefined, dryRun: boolean, strict: boolean, res: ServerResponse): void {
    const name = parsed.name as string;
    const current = this.store.get(resourceKey(parsed.type), this.key(parsed.namespace, name));
    if (current === undefined) {
      this.send(res, status.notFound(this.target(parsed, name)));
      return;
    }
    let submitted: unknown = body;
    if (method === "PATCH") {
      const mediaType = (contentType ?? "").split(";")[0]?.trim();
      if (mediaType === "application/merge-patch+json" && isObject(body)) submitted = mergePatch(current as Json, body);
      else if (mediaType === "application/json-patch+json") {
        const result = jsonPatch(current as Json, body);
        if (!result.ok) {
          this.send(res, status.failure(422, "Invalid", result.error));
          return;
        }
        submitted = result.value;
      } else {
        this.send(res, status.failure(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"));
        return;
      }
    }
    const identity = this.checkIdentity(parsed, submitted);
    if (!identity.ok) {
      this.send(res, identity.status);
      return;
    }
    const given = identity.object.metadata?.resourceVersion;
    const currentVersion = current.metadata?.resourceVersion;
    // A PATCH is conditional only when it names a resourceVersion; a PUT to a custom resource must.
    if (method === "PUT" && (given === undefined || given === "") && !parsed.type.allowUnconditionalUpdate) {
      this.send(res, status.invalid(this.target(parsed, name), [{ reason: "FieldValueInvalid", field: "metadata.resourceVersion", message: "Invalid value: 0x0: must be specified for an update" }]));
      return;
    }
    if (given !== undefined && given !== "" && given !== currentVersion) {
      this.send(res, status.conflict(this.target(parsed, name)));
      return;
    }
    const object = structuredClone(current);
    if (identity.object.status === undefined) delete object.status;
    else object.status = identity.object.status;
    const checked = this.validate(parsed, object, strict, current);
    if (!checked.ok) {
      this.send(res, checked.status);
      return;
    }
    const headers = this.warningHeaders(checked.warnings);
    if (canonical(object as Json) === canonical(current as Json) || dryRun) {
      this.send(res, dryRun ? object : current, 200, headers);
      return;
    }
    const revision = this.store.nextRevision();
    (object.metadata as NonNullable<KubeObject["metadata"]>).resourceVersion = String(revision);
    this.store.commit({ resourceVersion: revision, type: "MODIFIED", resource: resourceKey(parsed.type), object, previous: current }, this.key(parsed.namespace, name));
    this.send(res, object, 200, headers);
  }

  private delete(parsed: ParsedPath, body: unknown, dryRun: boolean, res: ServerResponse): void {
    const name = parsed.name as string;
    const resource = resourceKey(parsed.type);
    const key = this.key(parsed.namespace, name);
    const current = this.store.get(resource, key);
    if (current === undefined) {
      this.send(res, status.notFound(this.target(parsed, name)));
      return;
    }
    const preconditions = isObject(body) && isObject(body.preconditions) ? body.preconditions : {};
    const meta = current.metadata ?? {};
    if (
      (typeof preconditions.resourceVersion === "string" && preconditions.resourceVersion !== meta.resourceVersion) ||
      (typeof preconditions.uid === "string" && preconditions.uid !== meta.uid)
    ) {
      this.send(res, status.failure(409, "Conflict", `Operation cannot be fulfilled on ${parsed.type.plural} "${name}": Precondition failed: UID in precondition: ${String(preconditions.uid ?? "")}, ResourceVersion in precondition: ${String(preconditions.resourceVersion ?? "")}`));
      return;
    }
    if (dryRun) {
      this.send(res, current, 200);
      return;
    }
    const revision = this.store.nextRevision();
    const object = structuredClone(current);
    (object.metadata as NonNullable<KubeObject["metadata"]>).resourceVersion = String(revision);
    this.store.commit({ resourceVersion: revision, type: "DELETED", resource, object, previous: current }, key);
    this.send(res, object, 200);
  }
}
