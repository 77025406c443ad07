// GPU health, starvation and stragglers out of the join, on fixtures in dcgm-exporter's formats
// (each naming the upstream code it follows): the clock-event bitmask under both its names decoded
// into DCGM's reasons, the exporter's own counts read the same way, XIDs classed as DCGM's health
// watch and NVIDIA's device plugin class them, memory and PCIe error counts per GPU (one series per
// GPU, a MIG instance getting its GPU's), the activity of a busy GPU per unit of busy time, and the
// spread across a tensor-parallel pod's cards.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { CLOCK_EVENT_REASONS, decodeClockEventReasons, xidClass } from "../../../control-plane/src/join/derivations/gpu-health.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { fixture } from "../../support/engine-scrapes.js";

const T0 = 1_800_000_000_000;
const DCGM = (node: string): ScrapeTarget => ({ id: `dcgm|${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: `dcgm-${node}`, node });
const envoy = (pod: string, node: string): ScrapeTarget => ({ id: `envoy|${pod}`, kind: "envoy", url: `http://${pod}:15090/stats/prometheus`, intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod, node });

function scrape(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  assert.deepEqual(p.errors, []);
  return { target, timestampMs: ts, durationMs: 3, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}
const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));
const named = (out: WriteSeries[], name: string): WriteSeries[] => out.filter((s) => labelsOf(s).__name__ === name);
const rows = (out: WriteSeries[], name: string, ...extra: string[]): (string | number)[][] => named(out, name).map((s) => [labelsOf(s).gpu!, ...extra.map((l) => labelsOf(s)[l]!), s.samples[0]!.value]);
/** The reasons set to 1 per GPU. */
const active = (out: WriteSeries[]): Record<string, string[]> => {
  const r: Record<string, string[]> = {};
  for (const s of named(out, "tokentrace_gpu_clock_event_active")) if (s.samples[0]!.value === 1) (r[labelsOf(s).gpu!] ??= []).push(labelsOf(s).reason!);
  return r;
};
const REQUESTS = 'tokentrace_requests_total{route="chat",status_class="2xx"} 1\n';

describe("clock-event (throttle) reasons", () => {
  it("the bits of DCGM_CLOCKS_EVENT_REASON_* decode to dcgm-exporter's names; an unknown bit is `other`", () => {
    assert.deepEqual(CLOCK_EVENT_REASONS.map(([bit]) => bit), [0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100]);
    const set = (mask: number): string[] => [...decodeClockEventReasons(mask)].filter(([, v]) => v === 1).map(([r]) => r);
    assert.deepEqual(set(0), []);
    assert.deepEqual(set(96), ["sw_thermal", "hw_thermal"]);
    assert.deepEqual(set(136), ["hw_slowdown", "hw_power_brake"]);
    assert.deepEqual(set(0x1ff), CLOCK_EVENT_REASONS.map(([, r]) => r));
    assert.deepEqual(set(0x204), ["power_cap", "other"]);
    assert.equal(decodeClockEventReasons(96).size, 9, "every known reason has a series, 0 or 1");
    assert.equal(decodeClockEventReasons(-1).size, 0);
  });

  it("DCGM_FI_DEV_CLOCKS_EVENT_REASONS (exporter 4.x): one series per reason and GPU, 1 where it holds", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-h"), fixture("dcgm-health-h100.prom"), T0));
    assert.deepEqual(active(out), { "0": ["sw_thermal", "hw_thermal"], "1": ["gpu_idle"] });
    assert.equal(named(out, "tokentrace_gpu_clock_event_active").length, 18);
    const s = named(out, "tokentrace_gpu_clock_event_active")[0]!;
    assert.deepEqual(Object.keys(labelsOf(s)).sort(), ["__name__", "gpu", "gpu_model", "gpu_uuid", "hostname", "reason"]);
  });

  it("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, the name before exporter 4.0.0 (with Hostname), decodes the same", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-v"), fixture("dcgm-3.3-v100-throttle-retired.prom"), T0));
    assert.deepEqual(active(out), { "2": ["hw_slowdown", "hw_power_brake"] });
    assert.equal(labelsOf(named(out, "tokentrace_gpu_clock_event_active")[0]!).hostname, "gpu-node-v");
  });

  it("DCGM_EXP_CLOCK_EVENTS_COUNT: a reason counted in the exporter's window is active; a GPU with none has every reason at 0", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-k"), fixture("dcgm-exp-counts.prom"), T0));
    assert.deepEqual(active(out), { "0": ["gpu_idle", "power_cap"] });
    assert.equal(named(out, "tokentrace_gpu_clock_event_active").filter((s) => labelsOf(s).gpu === "1").length, 9);
  });
});

