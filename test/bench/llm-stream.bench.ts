// Token-flow costs of build/filter.wasm against build/noop.wasm through the same test host in one run:
// (1) SSE scanning throughput: a 1 MiB OpenAI-compatible stream delivered in 16 KiB chunks;
// (2) a whole 500-token streamed chat completion (one SSE event per token, as vLLM sends them),
//     per request beside the no-op and as the ratio filter/noop;
// (3) per protocol the filter reads (OpenAI chat completions and legacy completions, the OpenAI
//     Responses API, Anthropic Messages, TGI's generate_stream, KServe v2's generate_stream), a
//     500-token stream with one event per token in that server's own framing (event names, head
//     and final events, usage, [DONE] where it sends one): the filter's cost per output token above
//     the no-op, (filter − noop) / 500 of each round, against issue #29's bar of 0.5 µs, with the
//     no-op's own cost per token and filter/noop beside it. After the runs the filter must have
//     counted every output token and token event of every request, with no reader error, or the
//     benchmark throws naming the protocol: a stream it did not recognise would measure nothing;
// (4) beside the chat stream, a hand-built module that reads each chunk and does nothing else: the
//     floor any filter that reads the stream has in this host, per token above the no-op.
// Rounds alternate the modules and the median counts, and each round is timed in this process's
// CPU time (the work is synchronous and single-threaded), so other load on the machine does not
// inflate the figures the way wall-clock time would.
import { FilterVm, ManualClock } from "../host/index.js";
import { callDrop, proxyModule, resetHeap, seq } from "../host/support/proxy-module.js";
import { op } from "../host/support/wasm-writer.js";
import { median, wasmPath } from "./measure.js";
import type { BenchRow } from "./table.js";

const ROUNDS = 15;
const MIB = 1024 * 1024;
const CHUNK = 16 * 1024;
const THROUGHPUT_BAR_MBPS = 200;
const TOKENS = 500;
/** Streams per timed round of a 500-token stream (about 1 ms each through the filter). */
const TOKEN_STREAMS_PER_ROUND = 20;
/** Issue #29: a streamed completion costs at most 0.5 µs per output token above the no-op. */
const PER_TOKEN_BAR_US = 0.5;
const ROUTE = "chat";
const PROMPT_TOKENS = 31;
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const CREATED_S = 1733140800;
const OPENAI_SDK = "openai-python/1.54.0";

/** One protocol's streamed call: what the client sends, and the body chunks its server answers with. */
interface StreamedCall {
  protocol: string;
  path: string;
  /** The client's user-agent (its SDK's, where it has one). */
  userAgent: string;
  requestBody: string;
  /** The response's content-type as that server writes it. */
  contentType: string;
  /** The model label the filter counts the call under (TGI's requests name none). */
  model: string;
  /** One chunk per token event; the events before the first token and after the last in one chunk each. */
  chunks: Buffer[];
}

const requestHeaders = (call: StreamedCall): Array<[string, string]> => [
  [":authority", "llm.inference.svc.cluster.local"], [":path", call.path], [":method", "POST"], [":scheme", "http"],
  ["content-type", "application/json"], ["accept", "text/event-stream"], ["user-agent", call.userAgent],
  ["x-request-id", "7f2c6f7e-3b1a-4a8e-9d0e-2b7c1e4f5a6b"],
];
const responseHeaders = (contentType: string): Array<[string, string]> => [[":status", "200"], ["content-type", contentType], ["server", "envoy"]];

const tokenText = (i: number): string => ` token${i}`;
const wholeText = (): string => Array.from({ length: TOKENS }, (_, i) => tokenText(i)).join("");
/** An SSE event: `event: <name>` when the server names its events, then one data line. */
const sse = (data: unknown, event?: string): string => `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
const bodyChunks = (head: string, tokens: string[], tail: string): Buffer[] => [head, ...tokens, tail].filter((c) => c.length > 0).map((c) => Buffer.from(c));
const forEachToken = (event: (i: number) => string): string[] => Array.from({ length: TOKENS }, (_, i) => event(i));

// OpenAI chat completions as vLLM streams them (one chunk object per token); the finish chunk, the
// usage chunk (stream_options.include_usage) and [DONE] arrive together.
const chatEvent = (i: number): string =>
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":${CREATED_S},"model":"${LLAMA}","choices":[{"index":0,"delta":{"content":"${tokenText(i)}"},"logprobs":null,"finish_reason":null}]}\n\n`;
const CHAT_TAIL =
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":${CREATED_S},"model":"${LLAMA}","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n` +
  `data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk","created":${CREATED_S},"model":"${LLAMA}","choices":[],"usage":{"prompt_tokens":${PROMPT_TOKENS},"completion_tokens":${TOKENS},"total_tokens":${PROMPT_TOKENS + TOKENS}}}\n\n` +
  "data: [DONE]\n\n";

