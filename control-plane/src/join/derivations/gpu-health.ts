// GPU health per GPU, at each dcgm-exporter scrape: temperatures, the clock-event (throttle) reasons
// decoded from their bitmask into one 0/1 series per reason, the last XID with its class, and the
// memory and PCIe error counts, one series per GPU key (deduplicated across a time-sliced GPU's pod
// copies; a MIG instance gets its GPU's, so every gpu_uuid of tokentrace_pod_gpu_info joins), each
// only where the exporter exports its field (NVIDIA/dcgm-exporter d5e5f51 etc/default-counters.csv
// enables temperatures, XID, PCIe replays and row remapping; ECC, retired pages and the clock-event
// reasons must be added to the counters file). The alerts over them are in
// istio/observability/gpu-health-rules.yaml.
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import type { GpuHealth } from "../gpu-index.js";
import * as C from "../catalogue.js";
import type { IdentityView, PodIdentity } from "../identity.js";
import type { Derivation } from "./derivation.js";

/**
 * The clock-event reason bits, DCGM_CLOCKS_EVENT_REASON_* (NVIDIA/DCGM 72fa3fe dcgmlib/dcgm_fields.h;
 * the same bits as the deprecated DCGM_CLOCKS_THROTTLE_REASON_*), named as dcgm-exporter names them in
 * DCGM_EXP_CLOCK_EVENTS_COUNT's clock_event label (d5e5f51 internal/pkg/collector/clock_events_collector.go).
 */
export const CLOCK_EVENT_REASONS: readonly (readonly [bit: number, reason: string])[] = [
  [0x1, "gpu_idle"],
  [0x2, "clocks_setting"],
  [0x4, "power_cap"],
  [0x8, "hw_slowdown"],
  [0x10, "sync_boost"],
  [0x20, "sw_thermal"],
  [0x40, "hw_thermal"],
  [0x80, "hw_power_brake"],
  [0x100, "display_clocks"],
];
const KNOWN_REASONS = new Set(CLOCK_EVENT_REASONS.map(([, r]) => r));
const ALL_KNOWN_BITS = 0x1ff;

/** Reason -> 0/1 from the bitmask; `other` only when a bit outside the known ones is set. */
export function decodeClockEventReasons(mask: number): Map<string, 0 | 1> {
  const out = new Map<string, 0 | 1>();
  if (!Number.isFinite(mask) || mask < 0) return out;
  // Bits past 2^53 are not exact in a double; bit tests by division stay exact below that.
  for (const [bit, reason] of CLOCK_EVENT_REASONS) out.set(reason, Math.floor(mask / bit) % 2 === 1 ? 1 : 0);
  if (Math.floor(mask / (ALL_KNOWN_BITS + 1)) > 0) out.set("other", 1);
  return out;
}

/**
 * XID classes. `devastating`, `memory`, `pcie`, `thermal`, `power`, `nvlink`, `inforom`: the groups
 * DCGM's own health watch files them in (NVIDIA/DCGM 72fa3fe modules/health/DcgmHealthWatch.cpp
 * BuildXidMappings: m_devastatingXids, always watched, and m_subsystemXids); `application`: the XIDs
 * NVIDIA's Kubernetes device plugin leaves the GPU healthy for, an application's fault
 * (NVIDIA/k8s-device-plugin 1b826ac internal/rm/health.go ignoredXids: 13, 31, 43, 45, 68, 109; DCGM
 * files 31 and 43 under memory with a warning, the plugin's reading wins here because they follow a
 * program's own bad access); `other`: any XID neither lists (NVIDIA's XID catalogue,
 * docs.nvidia.com/deploy/xid-errors, says what each means and which action it needs).
 */
const XID_CLASSES = new Map<number, string>([
  [48, "devastating"], [74, "devastating"], [79, "devastating"], [95, "devastating"], [119, "devastating"], [120, "devastating"], [140, "devastating"],
  [32, "memory"], [63, "memory"], [64, "memory"], [94, "memory"],
  [38, "pcie"], [39, "pcie"], [42, "pcie"],
  [60, "thermal"], [61, "thermal"], [62, "thermal"],
  [54, "power"], [56, "power"], [57, "power"], [58, "power"], [78, "power"],
  [67, "nvlink"], [73, "nvlink"], [121, "nvlink"], [137, "nvlink"],
  [93, "inforom"],
  [13, "application"], [31, "application"], [43, "application"], [45, "application"], [68, "application"], [109, "application"],
]);