describe("XIDs", () => {
  it("classes follow DCGM's health watch (devastating and per subsystem) and the device plugin's application XIDs", () => {
    assert.deepEqual([48, 74, 79, 95, 119, 120, 140].map(xidClass), Array(7).fill("devastating"));
    assert.deepEqual([13, 31, 43, 45, 68, 109].map(xidClass), Array(6).fill("application"));
    assert.deepEqual([63, 64, 94, 38, 61, 57, 74, 93, 1].map(xidClass), ["memory", "memory", "memory", "pcie", "thermal", "power", "devastating", "inforom", "other"]);
  });

  it("the last XID (DCGM_FI_DEV_XID_ERRORS) is one series with its class; 0 is no series", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-h"), fixture("dcgm-health-h100.prom"), T0));
    assert.deepEqual(rows(out, "tokentrace_gpu_xid_errors", "xid", "xid_class"), [["0", "48", "devastating", 1]]);
    const v100 = new Joiner().join(scrape(DCGM("gpu-node-v"), fixture("dcgm-3.3-v100-throttle-retired.prom"), T0));
    assert.deepEqual(rows(v100, "tokentrace_gpu_xid_errors", "xid", "xid_class"), [["2", "63", "memory", 1]]);
  });

  it("label values stay bounded whatever the exporter writes: an XID outside 1-999 or not a number is `other`, an unknown clock event is `other`", () => {
    const text = fixture("dcgm-exp-counts.prom")
      .replace('xid="79"', 'xid="1e9"')
      .replace('clock_event="gpu_idle"', `clock_event="${"x".repeat(300)}"`);
    const out = new Joiner().join(scrape(DCGM("gpu-node-k"), text, T0));
    assert.deepEqual(rows(out, "tokentrace_gpu_xid_errors", "xid", "xid_class"), [["0", "other", "other", 1]]);
    assert.deepEqual(active(out), { "0": ["power_cap", "other"] });
    const last = new Joiner().join(scrape(DCGM("gpu-node-h"), fixture("dcgm-health-h100.prom").replace(/(DCGM_FI_DEV_XID_ERRORS\{gpu="0"[^}]*\}) 48/, "$1 1234567"), T0));
    assert.deepEqual(rows(last, "tokentrace_gpu_xid_errors", "xid", "xid_class"), [["0", "other", "other", 1]]);
  });

  it("DCGM_EXP_XID_ERRORS_COUNT gives the count per XID in the exporter's window", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-k"), fixture("dcgm-exp-counts.prom"), T0));
    assert.deepEqual(rows(out, "tokentrace_gpu_xid_errors", "xid", "xid_class"), [["0", "79", "devastating", 1]]);
  });
});