function chatCompletions(): StreamedCall {
  return {
    protocol: "OpenAI chat completions", path: "/v1/chat/completions", userAgent: OPENAI_SDK, contentType: "text/event-stream; charset=utf-8", model: LLAMA,
    requestBody: JSON.stringify({
      model: LLAMA, stream: true, stream_options: { include_usage: true }, max_tokens: TOKENS,
      messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "Write a long story about a lighthouse keeper." }],
    }),
    chunks: bodyChunks("", forEachToken(chatEvent), CHAT_TAIL),
  };
}

/** OpenAI legacy completions as vLLM streams them: choices[].text, the last token's chunk with its finish_reason, then usage and [DONE]. */
function legacyCompletions(): StreamedCall {
  const chunk = (choices: unknown[], usage?: unknown): unknown => ({ id: "cmpl-5c1e", object: "text_completion", created: CREATED_S, model: LLAMA, choices, ...(usage ? { usage } : {}) });
  const event = (i: number): string =>
    sse(chunk([{ index: 0, text: tokenText(i), logprobs: null, finish_reason: i === TOKENS - 1 ? "length" : null, stop_reason: null }]));
  const tail = sse(chunk([], { prompt_tokens: PROMPT_TOKENS, total_tokens: PROMPT_TOKENS + TOKENS, completion_tokens: TOKENS })) + sse("[DONE]");
  return {
    protocol: "OpenAI completions (legacy)", path: "/v1/completions", userAgent: OPENAI_SDK, contentType: "text/event-stream; charset=utf-8", model: LLAMA,
    requestBody: JSON.stringify({ model: LLAMA, prompt: "Once upon a time, a lighthouse keeper", max_tokens: TOKENS, stream: true, stream_options: { include_usage: true } }),
    chunks: bodyChunks("", forEachToken(event), tail),
  };
}

/**
 * The OpenAI Responses API as vLLM streams it: `event: <type>` then the event's JSON (fields in
 * alphabetical order, `type` last), created ... output_text.delta per token ... completed, no [DONE].
 */
function responsesApi(): StreamedCall {
  const response = (status: string, output: unknown[], usage: unknown): unknown => ({
    background: false, created_at: CREATED_S, error: null, id: "resp_7f3a9c", incomplete_details: null, instructions: "You are a helpful assistant.",
    max_output_tokens: 1024, model: LLAMA, object: "response", output, parallel_tool_calls: true, status, temperature: 0.7, tool_choice: "auto", tools: [], top_p: 1, usage,
  });
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>): string => sse({ ...fields, sequence_number: sequence++, type }, type);
  const part = (text: string): unknown => ({ annotations: [], logprobs: [], text, type: "output_text" });
  const message = (status: string, content: unknown[]): unknown => ({ content, id: "msg_1", role: "assistant", status, type: "message" });
  const text = wholeText();
  const head =
    event("response.created", { response: response("in_progress", [], null) }) +
    event("response.in_progress", { response: response("in_progress", [], null) }) +
    event("response.output_item.added", { item: message("in_progress", []), output_index: 0 }) +
    event("response.content_part.added", { content_index: 0, item_id: "msg_1", output_index: 0, part: part("") });
  const tokens = forEachToken((i) => event("response.output_text.delta", { content_index: 0, delta: tokenText(i), item_id: "msg_1", logprobs: [], output_index: 0 }));
  const usage = { input_tokens: PROMPT_TOKENS, input_tokens_details: { cached_tokens: 0 }, output_tokens: TOKENS, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: PROMPT_TOKENS + TOKENS };
  const tail =
    event("response.output_text.done", { content_index: 0, item_id: "msg_1", logprobs: [], output_index: 0, text }) +
    event("response.content_part.done", { content_index: 0, item_id: "msg_1", output_index: 0, part: part(text) }) +
    event("response.output_item.done", { item: message("completed", [part(text)]), output_index: 0 }) +
    event("response.completed", { response: response("completed", [message("completed", [part(text)])], usage) });
  return {
    protocol: "OpenAI Responses API", path: "/v1/responses", userAgent: OPENAI_SDK, contentType: "text/event-stream; charset=utf-8", model: LLAMA,
    requestBody: JSON.stringify({ model: LLAMA, instructions: "You are a helpful assistant.", input: "Write a long story about a lighthouse keeper.", stream: true, max_output_tokens: 1024 }),
    chunks: bodyChunks(head, tokens, tail),
  };
}

