// Kubernetes' CEL URL library in the emulated API server (test/support/kube-emulator/cel-urls.ts,
// after kubernetes/apiserver 24a394e5 pkg/cel/library/urls.go over Go's net/url): the examples
// urls.go documents, evaluated as rules; the type checker's refusals; and Istio's own WasmPlugin
// CRD, whose spec.url rule needs the library, deciding WasmPlugins through the API.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { compileError, compileRule, evaluateRule } from "./cel.js";
import { KubeEmulator } from "./index.js";

/** The value of a CEL expression with no `self` (a rule `<expr> == <expected>` that must hold). */
function holds(expression: string): string | undefined {
  return evaluateRule(compileRule({ rule: expression }), null, undefined, {});
}

describe("emulated: Kubernetes' CEL URL library (urls.go)", () => {
  // Every example in urls.go's documentation, as `expression == expected`.
  const examples: Array<[string, string]> = [
    ["isURL('https://user:pass@example.com:80/path?query=val#fragment')", "true"],
    ["isURL('/absolute-path')", "true"],
    ["isURL('https://a:b:c/')", "false"],
    ["isURL('../relative-path')", "false"],
    ["url('/path').getScheme()", "''"],
    ["url('https://example.com/').getScheme()", "'https'"],
    ["url('https://example.com:80/').getHost()", "'example.com:80'"],
    ["url('https://example.com/').getHost()", "'example.com'"],
    ["url('https://[::1]:80/').getHost()", "'[::1]:80'"],
    ["url('https://[::1]/').getHost()", "'[::1]'"],
    ["url('/path').getHost()", "''"],
    ["url('https://example.com:80/').getHostname()", "'example.com'"],
    ["url('https://127.0.0.1:80/').getHostname()", "'127.0.0.1'"],
    ["url('https://[::1]:80/').getHostname()", "'::1'"],
    ["url('/path').getHostname()", "''"],
    ["url('https://example.com:80/').getPort()", "'80'"],
    ["url('https://example.com/').getPort()", "''"],
    ["url('/path').getPort()", "''"],
    ["url('https://example.com/path').getEscapedPath()", "'/path'"],
    ["url('https://example.com/path with spaces/').getEscapedPath()", "'/path%20with%20spaces/'"],
    ["url('https://example.com').getEscapedPath()", "''"],
    ["url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", "{'k1': ['a'], 'k2': ['b', 'c']}"],
    ["url('https://example.com/path?key with spaces=value with spaces').getQuery()", "{'key with spaces': ['value with spaces']}"],
    ["url('https://example.com/path?').getQuery()", "{}"],
    ["url('https://example.com/path').getQuery()", "{}"],
    // Go's url.Parse beyond the examples: the scheme lower-cased, an IP literal only at the start of the host.
    ["url('OCI://ghcr.io/x').getScheme()", "'oci'"],
    ["isURL('oci://a[::1]:80/x')", "false"],
    ["isURL('oci://[1.2.3.4]/x')", "false"],
    ["isURL('ghcr.io/tokentrace/filter:0.1.0')", "false"],
    ["url('https://example.com/a%2Fb').getEscapedPath()", "'/a%2Fb'"],
    // netip.ParseAddr inside brackets: a zone must not be empty.
    ["isURL('https://[fe80::1%25en0]/')", "true"],
    ["isURL('https://[fe80::1%25]/')", "false"],
    // Strict colons (GODEBUG urlstrictcolons, on from Go 1.26) for http(s) only: the first colon starts the port.
    ["isURL('https://a:1:2/')", "false"],
    ["isURL('oci://a:1:2/')", "true"],
    // Two URLs are equal when their String()s are (apiserver pkg/cel/url.go URL.Equal).
    ["url('HTTPS://example.com/a') == url('https://example.com/a')", "true"],
    ["url('https://alice@example.com/') == url('https://bob@example.com/')", "false"],
    ["url('https://example.com/?') == url('https://example.com/')", "false"],
    ["url('https://example.com/a%2Fb') == url('https://example.com/a/b')", "false"],
    ["url('https://example.com/a%41') == url('https://example.com/aA')", "false"],
  ];
  for (const [expression, expected] of examples) {
    it(`${expression} is ${expected}`, () => {
      assert.equal(holds(`${expression} == ${expected}`), undefined);
    });
  }

  it("url() of what ParseRequestURI refuses is an error, as in the API server", () => {
    assert.match(holds("url('../relative-path') == url('/x')") ?? "", /URL parse error during conversion from string: .*invalid URI for request/);
    assert.match(holds("url('https://a:b:c/').getHost() == ''") ?? "", /invalid port ":b:c" after host/);
  });

  it("the checker refuses a getter on anything but a URL, and fields or indexes of a URL", () => {
    assert.match(compileError("self.getScheme() == ''", { type: "string" }) ?? "", /found no matching overload for 'getScheme'/);
    assert.match(compileError("url(self).scheme == ''", { type: "string" }) ?? "", /does not support field selection/);
    assert.match(compileError("url(self)['scheme'] == ''", { type: "string" }) ?? "", /found no matching overload for '_\[_\]'/);
    assert.equal(compileError("url(self).getScheme() == ''", { type: "string" }), undefined);
    assert.equal(compileError("url(self) != url('https://example.com/')", { type: "string" }), undefined);
  });

  it("the emulator refuses, rather than evaluates as a map, any other use of a URL value", () => {
    for (const rule of ["size(url(self)) > 0", "url(self) == {}", "url(self) in [url('/a')]", "[url(self)].size() == 1", "{'u': url(self)}.size() == 1", "url(self).all(k, k != '')"]) {
      assert.match(compileError(rule, { type: "string" }) ?? "", /url\(\.\.\.\).*is not type-checked by the emulator/, rule);
    }
  });
});

