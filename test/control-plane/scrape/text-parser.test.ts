import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseText, TextParser, parseValue, familyOf } from "../../../control-plane/src/scrape/text-parser.js";
import type { ParsedSample } from "../../../control-plane/src/scrape/sample.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");

describe("text parser", () => {
  const cases: { name: string; input: string; samples: ParsedSample[] }[] = [
    { name: "a bare sample without labels", input: "up 1\n", samples: [{ name: "up", labels: [], value: 1 }] },
    {
      name: "labels, a trailing comma and a timestamp",
      input: 'http_requests_total{method="post",code="200",} 1027 1395066363000\n',
      samples: [{ name: "http_requests_total", labels: ["method", "post", "code", "200"], value: 1027, timestampMs: 1395066363000 }],
    },
    {
      name: "escapes in label values: backslash, quote, newline",
      input: 'f{path="C:\\\\DIR\\\\F.TXT",err="Cannot find:\\n\\"F.TXT\\""} 1.458255915e9\n',
      samples: [{ name: "f", labels: ["path", "C:\\DIR\\F.TXT", "err", 'Cannot find:\n"F.TXT"'], value: 1.458255915e9 }],
    },
    {
      name: "NaN, +Inf and -Inf values and a negative timestamp",
      input: "a NaN\nb +Inf\nc -Inf -3982045\nd Inf\n",
      samples: [
        { name: "a", labels: [], value: NaN },
        { name: "b", labels: [], value: Infinity },
        { name: "c", labels: [], value: -Infinity, timestampMs: -3982045 },
        { name: "d", labels: [], value: Infinity },
      ],
    },
    {
      name: "vLLM names with colons, an empty label set and spaces around tokens",
      input: 'vllm:num_requests_running{ model_name = "m" } \t 8.0\nenvoy_server_live{} 1\r\n',
      samples: [
        { name: "vllm:num_requests_running", labels: ["model_name", "m"], value: 8 },
        { name: "envoy_server_live", labels: [], value: 1 },
      ],
    },
    {
      name: "integers short and long the same way Number() reads them",
      input: "a 007\nb 999999999999999\nc 1234567890123456789\nd 0\n",
      samples: [
        { name: "a", labels: [], value: 7 },
        { name: "b", labels: [], value: 999999999999999 },
        { name: "c", labels: [], value: Number("1234567890123456789") },
        { name: "d", labels: [], value: 0 },
      ],
    },
    {
      name: "comments, blank lines and # EOF are skipped",
      input: "# a comment\n\n   \n# EOF\nx 2\n",
      samples: [{ name: "x", labels: [], value: 2 }],
    },
  ];
  for (const c of cases) {
    it(`parses ${c.name}`, () => {
      const r = parseText(c.input);
      assert.deepEqual(r.errors, []);
      assert.deepEqual(r.samples, c.samples);
    });
  }

  it("reads HELP (with escapes) and TYPE, histograms and summaries keep their series names", () => {
    const r = parseText(
      [
        "# HELP rq_ms Request time\\nin ms, a \\\\ backslash",
        "# TYPE rq_ms histogram",
        'rq_ms_bucket{le="0.5"} 0',
        'rq_ms_bucket{le="+Inf"} 7',
        "rq_ms_sum 5532",
        "rq_ms_count 7",
        "# TYPE lat summary",
        'lat{quantile="0.99"} 0.25',
        "lat_sum 10",
        "lat_count 40",
        "# TYPE odd unknown",
      ].join("\n"),
    );
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.families.get("rq_ms"), { type: "histogram", help: "Request time\nin ms, a \\ backslash" });
    assert.deepEqual(r.families.get("lat"), { type: "summary" });
    assert.deepEqual(r.families.get("odd"), { type: "untyped" });
    assert.deepEqual(
      r.samples.map((s) => [s.name, s.labels, s.value]),
      [
        ["rq_ms_bucket", ["le", "0.5"], 0],
        ["rq_ms_bucket", ["le", "+Inf"], 7],
        ["rq_ms_sum", [], 5532],
        ["rq_ms_count", [], 7],
        ["lat", ["quantile", "0.99"], 0.25],
        ["lat_sum", [], 10],
        ["lat_count", [], 40],
      ],
    );
    assert.equal(familyOf("rq_ms_bucket", r.families), "rq_ms");
    assert.equal(familyOf("lat_count", r.families), "lat");
    assert.equal(familyOf("other_total", r.families), "other_total");
  });

  it("reports each malformed line with its number and reason and keeps the rest of the scrape", () => {
    const r = parseText(
      [
        "good_a 1", // 1
        "1bad 2", // 2
        'm{l="v"', // 3
        "m{l=v} 1", // 4
        "m{l=\"v\" x=\"y\"} 1", // 5
        "m{l=\"v\",l=\"w\"} 1", // 6
        "m", // 7
        "m abc", // 8
        "m 1 12.5", // 9
        "m 1 12 extra", // 10
        "# TYPE m bogus", // 11
        "m{9l=\"v\"} 1", // 12
        "m{l=\"unterminated} 1", // 13
        "good_b 3", // 14
        "m 0x10", // 15
      ].join("\n"),
    );
    assert.deepEqual(r.samples, [
      { name: "good_a", labels: [], value: 1 },
      { name: "good_b", labels: [], value: 3 },
    ]);
    assert.deepEqual(r.errors, [
      { line: 2, reason: 'invalid metric name starting with "1"' },
      { line: 3, reason: "m: unterminated label set" },
      { line: 4, reason: `m: expected '"' to open the value of label "l"` },
      { line: 5, reason: 'm: expected "," or "}" after the value of label "l"' },
      { line: 6, reason: 'm: duplicate label "l"' },
      { line: 7, reason: "m: missing value" },
      { line: 8, reason: 'm: invalid value "abc"' },
      { line: 9, reason: 'm: invalid timestamp "12.5"' },
      { line: 10, reason: "m: unexpected text after the timestamp" },
      { line: 11, reason: '# TYPE m: unknown type "bogus"' },
      { line: 12, reason: 'm: invalid label name starting with "9"' },
      { line: 13, reason: 'm: unterminated value of label "l"' },
      { line: 15, reason: 'm: invalid value "0x10"' },
    ]);
  });

  it("gives the same result when the body arrives in chunks that split lines and escapes anywhere", () => {
    const text = fixture("envoy-sidecar-chat.prom") + fixture("dcgm-node-a.prom") + fixture("vllm-chat.prom");
    const whole = parseText(text);
    assert.equal(whole.errors.length, 0);
    for (const size of [1, 7, 64, 1000]) {
      const samples: ParsedSample[] = [];
      const p = new TextParser((s) => samples.push(s));
      for (let i = 0; i < text.length; i += size) p.push(text.slice(i, i + size));
      p.end();
      assert.deepEqual(samples, whole.samples, `chunk size ${size}`);
      assert.deepEqual(p.errors, []);
    }
  });

  it("parses the three fixture scrapes to the exact sample counts and spot values", () => {
    const envoy = parseText(fixture("envoy-sidecar-chat.prom"));
    const dcgm = parseText(fixture("dcgm-node-a.prom"));
    const vllm = parseText(fixture("vllm-chat.prom"));
    assert.deepEqual([envoy.samples.length, dcgm.samples.length, vllm.samples.length], [37, 28, 18]);
    assert.equal(dcgm.families.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")?.type, "counter");
    const power = dcgm.samples.find((s) => s.name === "DCGM_FI_DEV_POWER_USAGE" && s.labels.includes("GPU-2222bbbb-0000-4000-8000-000000000000"));
    assert.equal(power?.value, 401.5);
    assert.equal(vllm.samples.find((s) => s.name === "vllm:generation_tokens_created")?.value, 1.7646e9);
  });

  it("parses values as Go's ParseFloat does for exporter output", () => {
    assert.equal(parseValue("1e-3"), 0.001);
    assert.equal(parseValue("-0"), -0);
    assert.equal(parseValue("+5"), 5);
    assert.equal(parseValue(""), undefined);
    assert.equal(parseValue("1.2.3"), undefined);
    assert.equal(parseValue("Infinity"), Infinity);
  });
});