/**
 * Anthropic Messages: message_start, content_block_start, ping, one content_block_delta per token,
 * content_block_stop, message_delta (stop_reason, cumulative usage), message_stop; no [DONE].
 */
function anthropicMessages(): StreamedCall {
  const event = (data: { type: string } & Record<string, unknown>): string => sse(data, data.type);
  const head =
    event({ type: "message_start", message: { id: "msg_01XFDUDYJgAACzvnptvVoYEL", type: "message", role: "assistant", content: [], model: "claude-sonnet-4-5-20250929", stop_reason: null, stop_sequence: null, usage: { input_tokens: PROMPT_TOKENS, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } }) +
    event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }) +
    event({ type: "ping" });
  const tokens = forEachToken((i) => event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: tokenText(i) } }));
  const tail =
    event({ type: "content_block_stop", index: 0 }) +
    event({ type: "message_delta", delta: { stop_reason: "max_tokens", stop_sequence: null }, usage: { output_tokens: TOKENS } }) +
    event({ type: "message_stop" });
  return {
    protocol: "Anthropic Messages", path: "/v1/messages", userAgent: "anthropic-python/0.40.0", contentType: "text/event-stream; charset=utf-8", model: "claude-sonnet-4-5",
    requestBody: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: TOKENS, system: "You are a helpful assistant.", messages: [{ role: "user", content: "Write a long story about a lighthouse keeper." }], stream: true }),
    chunks: bodyChunks(head, tokens, tail),
  };
}

/** TGI's generate_stream: `data:` (no space) and one StreamResponse per token; the last carries generated_text and details. */
function tgiGenerateStream(): StreamedCall {
  const event = (i: number): string => {
    const last = i === TOKENS - 1;
    const details = last ? { finish_reason: "length", generated_tokens: TOKENS, seed: null, input_length: PROMPT_TOKENS } : null;
    return `data:${JSON.stringify({ index: i + 1, token: { id: 1000 + i, text: tokenText(i), logprob: -0.25, special: false }, generated_text: last ? wholeText() : null, details })}\n\n`;
  };
  return {
    protocol: "TGI generate_stream", path: "/generate_stream", userAgent: "python-requests/2.32.3", contentType: "text/event-stream", model: "unknown",
    requestBody: JSON.stringify({ inputs: "Write a long story about a lighthouse keeper.", parameters: { max_new_tokens: TOKENS, temperature: 0.7, details: true } }),
    chunks: bodyChunks("", forEachToken(event), ""),
  };
}

/** KServe v2 generate_stream as Triton's vLLM backend answers it: `data: ` and one response per token, num_output_tokens each; no [DONE]. */
function kserveGenerateStream(): StreamedCall {
  const event = (i: number): string =>
    sse({ id: "42", model_name: "llama-3-8b", model_version: "1", text_output: tokenText(i), num_input_tokens: PROMPT_TOKENS, num_output_tokens: 1, ...(i === TOKENS - 1 ? { finish_reason: "length" } : {}) });
  return {
    protocol: "KServe v2 generate_stream", path: "/v2/models/llama-3-8b/generate_stream", userAgent: "python-requests/2.32.3", contentType: "text/event-stream; charset=utf-8", model: "llama-3-8b",
    requestBody: JSON.stringify({ id: "42", text_input: "Write a long story about a lighthouse keeper.", parameters: { max_tokens: TOKENS, stream: true, return_num_input_tokens: true, return_num_output_tokens: true, return_finish_reason: true } }),
    chunks: bodyChunks("", forEachToken(event), ""),
  };
}

