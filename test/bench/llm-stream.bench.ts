// Token-flow costs of build/filter.wasm against build/noop.wasm through the same test host in one run:
// (1) SSE scanning throughput: a 1 MiB OpenAI-compatible stream delivered in 16 KiB chunks;
// (2) a whole 500-token streamed chat completion (one SSE event per token, as vLLM sends them).
// Rounds alternate the two modules and the median counts, and each round is timed in this process's
// CPU time (the work is synchronous and single-threaded), so other load on the machine does not
// inflate the figures the way wall-clock time would.
import { FilterVm, ManualClock } from "../host/index.js";
import { median, wasmPath } from "./measure.js";
import type { BenchRow } from "./table.js";

const ROUNDS = 15;
const MIB = 1024 * 1024;
const CHUNK = 16 * 1024;
const THROUGHPUT_BAR_MBPS = 200;
const TOKENS = 500;


const REQUEST: Array<[string, string]> = [
  [":authority", "llm.inference.svc.cluster.local"], [":path", "/v1/chat/completions"], [":method", "POST"], [":scheme", "http"],
  ["content-type", "application/json"], ["accept", "text/event-stream"], ["user-agent", "openai-python/1.54.0"],
  ["x-request-id", "7f2c6f7e-3b1a-4a8e-9d0e-2b7c1e4f5a6b"],
];
const REQUEST_BODY = JSON.stringify({
  model: "meta-llama/Llama-3.1-8B-Instruct", stream: true, stream_options: { include_usage: true }, max_tokens: TOKENS,
  messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "Write a long story about a lighthouse keeper." }],
});
const RESPONSE: Array<[string, string]> = [[":status", "200"], ["content-type", "text/event-stream; charset=utf-8"], ["server", "envoy"]];

const event = (i: number): string =>
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1733140800,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" token${i}"},"logprobs":null,"finish_reason":null}]}\n\n`;
const TAIL =
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1733140800,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n` +
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":1733140800,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":31,"completion_tokens":${TOKENS},"total_tokens":${31 + TOKENS}}}\n\n` +
  "data: [DONE]\n\n";

/** 1 MiB of stream, cut into 16 KiB chunks at arbitrary places (events straddle chunk boundaries). */
function megabyteStream(): Buffer[] {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < MIB - TAIL.length; i++) {
    const e = event(i);
    parts.push(e);
    size += e.length;
  }
  const all = Buffer.from(parts.join("") + TAIL).subarray(0, MIB);
  const chunks: Buffer[] = [];
  for (let at = 0; at < all.length; at += CHUNK) chunks.push(all.subarray(at, Math.min(all.length, at + CHUNK)));
  return chunks;
}

const tokenEvents = [...Array.from({ length: TOKENS }, (_, i) => Buffer.from(event(i))), Buffer.from(TAIL)];

function streamOnce(vm: FilterVm, clock: ManualClock, chunks: Buffer[]): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders(REQUEST, false);
  s.requestBody(REQUEST_BODY, true);
  clock.advanceMs(40);
  s.responseHeaders(RESPONSE, false);
  for (let i = 0; i < chunks.length; i++) {
    clock.advanceMs(1);
    s.responseBody(chunks[i]!, i === chunks.length - 1);
  }
  s.end();
}


async function measure(chunks: Buffer[], repeat: number): Promise<{ filter: number; noop: number; filterVm: FilterVm }> {
  const sides = await Promise.all(
    ["filter.wasm", "noop.wasm"].map(async (name) => {
      const clock = new ManualClock();
      const vm = await FilterVm.load({ wasm: wasmPath(name), clock, maxRetainedSamples: 0 });
      for (let i = 0; i < 3; i++) streamOnce(vm, clock, chunks);
      return { vm, clock, rounds: [] as number[] };
    }),
  );
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(r + k) % sides.length]!;
      const t0 = process.cpuUsage();
      for (let i = 0; i < repeat; i++) streamOnce(side.vm, side.clock, chunks);
      const used = process.cpuUsage(t0);
      side.rounds.push((used.user + used.system) / repeat);
    }
  }
  for (const side of sides) if (side.vm.failed) throw new Error(`a VM failed during the benchmark: ${side.vm.failureReason}`);
  return { filter: median(sides[0]!.rounds), noop: median(sides[1]!.rounds), filterVm: sides[0]!.vm };
}

/** Measures and returns the rows for `make bench`. */
export async function run(): Promise<BenchRow[]> {
  const mib = await measure(megabyteStream(), 3);
  // The filter really scanned: every event of every run was counted (counters reach the host on a tick).
  mib.filterVm.tick();
  const chunksCounted = mib.filterVm.stats.value("tokentrace_llm_stream_chunks_total", { route: "chat", model: "meta-llama/Llama-3.1-8B-Instruct" }) ?? 0;
  if (chunksCounted === 0) throw new Error("the filter counted no stream chunks: it did not scan the stream");
  const mbps = MIB / 1e6 / (mib.filter / 1e6);
  const tokens = await measure(tokenEvents, 20);
  const ratio = tokens.filter / tokens.noop;
  return [
    {
      figure: "SSE scanning throughput in filter.wasm (1 MiB stream in 16 KiB chunks, host copies included)",
      value: mbps,
      unit: "MB/s",
      bar: { on: "value", min: THROUGHPUT_BAR_MBPS },
    },
    {
      figure: `500-token streamed chat completion per request (${TOKENS + 1} body chunks)`,
      value: tokens.filter,
      unit: "µs",
      baseline: { name: "noop.wasm", value: tokens.noop },
      ratio: { value: ratio, of: "filter/noop", better: "lower" },
    },
  ];
}
