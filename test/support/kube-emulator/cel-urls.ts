// Kubernetes' CEL URL library in the emulator's CEL environment, with the semantics of
// kubernetes/apiserver 24a394e5 pkg/cel/library/urls.go: url() and isURL() accept what Go's
// url.ParseRequestURI accepts (an absolute URI or an absolute path), url() then keeps what
// url.Parse made of it, and the getters return the parsed parts. A URL is an opaque CEL value
// here: a map whose one entry is the URL's String(), so two URLs are equal exactly when their
// String()s are (URL.Equal in apiserver/pkg/cel/url.go). cel.ts refuses at compile time what the
// type checker refuses on a kubernetes.URL (a field, an index, a getter on anything else) and
// any other use of url(...) than its getters and ==/!= between two of them.
import { celFunc, celMethod, celMap, CelScalar, listType, mapType, type CelMap } from "@bufbuild/cel";
import { goEscapedPath, goHost, goHostname, goParse, goParseRequestUri, goPort, goQuery, goScheme, goString, type GoUrl } from "./go-url.js";

/** The URL library's functions and methods (urls.go urlLibraryDecls). */
export const urlFunctionNames = ["url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery"] as const;

/** The methods, which apply to a URL only. */
export const urlMethodNames = new Set<string>(["getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery"]);

const parsed = new WeakMap<CelMap, GoUrl>();
// A CEL map value has type map(dyn, dyn) at run time; the brand tells a URL from other maps.
const urlType = mapType(CelScalar.DYN, CelScalar.DYN);

// urls.go stringToUrl: ParseRequestURI must accept it; Parse gives the value.
function stringToUrl(s: string): CelMap {
  const checked = goParseRequestUri(s);
  if (!checked.ok) throw new Error(`URL parse error during conversion from string: parse ${JSON.stringify(s)}: ${checked.error}`);
  const url = goParse(s);
  if (!url.ok) throw new Error(`URL parse error during conversion from string: parse ${JSON.stringify(s)}: ${url.error}`);
  const value = celMap(new Map<string, string>([["kubernetes.URL", goString(url.url)]]));
  parsed.set(value, url.url);
  return value;
}

function urlOf(value: CelMap): GoUrl {
  const url = parsed.get(value);
  if (url === undefined) throw new Error("no such overload");
  return url;
}

/** The CEL functions to add to the environment. */
export const urlFunctions = [
  celFunc("url", [CelScalar.STRING], urlType, stringToUrl),
  // urls.go isURL: url.ParseRequestURI succeeds.
  celFunc("isURL", [CelScalar.STRING], CelScalar.BOOL, (s: string) => goParseRequestUri(s).ok),
  celMethod("getScheme", urlType, [], CelScalar.STRING, function () {
    return goScheme(urlOf(this));
  }),
  celMethod("getHost", urlType, [], CelScalar.STRING, function () {
    return goHost(urlOf(this));
  }),
  celMethod("getHostname", urlType, [], CelScalar.STRING, function () {
    return goHostname(urlOf(this));
  }),
  celMethod("getPort", urlType, [], CelScalar.STRING, function () {
    return goPort(urlOf(this));
  }),
  celMethod("getEscapedPath", urlType, [], CelScalar.STRING, function () {
    return goEscapedPath(urlOf(this));
  }),
  celMethod("getQuery", urlType, [], mapType(CelScalar.STRING, listType(CelScalar.STRING)), function () {
    return goQuery(urlOf(this));
  }),
];