/** The class of an XID (see XID_CLASSES). */
export const xidClass = (xid: number): string => XID_CLASSES.get(xid) ?? "other";

/** An XID as a bounded label value: the number, or "other" past the catalogue's range. */
const xidLabel = (xid: number): string => (Number.isInteger(xid) && xid > 0 && xid < 1000 ? String(xid) : "other");

/** The health series of one GPU key, `gl` its labels. */
export function healthSeries(h: GpuHealth, gl: Labels, ts: number, out: WriteSeries[]): void {
  const put = (name: string, value: number, extra: Labels = []): void => {
    out.push({ labels: ["__name__", name, ...gl, ...extra], samples: [{ value, timestampMs: ts }] });
  };
  if (h.temperatureC !== undefined) put(C.GPU_TEMPERATURE, h.temperatureC, ["sensor", "gpu"]);
  if (h.memoryTemperatureC !== undefined) put(C.GPU_TEMPERATURE, h.memoryTemperatureC, ["sensor", "memory"]);
  if (h.clockEventReasons !== undefined) {
    for (const [reason, v] of decodeClockEventReasons(h.clockEventReasons)) put(C.GPU_CLOCK_EVENT_ACTIVE, v, ["reason", reason]);
  } else if (h.clockEventCounts !== undefined) {
    // A reason held for any sample of the exporter's window counts as active.
    for (const [, reason] of CLOCK_EVENT_REASONS) put(C.GPU_CLOCK_EVENT_ACTIVE, (h.clockEventCounts.get(reason) ?? 0) > 0 ? 1 : 0, ["reason", reason]);
    for (const [reason, n] of h.clockEventCounts) if (!KNOWN_REASONS.has(reason) && n > 0) {
      put(C.GPU_CLOCK_EVENT_ACTIVE, 1, ["reason", "other"]);
      break;
    }
  }
  if (h.xidCounts !== undefined) {
    for (const [xid, n] of h.xidCounts) if (n > 0) put(C.GPU_XID_ERRORS, n, ["xid", xidLabel(Number(xid)), "xid_class", xidClass(Number(xid))]);
  } else if (h.xid !== undefined && h.xid !== 0) put(C.GPU_XID_ERRORS, 1, ["xid", xidLabel(h.xid), "xid_class", xidClass(h.xid)]);
  if (h.eccDbeVolatile !== undefined) put(C.GPU_ECC_DBE_ERRORS, h.eccDbeVolatile, ["scope", "volatile"]);
  if (h.eccDbeAggregate !== undefined) put(C.GPU_ECC_DBE_ERRORS, h.eccDbeAggregate, ["scope", "aggregate"]);
  if (h.retiredPagesDbe !== undefined) put(C.GPU_RETIRED_PAGES, h.retiredPagesDbe, ["cause", "dbe"]);
  if (h.retiredPagesSbe !== undefined) put(C.GPU_RETIRED_PAGES, h.retiredPagesSbe, ["cause", "sbe"]);
  if (h.retiredPagesPending !== undefined) put(C.GPU_RETIRED_PAGES_PENDING, h.retiredPagesPending);
  if (h.remappedRowsUncorrectable !== undefined) put(C.GPU_REMAPPED_ROWS, h.remappedRowsUncorrectable, ["cause", "uncorrectable"]);
  if (h.remappedRowsCorrectable !== undefined) put(C.GPU_REMAPPED_ROWS, h.remappedRowsCorrectable, ["cause", "correctable"]);
  if (h.rowRemapFailed !== undefined) put(C.GPU_ROW_REMAP_FAILED, h.rowRemapFailed);
  if (h.pcieReplays !== undefined) put(C.GPU_PCIE_REPLAYS, h.pcieReplays);
}

/** tokentrace_gpu_*: stateless, read from the GPU index at each dcgm-exporter scrape. */
export class GpuHealthState implements Derivation {
  constructor(private readonly identities: IdentityView) {}

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, _pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (t.kind !== "dcgm") return;
    const index = this.identities.index;
    for (const g of index.gpusOfExporter(t.id)?.values() ?? []) {
      // A MIG instance's device-level fields are its GPU's (the exporter reports them on the GPU's own series).
      const h = index.deviceOf(g.key)?.health;
      if (!h) continue;
      healthSeries(h, ["gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname], r.timestampMs, out);
    }
  }
}
