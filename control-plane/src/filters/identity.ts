// Who is calling the filter-facing listener. Three ways, one per `filters.auth`:
//
// - mesh: the SPIFFE identity of the calling workload, as the control plane's own sidecar states it
//   in X-Forwarded-Client-Cert (XFCC). Istio programs the sidecar's inbound HTTP connection manager
//   with forward_client_cert_details APPEND_FORWARD by default, or what the pod's
//   proxy.istio.io/config `proxyHeaders.forwardedClientCert` says, and sets the current client
//   certificate's Subject, URI and DNS (istio/istio 86c9f01f
//   pilot/pkg/networking/core/listener_inbound.go buildSidecarInboundHTTPOpts, and
//   pilot/pkg/networking/util/proxy_headers.go GetProxyHeadersFromProxyConfig). Envoy removes the
//   header on a connection that is not mutual TLS, and under APPEND_FORWARD / SANITIZE_SET appends
//   (or sets) one element `By=<its own URI SAN>;Hash=...;Subject="...";URI=<the peer's URI SAN>;DNS=...`
//   (envoyproxy/envoy 0066317b source/common/http/conn_manager_utility.cc mutateXfccRequestHeader).
//   So what a client sends itself can only come before the element Envoy adds: the last element is
//   the sidecar's, and only it is read. It is trustworthy only when every connection to this port
//   passes through the sidecar with mTLS: the shipped manifests inject the control plane, capture
//   only this port, bind it to loopback behind the sidecar, make it STRICT and set SANITIZE_SET
//   (docs/security.md).
// - token: a bearer token per namespace (`<namespace>:<token>`), for deployments without a mesh.
// - none: everyone who can connect; config.ts allows it only on a loopback address.
import type { IncomingHttpHeaders } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { authenticate, type TokenEntry } from "../api/auth.js";
import { ApiError } from "../api/errors.js";
import type { FilterAuth } from "./config.js";

/** An authenticated caller of the filter-facing listener. */
export interface FilterCaller {
  /** A bounded name for per-source accounting and logs: a SPIFFE id, `token:<namespace>` or `local`. */
  source: string;
  /** The namespace the caller may act for; undefined = any (auth none, loopback only). */
  namespace: string | undefined;
}

declare module "express-serve-static-core" {
  interface Request {
    /** The filter-facing listener's caller (set by {@link filterCallerAuth}). */
    filterCaller?: FilterCaller;
  }
}

/** The largest XFCC value read; Envoy's element for one certificate without Cert/Chain is far smaller. */
export const maxXfccBytes = 8192;

/**
 * Splits an XFCC value into elements of key/value pairs (Envoy's format: `,` between elements,
 * `;` between pairs, `=` in a pair, values with those characters double-quoted, `\"` inside quotes);
 * undefined when malformed. Keys are lower-cased (Envoy writes By, Hash, Cert, Chain, Subject, URI, DNS).
 */
export function parseXfcc(value: string): Map<string, string[]>[] | undefined {
  if (value.length > maxXfccBytes) return undefined;
  const elements: Map<string, string[]>[] = [];
  let element = new Map<string, string[]>();
  let i = 0;
  const n = value.length;
  for (;;) {
    while (i < n && (value[i] === " " || value[i] === "\t")) i++;
    const eq = value.indexOf("=", i);
    if (eq < 0) return undefined;
    const key = value.slice(i, eq).trim().toLowerCase();
    if (!/^[a-z]+$/.test(key)) return undefined;
    i = eq + 1;
    let text = "";
    if (value[i] === '"') {
      i++;
      for (;;) {
        if (i >= n) return undefined;
        const c = value[i] as string;
        if (c === "\\" && i + 1 < n) {
          text += value[i + 1];
          i += 2;
        } else if (c === '"') {
          i++;
          break;
        } else {
          text += c;
          i++;
        }
      }
    } else {
      const start = i;
      while (i < n && value[i] !== ";" && value[i] !== ",") i++;
      text = value.slice(start, i).trim();
    }
    const list = element.get(key);
    if (list === undefined) element.set(key, [text]);
    else list.push(text);
    while (i < n && (value[i] === " " || value[i] === "\t")) i++;
    if (i >= n) break;
    if (value[i] === ";") {
      i++;
      continue;
    }
    if (value[i] === ",") {
      elements.push(element);
      element = new Map();
      i++;
      continue;
    }
    return undefined;
  }
  elements.push(element);
  return elements;
}

/** A SPIFFE id of Istio's form `spiffe://<trust domain>/ns/<namespace>/sa/<service account>`. */
export function parseIstioSpiffe(uri: string, trustDomain: string): { namespace: string; serviceAccount: string } | undefined {
  const match = /^spiffe:\/\/([^/]+)\/ns\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/sa\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(uri);
  if (match === null || match[1] !== trustDomain || (match[2] as string).length > 63 || (match[4] as string).length > 253) return undefined;
  return { namespace: match[2] as string, serviceAccount: match[4] as string };
}

/** The caller named by the last XFCC element (the one the sidecar added), or why there is none. */
export function meshCaller(header: string | undefined, trustDomain: string): FilterCaller | string {
  if (header === undefined || header === "") return "no X-Forwarded-Client-Cert: the request did not come through the control plane's sidecar over mutual TLS";
  const elements = parseXfcc(header);
  if (elements === undefined) return "malformed X-Forwarded-Client-Cert";
  const last = elements[elements.length - 1] as Map<string, string[]>;
  const uris = last.get("uri") ?? [];
  if (uris.length !== 1) return "the sidecar's X-Forwarded-Client-Cert element must carry exactly one URI (the peer's SPIFFE id)";
  const id = parseIstioSpiffe(uris[0] as string, trustDomain);
  if (id === undefined) return `the peer's identity is not a SPIFFE id of trust domain ${trustDomain} (spiffe://${trustDomain}/ns/<namespace>/sa/<account>)`;
  return { source: `spiffe://${trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`, namespace: id.namespace };
}

/** The caller of a request under `auth`, or the 401 to answer. */
export function filterCaller(auth: FilterAuth, options: { trustDomain: string; tokens: readonly TokenEntry[] }, headers: IncomingHttpHeaders): FilterCaller | ApiError {
  if (auth === "none") return { source: "local", namespace: undefined };
  if (auth === "token") {
    const id = authenticate(options.tokens, headers.authorization);
    if (id === undefined) return new ApiError(401, "unauthorized", [{ field: "authorization", reason: "missing or unknown bearer token (filters.tokens: one per namespace)" }], { "www-authenticate": 'Bearer realm="tokentrace-filters"' });
    return { source: `token:${id}`, namespace: id };
  }
  const xfcc = headers["x-forwarded-client-cert"];
  const caller = meshCaller(Array.isArray(xfcc) ? xfcc.join(",") : xfcc, options.trustDomain);
  return typeof caller === "string" ? new ApiError(401, "unauthorized", [{ field: "x-forwarded-client-cert", reason: caller }]) : caller;
}

/** Middleware: every request of the filter-facing listener is authenticated the configured way. */
export function filterCallerAuth(auth: FilterAuth, options: { trustDomain: string; tokens: readonly TokenEntry[] }) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const caller = filterCaller(auth, options, req.headers);
    if (caller instanceof ApiError) {
      next(caller);
      return;
    }
    req.filterCaller = caller;
    next();
  };
}
