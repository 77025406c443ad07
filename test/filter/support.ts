// Shared set-up for the filter tests: they always run the shipped build/filter.wasm under the
// strict proxy-wasm test host, and fail (never skip) when it has not been built.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FILTER_STAT_TAGS } from "./catalogue.js";
import { FilterVm, ManualClock, type FilterStream, type FilterVmOptions, type StreamProperties } from "../host/index.js";

export const FILTER_WASM = fileURLToPath(new URL("../../build/filter.wasm", import.meta.url));
/** The content module: the same filter with content capture, redaction and the pseudonym key (filter/index-content.ts). */
export const FILTER_CONTENT_WASM = fileURLToPath(new URL("../../build/filter-content.wasm", import.meta.url));
export const NOOP_WASM = fileURLToPath(new URL("../../build/noop.wasm", import.meta.url));

/** The length-class label each LLM latency histogram carries (filter/telemetry/length-classes.ts). */
const CLASS_TAG: Readonly<Record<string, string>> = { tokentrace_llm_ttft_ms: "input_length", tokentrace_llm_decode_ms: "output_length", tokentrace_llm_duration_ms: "output_length" };

/** A latency histogram's samples for `labels` over every length class, as a query summing the class away sees them. */
export function llmSamples(vm: FilterVm, metric: keyof typeof CLASS_TAG & string, labels: Record<string, string>): number[] {
  return vm.stats.samplesOver(metric, labels, CLASS_TAG[metric]!);
}

export function requireArtifact(path: string): string {
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`make build\` first`);
  return path;
}

/** A deterministic WASI random source: bytes 1, 2, 3, ... (wrapping), so ids are predictable. */
export function countingRandom(start = 1): (out: Uint8Array) => void {
  let next = start;
  return (out) => {
    for (let i = 0; i < out.length; i++) {
      out[i] = next & 0xff;
      next++;
    }
  };
}

/**
 * A random source that replays the given blocks as one byte stream, then 0xee bytes: the filter
 * draws its randomness in pooled blocks, so the scripted bytes are what its requests get, in order.
 */
export function scriptedRandom(blocks: Uint8Array[]): (out: Uint8Array) => void {
  const bytes = Buffer.concat(blocks);
  let offset = 0;
  return (out) => {
    out.fill(0xee);
    const n = Math.max(0, Math.min(out.length, bytes.length - offset));
    out.set(bytes.subarray(offset, offset + n));
    offset += n;
  };
}

/**
 * Counters are flushed on a tick by default (stats.flushIntervalMs); most tests read them right
 * after a request, so they send them at once unless the test sets the interval itself.
 */
export function withImmediateCounters(config: unknown): unknown {
  if (config === null || typeof config !== "object" || Array.isArray(config)) return config;
  const c = config as { stats?: Record<string, unknown> };
  if (c.stats !== undefined && (typeof c.stats !== "object" || c.stats === null || "flushIntervalMs" in c.stats)) return config;
  return { ...c, stats: { ...c.stats, flushIntervalMs: 0 } };
}

export async function loadFilter(options: Partial<FilterVmOptions> & { config?: unknown } = {}): Promise<FilterVm> {
  const { config: given, ...rest } = options;
  const config = given === undefined && rest.pluginConfig === undefined ? {} : given;
  const immediate = withImmediateCounters(config);
  const pluginConfig = immediate === undefined ? rest.pluginConfig : typeof immediate === "string" ? immediate : JSON.stringify(immediate);
  return FilterVm.load({ wasm: requireArtifact(FILTER_WASM), clock: new ManualClock(1_700_000_000_000_000_000n), statTags: [...FILTER_STAT_TAGS], ...rest, pluginConfig });
}

/** loadFilter with the content module: every test of content capture runs this one. */
export async function loadContentFilter(options: Partial<FilterVmOptions> & { config?: unknown } = {}): Promise<FilterVm> {
  return loadFilter({ ...options, wasm: requireArtifact(FILTER_CONTENT_WASM) });
}

export interface Exchange {
  headers?: Array<[string, string]>;
  route?: string;
  status?: number;
  responseHeaders?: Array<[string, string]>;
  /** Time between request headers and the end of the stream, on the VM's ManualClock. */
  durationMs?: number;
  clock?: ManualClock;
  properties?: StreamProperties;
}

/** One headers-only exchange through the filter; asserts that every callback continued. */
export function exchange(vm: FilterVm, x: Exchange = {}): FilterStream {
  const stream = vm.newStream({ routeName: x.route, ...x.properties });
  const requestStatus = stream.requestHeaders(
    x.headers ?? [[":method", "GET"], [":path", "/"], [":authority", "svc.local"], [":scheme", "http"]],
    true,
  );
  if (requestStatus !== 0) throw new Error(`request headers returned status ${requestStatus}, want Continue (0)`);
  if (x.durationMs !== undefined) x.clock?.advanceMs(x.durationMs);
  if (x.status !== undefined) {
    const responseStatus = stream.responseHeaders([[":status", String(x.status)], ...(x.responseHeaders ?? [])], true);
    if (responseStatus !== 0) throw new Error(`response headers returned status ${responseStatus}, want Continue (0)`);
  }
  stream.end();
  return stream;
}

export const baseRequest = (extra: Array<[string, string]> = [], path = "/v1/chat/completions", authority = "llm.svc:8000"): Array<[string, string]> => [
  [":method", "POST"],
  [":path", path],
  [":authority", authority],
  [":scheme", "http"],
  ["content-type", "application/json"],
  ...extra,
];