describe("memory and PCIe errors, temperatures", () => {
  it("an H100: double-bit ECC counts, remapped rows and a failed remap, PCIe replays, GPU and memory temperature", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-h"), fixture("dcgm-health-h100.prom"), T0));
    assert.deepEqual(rows(out, "tokentrace_gpu_ecc_dbe_errors", "scope"), [["0", "volatile", 2], ["0", "aggregate", 5], ["1", "volatile", 0], ["1", "aggregate", 0]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_remapped_rows", "cause"), [["0", "uncorrectable", 3], ["0", "correctable", 1], ["1", "uncorrectable", 0], ["1", "correctable", 0]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_row_remap_failed"), [["0", 0], ["1", 1]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_pcie_replays_total"), [["0", 12], ["1", 0]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_temperature_celsius", "sensor"), [["0", "gpu", 88], ["0", "memory", 94], ["1", "gpu", 33], ["1", "memory", 38]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_retired_pages"), [], "page retirement is not reported on an H100");
  });

  it("a V100: retired pages by cause and the pending retirement", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-v"), fixture("dcgm-3.3-v100-throttle-retired.prom"), T0));
    assert.deepEqual(rows(out, "tokentrace_gpu_retired_pages", "cause"), [["2", "dbe", 16], ["2", "sbe", 47]]);
    assert.deepEqual(rows(out, "tokentrace_gpu_retired_pages_pending"), [["2", 1]]);
  });

  it("one series per GPU however many pods share it; a MIG instance has its GPU's health under its own key", () => {
    const sliced = new Joiner().join(scrape(DCGM("gpu-node-b"), fixture("dcgm-time-sliced.prom").replace(/^# HELP DCGM_FI_DEV_GPU_UTIL/m, 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60",modelName="NVIDIA H100 80GB HBM3",hostname="gpu-node-b",namespace="llm",pod="chat-6f8d-aaaaa"} 71\nDCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60",modelName="NVIDIA H100 80GB HBM3",hostname="gpu-node-b",namespace="llm",pod="embed-7c9e-bbbbb"} 71\n# HELP DCGM_FI_DEV_GPU_UTIL'), T0));
    assert.deepEqual(rows(sliced, "tokentrace_gpu_temperature_celsius"), [["0", 71]]);
    const mig = fixture("dcgm-mig.prom") + 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",hostname="gpu-node-c",DCGM_FI_DRIVER_VERSION="570.86.15"} 64\n';
    const out = new Joiner().join(scrape(DCGM("gpu-node-c"), mig, T0));
    const uuid = "GPU-3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b";
    assert.deepEqual(named(out, "tokentrace_gpu_temperature_celsius").map((s) => [labelsOf(s).gpu_uuid, s.samples[0]!.value]).sort(), [[uuid, 64], [`${uuid}/mig1`, 64], [`${uuid}/mig2`, 64], [`${uuid}/mig3`, 64]]);
  });

  it("a stock exporter's health fields: temperatures, PCIe replays and row remapping; nothing for fields it does not export", () => {
    const out = new Joiner().join(scrape(DCGM("gpu-node-d"), fixture("dcgm-default-counters.prom"), T0));
    assert.deepEqual([...new Set(out.map((s) => labelsOf(s).__name__!).filter((n) => n.startsWith("tokentrace_gpu_")))].sort(), [
      "tokentrace_gpu_pcie_replays_total",
      "tokentrace_gpu_remapped_rows",
      "tokentrace_gpu_row_remap_failed",
      "tokentrace_gpu_temperature_celsius",
    ]);
  });
});

describe("busy but starved: activity per unit of busy time", () => {
  it("on the default counters the basis is the busier of the tensor pipe and DRAM: 97% busy with DRAM at 0.118 is 0.12; a working GPU is near its utilisation", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-d"), fixture("dcgm-default-counters.prom"), T0));
    const chat = j.join(scrape(envoy("chat-5d6f-eeeee", "gpu-node-d"), REQUESTS, T0 + 1000));
    const embed = j.join(scrape(envoy("embed-8b2c-fffff", "gpu-node-d"), REQUESTS, T0 + 1000));
    // Activity over busy time as a fraction, unrounded: DRAM 0.118 over 97%, DRAM 0.633 over 88%.
    assert.deepEqual(rows(chat, "tokentrace_pod_gpu_activity_while_busy_ratio", "basis"), [["0", "tensor_dram", 0.118 / (97 / 100)]]);
    assert.deepEqual(rows(embed, "tokentrace_pod_gpu_activity_while_busy_ratio", "basis"), [["1", "tensor_dram", 0.633 / (88 / 100)]]);
  });

  it("with DCGM_FI_PROF_SM_ACTIVE exported the basis is SM activity, capped at 1", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-t"), fixture("dcgm-profiling-tp4.prom"), T0));
    const out = j.join(scrape(envoy("llama70b-tp4-0", "gpu-node-t"), REQUESTS, T0 + 1000));
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_activity_while_busy_ratio", "basis"), [["0", "sm_active", 0.552 / (61 / 100)], ["1", "sm_active", 0.561 / (62 / 100)], ["2", "sm_active", 0.948 / (99 / 100)], ["3", "sm_active", 0.541 / (60 / 100)]]);
    const over = fixture("dcgm-profiling-tp4.prom").replace(/(DCGM_FI_PROF_SM_ACTIVE\{gpu="0"[^}]*\}) \S+/, "$1 0.700000");
    const k = new Joiner();
    k.join(scrape(DCGM("gpu-node-t"), over, T0));
    assert.equal(named(k.join(scrape(envoy("llama70b-tp4-0", "gpu-node-t"), REQUESTS, T0 + 1000)), "tokentrace_pod_gpu_activity_while_busy_ratio")[0]!.samples[0]!.value, 1);
  });

  it("an idle GPU (0% busy) has no ratio", () => {
    const idle = fixture("dcgm-default-counters.prom").replace(/(DCGM_FI_DEV_GPU_UTIL\{gpu="0"[^}]*\}) \S+/, "$1 0");
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-d"), idle, T0));
    assert.deepEqual(named(j.join(scrape(envoy("chat-5d6f-eeeee", "gpu-node-d"), REQUESTS, T0 + 1000)), "tokentrace_pod_gpu_activity_while_busy_ratio"), []);
  });
});

