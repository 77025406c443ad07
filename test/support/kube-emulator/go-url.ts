// Go's net/url as the API server runs it, for Kubernetes' CEL URL library (cel-urls.ts): parse
// (Parse / ParseRequestURI), String, Hostname, Port, EscapedPath and Query. Read at golang/go
// 7e6685ce src/net/url/url.go and 051bdf3f src/net/netip/netip.go (ParseAddr); parseHost carries
// the later IP-literal rule of golang/go#77578 (CVE-2026-25679, "reject IPv6 literal not at start
// of host": a '[' only at the start, its content an IPv6 address, never IPv4) and the one-colon
// host rule for http(s) (go.dev/issue/75223) that GODEBUG urlstrictcolons turns on by default
// from Go 1.26 (internal/godebugs table: Changed 26), which kubernetes/apiserver 24a394e5 builds
// with (go.mod: godebug default=go1.26); so the emulation is never more lenient than the newest
// API server. Go strings are bytes: the input is worked on as UTF-8 bytes (one char per byte) and
// decoded back at the end.
import { isIPv6 } from "node:net";

/** The parts of a parsed URL that the CEL library reads. */
export interface GoUrl {
  scheme: string;
  opaque: string;
  user?: { username: string; password?: string };
  host: string;
  path: string;
  rawPath: string;
  omitHost: boolean;
  forceQuery: boolean;
  rawQuery: string;
  fragment: string;
  rawFragment: string;
}

export type GoUrlResult = { ok: true; url: GoUrl } | { ok: false; error: string };

type Mode = "path" | "pathSegment" | "host" | "zone" | "userPassword" | "queryComponent" | "fragment";

const bytesOf = (s: string): string => Buffer.from(s, "utf8").toString("latin1");
const textOf = (b: string): string => Buffer.from(b, "latin1").toString("utf8");
const isAlnum = (c: string): boolean => /^[A-Za-z0-9]$/.test(c);
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9A-Fa-f]$/.test(c);

// url.go shouldEscape: RFC 3986 with Go's allowances per URL part.
function shouldEscape(c: string, mode: Mode): boolean {
  if (isAlnum(c)) return false;
  if ((mode === "host" || mode === "zone") && "!$&'()*+,;=:[]<>\"".includes(c)) return false;
  if ("-_.~".includes(c)) return false;
  if ("$&+,/:;=?@".includes(c)) {
    switch (mode) {
      case "path":
        return c === "?";
      case "pathSegment":
        return c === "/" || c === ";" || c === "," || c === "?";
      case "userPassword":
        return c === "@" || c === "/" || c === "?" || c === ":";
      case "queryComponent":
        return true;
      case "fragment":
        return false;
      default:
        break;
    }
  }
  if (mode === "fragment" && "!()*".includes(c)) return false;
  return true;
}

// url.go unescape: %XX well-formed; in a host only non-ASCII bytes (and %25) may be escaped.
function unescape(s: string, mode: Mode): { ok: true; value: string } | { ok: false; error: string } {
  let out = "";
  for (let i = 0; i < s.length; ) {
    const c = s[i] as string;
    if (c === "%") {
      if (i + 2 >= s.length || !isHex(s[i + 1]) || !isHex(s[i + 2])) return { ok: false, error: `invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}` };
      const byte = parseInt(s.slice(i + 1, i + 3), 16);
      if (mode === "host" && byte < 0x80 && s.slice(i, i + 3) !== "%25") return { ok: false, error: `invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}` };
      if (mode === "zone" && s.slice(i, i + 3) !== "%25" && byte !== 0x20 && shouldEscape(String.fromCharCode(byte), "host")) return { ok: false, error: `invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}` };
      out += String.fromCharCode(byte);
      i += 3;
      continue;
    }
    if ((mode === "host" || mode === "zone") && c.charCodeAt(0) < 0x80 && shouldEscape(c, mode)) return { ok: false, error: `invalid character ${JSON.stringify(c)} in host name` };
    out += c === "+" && mode === "queryComponent" ? " " : c;
    i++;
  }
  return { ok: true, value: out };
}

