// Istio's tag extraction and Envoy's /stats/prometheus rendering of wasm custom metrics, exact text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AbiViolation, StatsStore, extractTags, istioTagRegex, prometheusMetricName } from "./index.js";
import { envoyBin, formatG32 } from "./stats.js";

const tagsOf = (names: string[]): Array<[string, RegExp]> => names.map((n) => [n, istioTagRegex(n)]);

test("tag extraction removes every TAG=.=VALUE;.; group and keeps the tags in extractor order", () => {
  assert.deepEqual(extractTags("wasmcustom.route=.=chat;.;response_code_class=.=2xx;.;tokentrace_requests_total", tagsOf(["response_code_class", "route"])), {
    extractedName: "wasmcustom.tokentrace_requests_total",
    tags: [["response_code_class", "2xx"], ["route", "chat"]],
  });
});

test("a tag not listed in statTags stays in the name", () => {
  assert.deepEqual(extractTags("wasmcustom.model=.=m;.;route=.=r;.;x_total", tagsOf(["route"])), {
    extractedName: "wasmcustom.model=.=m;.;x_total",
    tags: [["route", "r"]],
  });
});

test("an empty value is a tag with an empty value, as Istio's (.*?) allows", () => {
  assert.deepEqual(extractTags("wasmcustom.route=.=;.;x_total", tagsOf(["route"])).tags, [["route", ""]]);
});

test("the tag regex matches inside a longer tag name, exactly as Envoy applies Istio's regex", () => {
  assert.deepEqual(extractTags("wasmcustom.xroute=.=a;.;y", tagsOf(["route"])), { extractedName: "wasmcustom.xy", tags: [["route", "a"]] });
});

test("metric names: the wasmcustom namespace is stripped, others get envoy_, invalid characters become _", () => {
  assert.equal(prometheusMetricName("wasmcustom.tokentrace_requests_total"), "tokentrace_requests_total");
  assert.equal(prometheusMetricName("wasmcustom.a.b-c"), "a_b_c");
  assert.equal(prometheusMetricName("wasmcustom.9lives"), undefined);
  assert.equal(prometheusMetricName("local_proxy.fail_open"), "envoy_local_proxy_fail_open");
});

test("prometheus(): counters, gauges, then histograms, families sorted, series sorted, blank line after each family", () => {
  const s = new StatsStore({ statTags: ["route", "response_code_class"], histogramBuckets: [1, 10, 100], histogramMode: "exact" });
  const b = s.define(0, "route=.=chat;.;response_code_class=.=2xx;.;tokentrace_requests_total");
  const a = s.define(0, "route=.=admin;.;response_code_class=.=5xx;.;tokentrace_requests_total");
  const g = s.define(1, "tokentrace_routes");
  const h = s.define(2, "route=.=chat;.;tokentrace_request_duration_ms");
  s.define(0, "aaa_total");
  s.increment(b, 3n);
  s.increment(a, 1n);
  s.record(g, 2n);
  for (const v of [1n, 5n, 250n]) s.record(h, v);
  assert.equal(
    s.prometheus(),
    [
      "# TYPE aaa_total counter",
      "aaa_total{} 0",
      "",
      "# TYPE tokentrace_requests_total counter",
      'tokentrace_requests_total{route="admin",response_code_class="5xx"} 1',
      'tokentrace_requests_total{route="chat",response_code_class="2xx"} 3',
      "",
      "# TYPE tokentrace_routes gauge",
      "tokentrace_routes{} 2",
      "",
      "# TYPE tokentrace_request_duration_ms histogram",
      'tokentrace_request_duration_ms_bucket{route="chat",le="1"} 1',
      'tokentrace_request_duration_ms_bucket{route="chat",le="10"} 2',
      'tokentrace_request_duration_ms_bucket{route="chat",le="100"} 2',
      'tokentrace_request_duration_ms_bucket{route="chat",le="+Inf"} 3',
      'tokentrace_request_duration_ms_sum{route="chat"} 256',
      'tokentrace_request_duration_ms_count{route="chat"} 3',
      "",
      "",
    ].join("\n"),
  );
});

test("prometheus(): Envoy's default buckets 0.5 .. 3600000 and escaped label values", () => {
  const s = new StatsStore({ statTags: ["route"] });
  s.record(s.define(2, 'route=.=a"b\\c;.;d_ms'), 3n);
  const lines = s.prometheus().split("\n");
  assert.deepEqual(lines.slice(0, 3), ["# TYPE d_ms histogram", 'd_ms_bucket{route="a\\"b\\\\c",le="0.5"} 0', 'd_ms_bucket{route="a\\"b\\\\c",le="1"} 0']);
  assert.deepEqual(
    lines.filter((l) => l.includes("_bucket")).map((l) => /le="([^"]+)"/.exec(l)![1]),
    ["0.5", "1", "5", "10", "25", "50", "100", "250", "500", "1000", "2500", "5000", "10000", "30000", "60000", "300000", "600000", "1800000", "3600000", "+Inf"],
  );
});