describe("emulated: Istio's WasmPlugin CRD (istio/api b8f8791d) decides spec.url by its CEL rule", () => {
  let emulator: KubeEmulator;
  before(async () => {
    emulator = await new KubeEmulator({}).listen();
    const [wasmPluginCrd] = parseAllDocuments(readFileSync(new URL("../../fixtures/schemas/istio-crds.yaml", import.meta.url), "utf8")).map((d) => d.toJS() as object);
    const created = await fetch(`${emulator.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(wasmPluginCrd) });
    assert.equal(created.status, 201, await created.text());
  });
  after(() => emulator.close());

  const cases: Array<[string, number]> = [
    ["oci://ghcr.io/tokentrace/filter:0.1.0", 201],
    ["oci://ghcr.io/tokentrace/filter@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 201],
    ["https://example.com/filter.wasm", 201],
    ["file:///opt/filters/filter.wasm", 201],
    // No scheme: the rule tries it as http://, as Istio means (an OCI reference without oci://).
    ["ghcr.io/tokentrace/filter:0.1.0", 201],
    ["ftp://example.com/filter.wasm", 422],
    ["mailto:ops@example.com", 422],
  ];
  cases.forEach(([url, status], i) => {
    it(`${status === 201 ? "accepts" : "refuses"} url ${url}`, async () => {
      const body = { apiVersion: "extensions.istio.io/v1alpha1", kind: "WasmPlugin", metadata: { name: `p${i}` }, spec: { url, selector: { matchLabels: { app: "vllm" } } } };
      const res = await fetch(`${emulator.url}/apis/extensions.istio.io/v1alpha1/namespaces/llm/wasmplugins?fieldValidation=Strict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const answer = (await res.json()) as { message?: string };
      assert.equal(res.status, status, answer.message);
      if (status === 422) assert.equal(answer.message, `WasmPlugin.extensions.istio.io "p${i}" is invalid: spec.url: Invalid value: "string": url must have schema one of [http, https, file, oci]`);
    });
  });
});