/** 1 MiB of chat completion stream, cut into 16 KiB chunks at arbitrary places (events straddle chunk boundaries). */
function megabyteStream(): StreamedCall {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < MIB - CHAT_TAIL.length; i++) {
    const e = chatEvent(i);
    parts.push(e);
    size += e.length;
  }
  const all = Buffer.from(parts.join("") + CHAT_TAIL).subarray(0, MIB);
  const chunks: Buffer[] = [];
  for (let at = 0; at < all.length; at += CHUNK) chunks.push(all.subarray(at, Math.min(all.length, at + CHUNK)));
  return { ...chatCompletions(), chunks };
}

function streamOnce(vm: FilterVm, clock: ManualClock, call: StreamedCall): void {
  const s = vm.newStream({ routeName: ROUTE });
  s.requestHeaders(requestHeaders(call), false);
  s.requestBody(call.requestBody, true);
  clock.advanceMs(40);
  s.responseHeaders(responseHeaders(call.contentType), false);
  const chunks = call.chunks;
  for (let i = 0; i < chunks.length; i++) {
    clock.advanceMs(1);
    s.responseBody(chunks[i]!, i === chunks.length - 1);
  }
  s.end();
}

/** Per-request CPU µs of each round, filter and noop side by side (index r: the same round), and how many calls the filter VM saw. */
interface Measured {
  filterUs: number[];
  noopUs: number[];
  /** The body-read module's, when measured beside them. */
  bodyReadUs: number[] | undefined;
  filterVm: FilterVm;
  filterCalls: number;
}

const WARMUP_CALLS = 3;

// A hand-built module that reads each response chunk (proxy_get_buffer_bytes of the whole chunk)
// and does nothing else: what any filter that looks at the stream pays this host per chunk.
const bodyReadModule = (): Uint8Array =>
  proxyModule({
    imports: ["proxy_get_buffer_bytes"],
    callbacks: {
      proxy_on_response_body: seq(
        resetHeap,
        // proxy_on_response_body(context, body_buffer_length, end_of_stream): read [0, length).
        callDrop("env.proxy_get_buffer_bytes", op.i32(RESPONSE_BODY), op.i32(0), op.get(1), op.i32(16), op.i32(20)),
      ),
    },
  });
const RESPONSE_BODY = 1;

async function measure(call: StreamedCall, repeat: number, withBodyRead = false): Promise<Measured> {
  const modules: Array<string | Uint8Array> = [wasmPath("filter.wasm"), wasmPath("noop.wasm"), ...(withBodyRead ? [bodyReadModule()] : [])];
  const sides = await Promise.all(
    modules.map(async (wasm) => {
      const clock = new ManualClock();
      const vm = await FilterVm.load({ wasm, clock, maxRetainedSamples: 0 });
      for (let i = 0; i < WARMUP_CALLS; i++) streamOnce(vm, clock, call);
      return { vm, clock, rounds: [] as number[] };
    }),
  );
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(r + k) % sides.length]!;
      const t0 = process.cpuUsage();
      for (let i = 0; i < repeat; i++) streamOnce(side.vm, side.clock, call);
      const used = process.cpuUsage(t0);
      side.rounds.push((used.user + used.system) / repeat);
    }
  }
  for (const side of sides) if (side.vm.failed) throw new Error(`a VM failed during the benchmark: ${side.vm.failureReason}`);
  return { filterUs: sides[0]!.rounds, noopUs: sides[1]!.rounds, bodyReadUs: sides[2]?.rounds, filterVm: sides[0]!.vm, filterCalls: WARMUP_CALLS + ROUNDS * repeat };
}

const READER_ERRORS = ["sse_malformed", "body_not_json", "unknown_shape", "usage_invalid"];

