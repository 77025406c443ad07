// Run by engine-causes.test.ts as `node --expose-gc`: feeds one EngineSignals `points` scrapes of
// one model server (every column the store keeps, with two waiting reasons and three cache tiers,
// labels parsed afresh each scrape as the pipeline's are) and prints, as JSON, what the heap grew by per point beside the store's estimate (POINT_BYTES).
import { EngineSignals } from "../../../control-plane/src/dashboard/engine-signals.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const points = Number(process.argv[2]);
const labels = 'namespace="llm",pod="chat-6f8d-aaaaa",model="meta-llama/Llama-3.1-8B-Instruct"';

function text(k: number): string {
  const lines = [
    C.MODEL_GPU_UTILIZATION,
    C.MODEL_PREFIX_CACHE_HIT_RATIO,
    C.MODEL_SPEC_DECODE_ACCEPTANCE,
    C.MODEL_REQUESTS_WAITING,
    C.MODEL_REQUESTS_RUNNING,
    C.MODEL_KV_CACHE_USAGE,
    C.MODEL_PREEMPTIONS_PER_SECOND,
    C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO,
    C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN,
    C.MODEL_REQUEST_PREEMPTIONS_MEAN,
  ].map((name, i) => `${name}{${labels}} ${(k % 97) / 97 + i}`);
  // The labelled columns too: two reasons and three tiers, label values parsed afresh each scrape.
  for (const reason of ["capacity", "deferred"]) lines.push(`${C.MODEL_REQUESTS_WAITING_BY_REASON}{${labels},reason="${reason}"} ${k % 5}`);
  for (const tier of ["device", "host", "storage_file"]) lines.push(`${C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE}{${labels},cache_source="${tier}"} ${(k % 89) / 89}`);
  for (const q of ["0.5", "0.95", "0.99"]) {
    lines.push(`${C.MODEL_REQUEST_TPOT_QUANTILE}{${labels},quantile="${q}"} ${0.01 + (k % 13) / 1000}`);
    for (const phase of ["queue", "prefill", "decode", "inter_token"]) lines.push(`${C.MODEL_LATENCY_QUANTILE}{${labels},phase="${phase}",quantile="${q}"} ${0.2 + (k % 7) / 100}`);
  }
  return `${lines.join("\n")}\n`;
}

const batch = (k: number): WriteSeries[] => parseText(text(k)).samples.map((s) => ({ labels: ["__name__", s.name, ...s.labels], samples: [{ value: s.value, timestampMs: 1_000_000 + k * 2000 }] }));
const store = new EngineSignals({ retentionMs: Number.MAX_SAFE_INTEGER, maxModels: 32, maxPointsPerModel: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER });
const source = (k: number) => ({ target: { id: "vllm|chat:8000", kind: "vllm", namespace: "llm", pod: "chat-6f8d-aaaaa" }, timestampMs: 1_000_000 + k * 2000 });
// Each batch is garbage once taken: the growth is what the store keeps. A warm-up first, so the
// code's own allocations (compiled code, inline caches) are not counted as points.
const WARM = 500;
for (let k = -WARM; k <= 0; k++) store.observe(batch(k), source(k));
const before = heldBytes();
for (let k = 1; k <= points; k++) store.observe(batch(k), source(k));
const after = heldBytes();
process.stdout.write(JSON.stringify({ held: store.points({ namespace: "llm", model: "meta-llama/Llama-3.1-8B-Instruct" }).length - WARM - 1, measuredPerPoint: (after - before) / points, estimatedPerPoint: store.bytes / (points + WARM + 1) }));
