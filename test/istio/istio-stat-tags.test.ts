// The filter's stat names under *all* the tag extractors an Istio sidecar's bootstrap configures
// (istio/istio 86c9f01f tools/packaging/common/envoy_bootstrap.json stats_config.stats_tags:
// the anchored Envoy ones, one `(TAG=\.=(.*?);\.;)` per extraStatTag, and the unanchored cache,
// component, tag, wasm_filter, rbac and dry-run ones), so a route or model name containing "."
// can never add a label the dashboards and joins do not expect. Runs the shipped filter.wasm.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { extractTags, istioTagRegex, WASM_CUSTOM_PREFIX } from "../host/stats.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import { baseRequest, exchange, loadFilter } from "../filter/support.js";
import { manifests, one } from "./support.js";

const operator = one(manifests(), "IstioOperator", "tokentrace");
const extraStatTags: string[] = operator.spec.meshConfig.defaultConfig.extraStatTags;

/** Istio's bootstrap stats_tags in their order (the extraStatTags sit between the two groups). */
function istioBootstrapTags(extra: readonly string[]): Array<[string, RegExp]> {
  const re = (source: string): RegExp => new RegExp(source, "d");
  return [
    ["cluster_name", re("^cluster(\\.(.+);)")],
    ["http_conn_manager_prefix", re("^http\\.(((?:[_.\\d\\w]*|[_\\[\\]aAbBcCdDeEfF\\d\\w:]*));\\.)")],
    ["thread_name", re("^server(\\.(.+))\\.watchdog")],
    ["tcp_prefix", re("^tcp\\.((.*?)\\.)\\w+?$")],
    ["response_code", re("_rq(_(\\d{3}))$")],
    ["response_code_class", re("_rq(_(\\dxx))$")],
    ["http_conn_manager_listener_prefix", re("^listener(?=\\.).*?\\.http\\.(((?:[_.\\d]*|[_\\[\\]aAbBcCdDeEfF\\d]*))\\.)")],
    ["listener_address", re("^listener\\.(((?:[_.\\d]*|[_\\[\\]aAbBcCdDeEfF\\d]*))\\.)")],
    ["mongo_prefix", re("^mongo\\.(.+?)\\.(collection|cmd|cx_|op_|delays_|decoding_)(.*?)$")],
    ...extra.map((tag): [string, RegExp] => [tag, istioTagRegex(tag)]),
    ["cache", re("(cache\\.(.+?)\\.)")],
    ["component", re("(component\\.(.+?)\\.)")],
    ["tag", re("(tag\\.(.+?);\\.)")],
    ["wasm_filter", re("(wasm_filter\\.(.+?)\\.)")],
    ["authz_enforce_result", re("rbac(\\.(allowed|denied))")],
    ["authz_dry_run_action", re("(\\.istio_dry_run_(allow|deny)_)")],
    ["authz_dry_run_result", re("(\\.shadow_(allowed|denied))")],
  ];
}

/** The labels each of the filter's stats gets in the sidecar's /stats/prometheus. */
async function sidecarLabels(routes: string[]): Promise<Map<string, Map<string, string>>> {
  const vm = await loadFilter({ config: { stats: { maxRoutes: 64 } } });
  // A 429 too, so the LLM stats of a failed call (status_class, error_type) are extracted as well.
  for (const route of routes) for (const status of [200, 429]) exchange(vm, { headers: baseRequest(), route, status });
  const tags = istioBootstrapTags(extraStatTags);
  const out = new Map<string, Map<string, string>>();
  for (const name of vm.stats.names()) out.set(name, new Map(extractTags(WASM_CUSTOM_PREFIX + name, tags).tags));
  return out;
}

describe("route names under Istio's built-in stat tags (filter.wasm, emulated Envoy tag extraction)", () => {
  const dotted = ["llm.cache.v1", "mytag.v2", "x.component.y", "hooks.wasm_filter.z", "edge.rbac.allowed", "a.istio_dry_run_allow_b", "a.shadow_denied"];

  it("no route name yields a label outside the mesh's extraStatTags, and every route label survives", async () => {
    const names = ["chat", "llama-3.1", ...dotted];
    const labels = await sidecarLabels(names);
    const routes = new Set<string>();
    for (const [name, tags] of labels) {
      for (const tag of tags.keys()) assert.ok(extraStatTags.includes(tag), `${name} gets a "${tag}" label`);
      const route = tags.get("route");
      if (route !== undefined) routes.add(route);
    }
    assert.deepEqual([...routes].sort(), names.map(sanitized).sort());
    const failed = [...labels.values()].filter((t) => t.get("error_type") !== undefined);
    assert.deepEqual(failed.map((t) => `${t.get("route")} ${t.get("status_class")} ${t.get("error_type")}`).sort(), names.map((n) => `${sanitized(n)} 4xx 429`).sort());
  });

  it("only a '.' an unanchored pattern could use becomes '_'; other dots stay (llama-3.1)", async () => {
    const labels = await sidecarLabels(["llama-3.1", "llm.cache.v1", "mytag.v2", "edge.rbac.allowed", "edge.rbac.other"]);
    const routes = new Set([...labels.values()].map((t) => t.get("route")).filter((r): r is string => r !== undefined));
    assert.deepEqual([...routes].sort(), ["edge.rbac_allowed", "edge.rbac_other", "llama-3.1", "llm.cache_v1", "mytag_v2"]);
  });

  it("control: with the dots kept, Istio's cache pattern adds a label (the extractor list is not vacuous)", () => {
    const tags = new Map(extractTags(`${WASM_CUSTOM_PREFIX}route=.=llm.cache.v1;.;tokentrace_requests_total`, istioBootstrapTags(FILTER_STAT_TAGS)).tags);
    assert.equal(tags.get("cache"), "v1;");
  });
});

/** What the filter makes of a route name (the expectations above, spelled out). */
function sanitized(route: string): string {
  const map: Record<string, string> = {
    "llm.cache.v1": "llm.cache_v1",
    "mytag.v2": "mytag_v2",
    "x.component.y": "x.component_y",
    "hooks.wasm_filter.z": "hooks.wasm_filter_z",
    "edge.rbac.allowed": "edge.rbac_allowed",
    "a.istio_dry_run_allow_b": "a_istio_dry_run_allow_b",
    "a.shadow_denied": "a_shadow_denied",
  };
  return map[route] ?? route;
}