/** Throws, naming the protocol, unless the filter counted every output token and token event of every call, and no reader error. */
function assertCounted(call: StreamedCall, m: Measured): void {
  const vm = m.filterVm;
  vm.tick(); // counters reach the host on a tick
  const labels = { route: ROUTE, model: call.model };
  const want = m.filterCalls * TOKENS;
  const tokens = vm.stats.value("tokentrace_llm_output_tokens_total", labels) ?? 0;
  const events = vm.stats.value("tokentrace_llm_stream_chunks_total", labels) ?? 0;
  const errors = READER_ERRORS.filter((error) => (vm.stats.value("tokentrace_filter_errors_total", { error }) ?? 0) > 0);
  if (tokens !== want || events !== want || errors.length > 0) {
    throw new Error(
      `streamed completion, ${call.protocol}: over ${m.filterCalls} calls of ${TOKENS} tokens the filter counted ${tokens} output tokens and ` +
        `${events} content events (want ${want} each)${errors.length > 0 ? ` and reader errors ${errors.join(", ")}` : ""}: it did not read the stream as this protocol, so the figure would not measure it`,
    );
  }
}

/** The row of one protocol: the median over rounds of (filter − noop) / tokens, each round's two sides measured together. */
function perTokenRow(call: StreamedCall, m: Measured): BenchRow {
  const aboveUs = m.filterUs.map((f, r) => (f - m.noopUs[r]!) / TOKENS);
  const ratios = m.filterUs.map((f, r) => f / m.noopUs[r]!);
  return {
    figure: `streamed completion, ${call.protocol}: cost per output token above the no-op`,
    value: median(aboveUs),
    unit: "µs",
    baseline: { name: "noop.wasm per token", value: median(m.noopUs) / TOKENS },
    ratio: { value: median(ratios), of: "filter/noop", better: "lower" },
    bar: { on: "value", max: PER_TOKEN_BAR_US },
  };
}

/** Measures and returns the rows for `make bench`. */
export async function run(): Promise<BenchRow[]> {
  const megabyte = megabyteStream();
  const mib = await measure(megabyte, 3);
  // The filter really scanned: every event of every run was counted (counters reach the host on a tick).
  mib.filterVm.tick();
  const chunksCounted = mib.filterVm.stats.value("tokentrace_llm_stream_chunks_total", { route: ROUTE, model: megabyte.model }) ?? 0;
  if (chunksCounted === 0) throw new Error("the filter counted no stream chunks: it did not scan the stream");
  const mbps = MIB / 1e6 / (median(mib.filterUs) / 1e6);

  const calls = [chatCompletions(), legacyCompletions(), responsesApi(), anthropicMessages(), tgiGenerateStream(), kserveGenerateStream()];
  const measured: Measured[] = [];
  for (const call of calls) measured.push(await measure(call, TOKEN_STREAMS_PER_ROUND, call === calls[0]));
  calls.forEach((call, i) => assertCounted(call, measured[i]!));

  const chat = measured[0]!;
  const [chatFilterUs, chatNoopUs] = [median(chat.filterUs), median(chat.noopUs)];
  return [
    {
      figure: "SSE scanning throughput in filter.wasm (1 MiB stream in 16 KiB chunks, host copies included)",
      value: mbps,
      unit: "MB/s",
      bar: { on: "value", min: THROUGHPUT_BAR_MBPS },
    },
    {
      figure: `500-token streamed chat completion per request (${calls[0]!.chunks.length} body chunks)`,
      value: chatFilterUs,
      unit: "µs",
      baseline: { name: "noop.wasm", value: chatNoopUs },
      ratio: { value: chatFilterUs / chatNoopUs, of: "filter/noop", better: "lower" },
    },
    ...calls.map((call, i) => perTokenRow(call, measured[i]!)),
    {
      figure: "streamed completion, the chunk read alone (one proxy_get_buffer_bytes per chunk, no logic): cost per output token above the no-op",
      value: median(chat.bodyReadUs!.map((b, r) => (b - chat.noopUs[r]!) / TOKENS)),
      unit: "µs",
      baseline: { name: "filter.wasm, chat", value: median(chat.filterUs.map((f, r) => (f - chat.noopUs[r]!) / TOKENS)) },
    },
  ];
}
