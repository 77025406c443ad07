// proxy_get_property as Envoy answers it: a path of segments joined by NUL; strings come back raw,
// integers, timestamps (ns since the epoch) and durations (ns) as 8-byte little-endian, maps in the
// pairs format.
import { encodePairs } from "./pairs.js";
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
 * Resolves a property path, or returns undefined for NotFound. Integers, times and durations come
 * back as bigint (the caller writes them as 8-byte little-endian). Envoy >= 1.33 removed the
 * top-level `route_name`, `cluster_name` and `node`, so those are NotFound here too.
 */
export function resolveProperty(path: string, vm: VmFacts, stream: StreamFacts | undefined): Buffer | string | bigint | undefined {
  switch (path) {
    case "plugin_root_id":
      return vm.rootId;
    case "plugin_name":
      return vm.pluginName;
    case "plugin_vm_id":
      return vm.vmId;
  }
  if (!stream) return undefined;
  const h = stream.requestHeaders;
  switch (path) {
    case "xds\0route_name":
      return stream.routeName;
    case "xds\0cluster_name":
      return stream.clusterName;
    case "request\0time":
      return stream.startTimeNs;
    case "request\0duration":
      return stream.durationNs;
    case "request\0id":
      return stream.requestId ?? h?.get("x-request-id");
    case "response\0code":
      return stream.responseCode === undefined ? undefined : BigInt(stream.responseCode);
    case "request\0path":
      return h?.get(":path");
    case "request\0url_path":
      return h?.get(":path")?.split("?")[0];
    case "request\0query": {
      const p = h?.get(":path");
      if (p === undefined) return undefined;
      const q = p.indexOf("?");
      return q < 0 ? "" : p.slice(q + 1);
    }
    case "request\0host":
      return h?.get(":authority");
    case "request\0method":
      return h?.get(":method");
    case "request\0scheme":
      return h?.get(":scheme");
    case "request\0referer":
      return h?.get("referer");
    case "request\0useragent":
      return h?.get("user-agent");
    case "request\0headers":
      return h ? encodeMap(h.raw()) : undefined;
    case "response\0headers":
      return stream.responseHeaders ? encodeMap(stream.responseHeaders.raw()) : undefined;
    case "response\0trailers":
      return stream.responseTrailers ? encodeMap(stream.responseTrailers.raw()) : undefined;
  }
  const seg = splitPropertyPath(path);
  if (seg.length !== 3 || seg[2] === undefined) return undefined;
  if (seg[0] === "request" && seg[1] === "headers") return h?.get(seg[2]);
  if (seg[0] === "response" && seg[1] === "headers") return stream.responseHeaders?.get(seg[2]);
  if (seg[0] === "response" && seg[1] === "trailers") return stream.responseTrailers?.get(seg[2]);
  return undefined;
}