test("the host's own counters render with envoy_ and sort with the wasm counters by stat name", () => {
  const s = new StatsStore();
  s.incrementHostCounter("local_proxy.wasm_fail_open", 2);
  s.define(0, "z_total");
  assert.equal(s.prometheus(), "# TYPE envoy_local_proxy_wasm_fail_open counter\nenvoy_local_proxy_wasm_fail_open{} 2\n\n# TYPE z_total counter\nz_total{} 0\n\n");
});

test("value() and samples() look up by metric name and exact labels after tag extraction", () => {
  const s = new StatsStore();
  s.increment(s.define(0, "route=.=chat;.;status_class=.=2xx;.;tokentrace_requests_total"), 4n);
  s.record(s.define(2, "route=.=chat;.;tokentrace_request_duration_ms"), 12n);
  assert.equal(s.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 4);
  assert.equal(s.value("tokentrace_requests_total", { status_class: "2xx", route: "chat" }), 4);
  assert.equal(s.value("tokentrace_requests_total", { route: "chat" }), undefined, "labels must match exactly");
  assert.deepEqual(s.samples("tokentrace_request_duration_ms", { route: "chat" }), [12]);
  assert.equal(s.samples("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), undefined);
});

test("defining one name as two kinds is an ABI violation", () => {
  const s = new StatsStore();
  s.define(0, "x");
  assert.throws(() => s.define(1, "x"), (e: unknown) => e instanceof AbiViolation && /already defined as a counter, not a gauge/.test(e.message));
});

test("histograms past the retained-sample cap still count in the rendering, and histogram() refuses to return a partial list", () => {
  const s = new StatsStore({ histogramBuckets: [10], maxRetainedSamples: 2, histogramMode: "exact" });
  const h = s.define(2, "d_ms");
  for (const v of [1n, 20n, 5n]) s.record(h, v);
  assert.equal(s.prometheus(), '# TYPE d_ms histogram\nd_ms_bucket{le="10"} 2\nd_ms_bucket{le="+Inf"} 3\nd_ms_sum{} 26\nd_ms_count{} 3\n\n');
  assert.throws(() => s.histogram("d_ms"), /kept only its first 2 samples \(1 more recorded\)/);
});

test("overlapping tag names collide exactly as Istio's regexes do in Envoy: `reason` also matches inside `finish_reason`", () => {
  assert.deepEqual(extractTags("wasmcustom.finish_reason=.=stop;.;llm_requests_total", tagsOf(["reason", "finish_reason"])), {
    extractedName: "wasmcustom.llm_requests_total",
    tags: [["reason", "stop"], ["finish_reason", "stop"]],
  });
});

test("Envoy histogram mode: circllhist bins decide the buckets (a whole bin must fit under le) and bin midpoints make the sum, printed %.32g", () => {
  const s = new StatsStore({ histogramBuckets: [0.5, 10, 25, 250] });
  const h = s.define(2, "ttft_ms");
  // bins: 0 -> [0,0], 5 -> [5,5.1), 10 -> [10,11), 24 -> [24,25), 123 -> [120,130)
  for (const v of [0n, 5n, 10n, 24n, 123n]) s.record(h, v);
  assert.equal(
    s.prometheus(),
    [
      "# TYPE ttft_ms histogram",
      'ttft_ms_bucket{le="0.5"} 1',
      'ttft_ms_bucket{le="10"} 2',
      'ttft_ms_bucket{le="25"} 4',
      'ttft_ms_bucket{le="250"} 5',
      'ttft_ms_bucket{le="+Inf"} 5',
      "ttft_ms_sum{} 165.0500000000000113686837721616",
      "ttft_ms_count{} 5",
      "",
      "",
    ].join("\n"),
  );
  assert.deepEqual(s.histogram("ttft_ms"), [0, 5, 10, 24, 123], "the raw samples stay exact");
});

test("envoyBin and formatG32 follow circllhist and fmt's %.32g", () => {
  assert.deepEqual([0, 1, 9, 10, 99, 100, 123, 3600000].map(envoyBin), [[0, 0], [1, 0.1], [9, 0.1], [10, 1], [99, 1], [100, 10], [120, 10], [3600000, 100000]]);
  assert.deepEqual([0, 0.5, 3600000, 5532, 0.005, 5.05].map(formatG32), ["0", "0.5", "3600000", "5532", "0.0050000000000000001040834085586084", "5.049999999999999822364316059975"]);
});
