// proxy_get_property as Envoy answers it: a path of segments joined by NUL; strings come back raw,
// integers, timestamps (ns since the epoch) and durations (ns) as 8-byte little-endian, maps in the
// pairs format.
import { encodePairs, type Pairs } from "./pairs.js";
import type { HeaderList } from "./headers.js";

/** Joins property path segments the way a module sends them. */
export function propertyPath(...segments: string[]): string {
  return segments.join("\0");
}

/** Splits a NUL-joined property path into its segments. */
export function splitPropertyPath(path: string): string[] {
  return path.split("\0");
}

/** An integer property value: int64, little-endian, 8 bytes. */
export function encodeInt64(v: bigint | number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt.asIntN(64, BigInt(v)));
  return b;
}

/** A map property value (headers), in the pairs format. */
export function encodeMap(pairs: ReadonlyArray<readonly [string, string]>): Buffer {
  return encodePairs(pairs);
}

/** What a stream context can answer about itself. */
export interface StreamFacts {
  routeName?: string;
  clusterName?: string;
  requestId?: string;
  startTimeNs: bigint;
  durationNs?: bigint;
  responseCode?: number;
  requestHeaders?: HeaderList;
  responseHeaders?: HeaderList;
  responseTrailers?: HeaderList;
}

/** What the VM answers in any context. */
export interface VmFacts {
  rootId: string;
  pluginName: string;
  vmId: string;
}

/**
 * Resolves a property path, or returns undefined for NotFound. Envoy >= 1.33 removed the top-level
 * `route_name`, `cluster_name` and `node`, so those are NotFound here too.
 */
export function resolveProperty(path: string, vm: VmFacts, stream: StreamFacts | undefined): Buffer | string | undefined {
  const seg = splitPropertyPath(path);
  const [head, second, third] = seg;
  switch (head) {
    case "plugin_root_id":
      return seg.length === 1 ? vm.rootId : undefined;
    case "plugin_name":
      return seg.length === 1 ? vm.pluginName : undefined;
    case "plugin_vm_id":
      return seg.length === 1 ? vm.vmId : undefined;
  }
  if (!stream) return undefined;
  if (head === "xds" && seg.length === 2) {
    if (second === "route_name") return stream.routeName;
    if (second === "cluster_name") return stream.clusterName;
    return undefined;
  }
  if (head === "request") {
    if (second === "time" && seg.length === 2) return encodeInt64(stream.startTimeNs);
    if (second === "duration" && seg.length === 2) return stream.durationNs === undefined ? undefined : encodeInt64(stream.durationNs);
    const h = stream.requestHeaders;
    if (second === "id" && seg.length === 2) return stream.requestId ?? h?.get("x-request-id");
    if (!h) return undefined;
    if (second === "headers") {
      if (seg.length === 2) return encodeMap(h.raw());
      return seg.length === 3 && third !== undefined ? h.get(third) : undefined;
    }
    if (seg.length !== 2) return undefined;
    const rawPath = h.get(":path");
    switch (second) {
      case "path":
        return rawPath;
      case "url_path":
        return rawPath === undefined ? undefined : rawPath.split("?")[0];
      case "query": {
        if (rawPath === undefined) return undefined;
        const q = rawPath.indexOf("?");
        return q < 0 ? "" : rawPath.slice(q + 1);
      }
      case "host":
        return h.get(":authority");
      case "method":
        return h.get(":method");
      case "scheme":
        return h.get(":scheme");
      case "referer":
        return h.get("referer");
      case "useragent":
        return h.get("user-agent");
    }
    return undefined;
  }
  if (head === "response") {
    if (second === "code" && seg.length === 2) return stream.responseCode === undefined ? undefined : encodeInt64(stream.responseCode);
    const map = second === "headers" ? stream.responseHeaders : second === "trailers" ? stream.responseTrailers : undefined;
    if (!map) return undefined;
    if (seg.length === 2) return encodeMap(map.raw() as Pairs);
    return seg.length === 3 && third !== undefined ? map.get(third) : undefined;
  }
  return undefined;
}