// url.go escape.
function escape(s: string, mode: Mode): string {
  let out = "";
  for (const c of s) {
    if (c === " " && mode === "queryComponent") out += "+";
    else if (shouldEscape(c, mode)) out += `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;
    else out += c;
  }
  return out;
}

// url.go validOptionalPort: empty, or ':' and digits.
const validOptionalPort = (port: string): boolean => port === "" || /^:[0-9]*$/.test(port);

// url.go validUserinfo: RFC 3986 §3.2.1 characters, plus '@' as Go tolerates.
const validUserinfo = (s: string): boolean => /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(s);

// url.go getScheme.
function getScheme(raw: string): { ok: true; scheme: string; rest: string } | { ok: false; error: string } {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return { ok: true, scheme: "", rest: raw };
      continue;
    }
    if (c === ":") return i === 0 ? { ok: false, error: "missing protocol scheme" } : { ok: true, scheme: raw.slice(0, i), rest: raw.slice(i + 1) };
    return { ok: true, scheme: "", rest: raw };
  }
  return { ok: true, scheme: "", rest: raw };
}

// url.go parseHost (with the IP-literal and colon rules named at the top).
function parseHost(scheme: string, host: string): { ok: true; host: string } | { ok: false; error: string } {
  const open = host.lastIndexOf("[");
  if (open > 0) return { ok: false, error: "invalid IP-literal" };
  if (open === 0) {
    const close = host.lastIndexOf("]");
    if (close < 0) return { ok: false, error: "missing ']' in host" };
    const colonPort = host.slice(close + 1);
    if (!validOptionalPort(colonPort)) return { ok: false, error: `invalid port ${JSON.stringify(colonPort)} after host` };
    const inside = host.slice(1, close);
    const zone = inside.indexOf("%25");
    const address = unescape(zone >= 0 ? inside.slice(0, zone) : inside, "host");
    if (!address.ok) return address;
    const zonePart = zone >= 0 ? unescape(inside.slice(zone), "zone") : { ok: true as const, value: "" };
    if (!zonePart.ok) return zonePart;
    // netip.ParseAddr: only an IPv6 address (an IPv4-mapped one included) may be bracketed, and
    // parseIPv6 refuses an empty zone after '%'. node:net isIPv6 refuses all that parseIPv6 does
    // (and more: a group of five hex digits such as 00001, which parseIPv6 reads as 1).
    if (!isIPv6(address.value) || zonePart.value === "%") return { ok: false, error: `invalid host: ParseAddr(${JSON.stringify(address.value + zonePart.value)})` };
    return { ok: true, host: `[${address.value}${zonePart.value}]${colonPort}` };
  }
  const first = host.indexOf(":");
  if (first !== -1) {
    const last = host.lastIndexOf(":");
    const at = last !== first && scheme !== "http" && scheme !== "https" ? last : first;
    const colonPort = host.slice(at);
    if (!validOptionalPort(colonPort)) return { ok: false, error: `invalid port ${JSON.stringify(colonPort)} after host` };
  }
  const unescaped = unescape(host, "host");
  return unescaped.ok ? { ok: true, host: unescaped.value } : unescaped;
}

// url.go parseAuthority: the host after the last '@', userinfo before it.
function parseAuthority(scheme: string, authority: string): { ok: true; host: string; user?: GoUrl["user"] } | { ok: false; error: string } {
  const at = authority.lastIndexOf("@");
  const host = parseHost(scheme, at < 0 ? authority : authority.slice(at + 1));
  if (!host.ok || at < 0) return host;
  const userinfo = authority.slice(0, at);
  if (!validUserinfo(userinfo)) return { ok: false, error: "net/url: invalid userinfo" };
  const colon = userinfo.indexOf(":");
  const username = unescape(colon < 0 ? userinfo : userinfo.slice(0, colon), "userPassword");
  if (!username.ok) return username;
  if (colon < 0) return { ok: true, host: host.host, user: { username: username.value } };
  const password = unescape(userinfo.slice(colon + 1), "userPassword");
  if (!password.ok) return password;
  return { ok: true, host: host.host, user: { username: username.value, password: password.value } };
}

// url.go parse.
function parse(raw: string, viaRequest: boolean): GoUrlResult {
  // stringContainsCTLByte
  if ([...raw].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return { ok: false, error: "net/url: invalid control character in URL" };
  if (raw === "" && viaRequest) return { ok: false, error: "empty url" };
  const url: GoUrl = { scheme: "", opaque: "", host: "", path: "", rawPath: "", omitHost: false, forceQuery: false, rawQuery: "", fragment: "", rawFragment: "" };
  if (raw === "*") return { ok: true, url: { ...url, path: "*" } };
  const scheme = getScheme(raw);
  if (!scheme.ok) return scheme;
  url.scheme = scheme.scheme.toLowerCase();
  let rest = scheme.rest;
  if (rest.endsWith("?") && rest.split("?").length === 2) {
    url.forceQuery = true;
    rest = rest.slice(0, -1);
  } else if (rest.includes("?")) {
    url.rawQuery = rest.slice(rest.indexOf("?") + 1);
    rest = rest.slice(0, rest.indexOf("?"));
  }
  if (!rest.startsWith("/")) {
    // A rootless path after a scheme is opaque (RFC 3986).
    if (url.scheme !== "") return { ok: true, url: { ...url, opaque: rest } };
    if (viaRequest) return { ok: false, error: "invalid URI for request" };
    const segment = rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : rest;
    if (segment.includes(":")) return { ok: false, error: "first path segment in URL cannot contain colon" };
  }
  if ((url.scheme !== "" || (!viaRequest && !rest.startsWith("///"))) && rest.startsWith("//")) {
    let authority = rest.slice(2);
    rest = "";
    const slash = authority.indexOf("/");
    if (slash >= 0) {
      rest = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    const host = parseAuthority(url.scheme, authority);
    if (!host.ok) return host;
    url.host = host.host;
    url.user = host.user;
  } else if (url.scheme !== "" && rest.startsWith("/")) {
    url.omitHost = true;
  }
  // setPath: RawPath only when the default escaping differs.
  const path = unescape(rest, "path");
  if (!path.ok) return path;
  url.path = path.value;
  url.rawPath = escape(path.value, "path") === rest ? "" : rest;
  return { ok: true, url };
}

/** url.Parse: a URL reference, relative ones included; the fragment is cut off first. */
export function goParse(raw: string): GoUrlResult {
  const bytes = bytesOf(raw);
  const hash = bytes.indexOf("#");
  const parsed = parse(hash < 0 ? bytes : bytes.slice(0, hash), false);
  if (!parsed.ok || hash < 0) return parsed;
  // setFragment: RawFragment only when the default escaping differs.
  const escaped = bytes.slice(hash + 1);
  if (escaped === "") return parsed;
  const fragment = unescape(escaped, "fragment");
  return fragment.ok ? { ok: true, url: { ...parsed.url, fragment: fragment.value, rawFragment: escape(fragment.value, "fragment") === escaped ? "" : escaped } } : fragment;
}

/** url.ParseRequestURI: an absolute URI or an absolute path only, no fragment. */
export function goParseRequestUri(raw: string): GoUrlResult {
  return parse(bytesOf(raw), true);
}

// url.go splitHostPort: a trailing ":digits" is the port; brackets are removed from the host.
function splitHostPort(hostPort: string): { host: string; port: string } {
  let host = hostPort;
  let port = "";
  const colon = host.lastIndexOf(":");
  if (colon !== -1 && validOptionalPort(host.slice(colon))) {
    port = host.slice(colon + 1);
    host = host.slice(0, colon);
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return { host, port };
}

/** URL.Hostname. */
export const goHostname = (u: GoUrl): string => textOf(splitHostPort(u.host).host);
/** URL.Port. */
export const goPort = (u: GoUrl): string => textOf(splitHostPort(u.host).port);
/** URL.Host. */
export const goHost = (u: GoUrl): string => textOf(u.host);
/** URL.Scheme. */
export const goScheme = (u: GoUrl): string => textOf(u.scheme);

// url.go validEncoded: a RawPath that needs no further escaping.
function validEncoded(s: string, mode: Mode): boolean {
  for (const c of s) if (!"!$&'()*+,;=:@[]%".includes(c) && shouldEscape(c, mode)) return false;
  return true;
}

// URL.EscapedPath on bytes.
function escapedPath(u: GoUrl): string {
  if (u.rawPath !== "" && validEncoded(u.rawPath, "path")) {
    const p = unescape(u.rawPath, "path");
    if (p.ok && p.value === u.path) return u.rawPath;
  }
  if (u.path === "*") return "*";
  return escape(u.path, "path");
}

/** URL.EscapedPath: RawPath when it is a valid encoding of Path, else Path escaped. */
export const goEscapedPath = (u: GoUrl): string => textOf(escapedPath(u));

// URL.EscapedFragment on bytes.
function escapedFragment(u: GoUrl): string {
  if (u.rawFragment !== "" && validEncoded(u.rawFragment, "fragment")) {
    const f = unescape(u.rawFragment, "fragment");
    if (f.ok && f.value === u.fragment) return u.rawFragment;
  }
  return escape(u.fragment, "fragment");
}

/** URL.String: what apiserver/pkg/cel/url.go compares when two URL values meet in ==. */
export function goString(u: GoUrl): string {
  let out = u.scheme === "" ? "" : `${u.scheme}:`;
  if (u.opaque !== "") out += u.opaque;
  else {
    if ((u.scheme !== "" || u.host !== "" || u.user !== undefined) && !(u.omitHost && u.host === "" && u.user === undefined)) {
      if (u.host !== "" || u.path !== "" || u.user !== undefined) out += "//";
      if (u.user !== undefined) out += `${escape(u.user.username, "userPassword")}${u.user.password === undefined ? "" : `:${escape(u.user.password, "userPassword")}`}@`;
      out += escape(u.host, "host");
    }
    const path = escapedPath(u);
    if (path !== "" && !path.startsWith("/") && u.host !== "") out += "/";
    // RFC 3986 §4.2: a first segment with a colon, at the start of a relative reference, gets "./".
    if (out === "" && (path.includes("/") ? path.slice(0, path.indexOf("/")) : path).includes(":")) out += "./";
    out += path;
  }
  if (u.forceQuery || u.rawQuery !== "") out += `?${u.rawQuery}`;
  if (u.fragment !== "") out += `#${escapedFragment(u)}`;
  return textOf(out);
}

/** URL.Query (ParseQuery, malformed pairs dropped): key -> values in order. */
export function goQuery(u: GoUrl): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const pair of u.rawQuery.split("&")) {
    if (pair === "" || pair.includes(";")) continue;
    const eq = pair.indexOf("=");
    const key = unescape(eq < 0 ? pair : pair.slice(0, eq), "queryComponent");
    const value = unescape(eq < 0 ? "" : pair.slice(eq + 1), "queryComponent");
    if (!key.ok || !value.ok) continue;
    const k = textOf(key.value);
    out.set(k, [...(out.get(k) ?? []), textOf(value.value)]);
  }
  return out;
}
