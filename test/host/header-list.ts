// A header map as Envoy's HeaderMapImpl keeps one (envoyproxy/envoy source/common/http/header_map_impl.cc):
// ordered entries with lower-case names, pseudo-headers first, duplicates allowed except for Envoy's
// inline (O(1)) headers, whose later values are appended to the one entry with a comma.
import type { Pairs } from "./pairs.js";

/** Read-only view of a header map as the filter left it. */
export interface HeaderMap {
  get(name: string): string | undefined;
  getAll(name: string): string[];
  entries(): Array<[string, string]>;
}

/** Which map a HeaderList is: the inline headers differ (INLINE_REQ_HEADERS, INLINE_RESP_HEADERS ...). */
export type HeaderMapKind = "request" | "response" | "trailers" | "other";

// INLINE_REQ_RESP_STRING_HEADERS and INLINE_REQ_RESP_NUMERIC_HEADERS.
const REQ_RESP = [
  "connection", "content-type", "x-envoy-decorator-operation", "keep-alive", "proxy-connection", "proxy-status", "x-request-id",
  "transfer-encoding", "upgrade", "via", "content-length", "x-envoy-attempt-count",
];
// INLINE_REQ_STRING_HEADERS, INLINE_REQ_NUMERIC_HEADERS, and referer (registered inline by the
// expression library every Wasm build links, filters/common/expr/context.cc referer_handle).
const REQ_ONLY = [
  "x-client-trace-id", "x-envoy-downstream-service-cluster", "x-envoy-downstream-service-node", "x-envoy-external-address",
  "x-envoy-force-trace", "x-envoy-hedge-on-per-try-timeout", "x-envoy-internal", "x-envoy-ip-tags", "x-envoy-retry-on",
  "x-envoy-retry-grpc-on", "x-envoy-retriable-status-codes", "x-envoy-retriable-header-names", "x-envoy-original-path",
  "x-envoy-original-url", "x-envoy-upstream-alt-stat-name", "x-envoy-upstream-rq-timeout-alt-response", "expect",
  "x-forwarded-client-cert", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "grpc-timeout", ":authority", ":method",
  ":path", ":protocol", ":scheme", "te", "user-agent", "x-envoy-expected-rq-timeout-ms", "x-envoy-max-retries",
  "x-envoy-upstream-rq-timeout-ms", "x-envoy-upstream-rq-per-try-timeout-ms", "x-envoy-upstream-stream-duration-ms", "referer",
];
// INLINE_RESP_STRING_HEADERS, INLINE_RESP_NUMERIC_HEADERS and the ones shared with trailers.
const RESP_ONLY = [
  "date", "x-envoy-degraded", "x-envoy-immediate-health-check-fail", "x-envoy-ratelimited", "x-envoy-upstream-canary",
  "x-envoy-upstream-healthchecked-cluster", "location", "server", "x-envoy-upstream-service-time", ":status",
];
const RESP_TRAILERS = ["grpc-status", "grpc-message"];

const INLINE: Record<HeaderMapKind, ReadonlySet<string>> = {
  request: new Set([...REQ_RESP, ...REQ_ONLY]),
  response: new Set([...REQ_RESP, ...RESP_ONLY, ...RESP_TRAILERS]),
  trailers: new Set(RESP_TRAILERS),
  other: new Set(),
};

/** The mutable map behind a stream's request/response headers or trailers. */
export class HeaderList implements HeaderMap {
  private readonly list: Pairs = [];
  private readonly inline: ReadonlySet<string>;

  /** Builds the map as Envoy's codec does (addViaMove): repeated inline headers are joined. */
  constructor(pairs: ReadonlyArray<readonly [string, string]> = [], kind: HeaderMapKind = "other") {
    this.inline = INLINE[kind];
    // Streams build maps on every request: plain pushes, add() only where order or joining matters.
    const list = this.list;
    let regular = false;
    for (let i = 0; i < pairs.length; i++) {
      const p = pairs[i]!;
      const key = lower(p[0]);
      const pseudo = key.charCodeAt(0) === 0x3a;
      if ((pseudo && regular) || (this.inline.has(key) && this.indexOf(key) >= 0)) {
        this.add(key, p[1]);
        continue;
      }
      list.push([key, p[1]]);
      if (!pseudo) regular = true;
    }
  }

  private indexOf(key: string): number {
    const list = this.list;
    for (let i = 0; i < list.length; i++) if (list[i]![0] === key) return i;
    return -1;
  }

  get size(): number {
    return this.list.length;
  }

  /** Envoy's HeaderMap::byteSize: the sum of every key and value length in bytes. */
  byteSize(): number {
    let n = 0;
    for (const [k, v] of this.list) n += Buffer.byteLength(k) + Buffer.byteLength(v);
    return n;
  }

  // Lookups run on every host call of every request: index loops, no iterator or closure, and
  // no lower-casing of a name that is already lower-case (what modules send).
  /** HeaderMap::get(key)[0]: the first value of the name. */
  get(name: string): string | undefined {
    const key = lower(name);
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e[0] === key) return e[1];
    }
    return undefined;
  }

  getAll(name: string): string[] {
    const key = lower(name);
    const out: string[] = [];
    for (const [k, v] of this.list) if (k === key) out.push(v);
    return out;
  }

  entries(): Array<[string, string]> {
    return this.list.map(([k, v]) => [k, v]);
  }

  /** The live entries, for serialising without a copy. */
  raw(): ReadonlyArray<readonly [string, string]> {
    return this.list;
  }

  /**
   * HeaderMapImpl::insertByKey (addCopy): an inline header already present gets the value appended
   * (appendToHeader, "; " for cookie, else ","); any other adds an entry, a pseudo-header after the
   * other pseudo-headers (HeaderList::insert).
   */
  add(name: string, value: string): void {
    const key = lower(name);
    const list = this.list;
    if (this.inline.has(key)) {
      for (let i = 0; i < list.length; i++) {
        const e = list[i]!;
        if (e[0] !== key) continue;
        list[i] = [key, e[1].length === 0 ? value : `${e[1]}${key === "cookie" ? "; " : ","}${value}`];
        return;
      }
    }
    if (key.startsWith(":")) {
      let at = 0;
      while (at < list.length && list[at]![0].startsWith(":")) at++;
      list.splice(at, 0, [key, value]);
      return;
    }
    list.push([key, value]);
  }

  /** HeaderMapImpl::setCopy: remove(key), then addCopy: every value goes, one new entry is added. */
  replace(name: string, value: string): void {
    this.remove(name);
    this.add(name, value);
  }

  /** HeaderMapImpl::remove: every entry of the name. */
  remove(name: string): void {
    const key = lower(name);
    const list = this.list;
    for (let i = list.length - 1; i >= 0; i--) if (list[i]![0] === key) list.splice(i, 1);
  }

  /** Context::setHeaderMapPairs: every entry removed, then each pair added (addCopy). */
  setAll(pairs: Pairs): void {
    this.list.length = 0;
    for (const [k, v] of pairs) this.add(k, v);
  }
}

/** `name` lower-cased (Http::LowerCaseString), without a new string when it already is. */
function lower(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return name.toLowerCase();
  }
  return name;
}