describe("stragglers: the spread across a pod's cards", () => {
  it("a tensor-parallel pod of four with one card busier and fuller than its peers: utilisation spread 39 points, memory 11%, SM activity 0.407", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-t"), fixture("dcgm-profiling-tp4.prom"), T0));
    const out = j.join(scrape(envoy("llama70b-tp4-0", "gpu-node-t"), REQUESTS, T0 + 1000));
    const one = (name: string): [Record<string, string>, number][] => named(out, name).map((s) => [labelsOf(s), s.samples[0]!.value]);
    assert.deepEqual(one("tokentrace_pod_gpu_utilization_spread_percent"), [[{ __name__: "tokentrace_pod_gpu_utilization_spread_percent", namespace: "llm", pod: "llama70b-tp4-0" }, 39]]);
    // Unrounded: (80112 - 71230) / 80112 MiB; 0.948 - 0.541 (0.4069999999999999).
    assert.deepEqual(one("tokentrace_pod_gpu_memory_used_spread_ratio").map(([, v]) => v), [(80112 - 71230) / 80112]);
    assert.deepEqual(one("tokentrace_pod_gpu_sm_active_spread_ratio").map(([l, v]) => [l.source, v]), [["sm_active", 0.948 - 0.541]]);
  });

  it("a pod with one GPU, or on the node-level fallback, has no spread", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-d"), fixture("dcgm-default-counters.prom"), T0));
    assert.deepEqual(named(j.join(scrape(envoy("chat-5d6f-eeeee", "gpu-node-d"), REQUESTS, T0 + 1000)), "tokentrace_pod_gpu_utilization_spread_percent"), []);
    const unmapped = fixture("dcgm-profiling-tp4.prom").replace(/,container="vllm",namespace="llm",pod="llama70b-tp4-0"/g, "");
    const k = new Joiner();
    k.join(scrape(DCGM("gpu-node-t"), unmapped, T0));
    // Held until the exporter answers a scrape that started after the pod was first seen.
    assert.deepEqual(k.join(scrape(envoy("other-0", "gpu-node-t"), REQUESTS, T0 + 1000)).filter((s) => labelsOf(s).__name__ === "tokentrace_requests_total"), []);
    const out = k.join(scrape(DCGM("gpu-node-t"), unmapped, T0 + 2000));
    assert.equal(labelsOf(named(out, "tokentrace_requests_total")[0]!).gpu_attribution, "node");
    assert.deepEqual(named(out, "tokentrace_pod_gpu_utilization_spread_percent"), []);
  });
});
