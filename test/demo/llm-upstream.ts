// A small simulated OpenAI-compatible server: chat and text completions (JSON or SSE streaming,
// usage in the last chunk when stream_options.include_usage is set), embeddings and the model list,
// and a rate of 429/500 answers. Timing comes from the engine (engine.ts) when one is given: each
// request waits in its queue, is prefilled and decoded in batches, and its tokens are written as the
// engine produces them; without one every answer is immediate (unit tests). Like vLLM's API server,
// it serves the engine's Prometheus metrics at GET /metrics on the same port (vllm-metrics.ts).
// With LoRA modules (vLLM's --enable-lora --lora-modules name=path), the model list names each
// adapter with its base model as `parent`, and a request naming an adapter runs as that adapter's.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Engine, RequestTimings } from "./engine.js";
import { vllmRequestSpan, type OtlpJsonSpan } from "./vllm-spans.js";

/** Options of the simulated server; every delay 0 in tests. */
export interface LlmUpstreamOptions {
  /** 0 (default) = ephemeral. */
  port?: number;
  /** Model name answered when the request names none. */
  model?: string;
  /** Queues, batches and times every request; absent: no delays. */
  engine?: Engine;
  /**
   * What the application adds to every completion's prompt, drawn per request and counted in usage:
   * a system prompt shared by the requests of one tenant (the engine may find it in its prefix
   * cache) and context of the request's own (retrieved documents); default none.
   */
  addedPrompt?: () => { prefix?: { id: string; tokens: number }; contextTokens: number };
  /** Completion tokens of every completion, drawn per request (overrides max_tokens and the default). */
  outputTokens?: () => number;
  /** Served at GET /metrics (the engine's metrics, as vLLM's server exposes them). */
  metrics?: { render(): string };
  /** Share of requests answered 429 or 500 (half each), 0..1, default 0. */
  errorRate?: number;
  /** Random source in [0, 1), default Math.random. */
  random?: () => number;
  /** Completion tokens when the request sets no max_tokens, default 12. */
  defaultMaxTokens?: number;
  /** Where a finished request's span goes, as vLLM exports it (vllm-spans.ts); absent: no spans. Needs an engine. */
  spans?: { add(span: OtlpJsonSpan): void };
  /** LoRA adapters loaded at start (vLLM --lora-modules), each extending the served model; absent: LoRA off. */
  loraModules?: readonly LoraModule[];
  /** The served model's context length (vLLM max_model_len), listed in the model list with LoRA on; default 8192. */
  maxModelLen?: number;
  /** Wall-clock ms (arrivals, `created`), default Date.now; a simulated stack passes its clock. */
  wallMs?: () => number;
}

/** One adapter of --lora-modules: the name requests ask for, and where its weights are. */
export interface LoraModule {
  name: string;
  path: string;
}

/** A running simulated server. */
export interface LlmUpstream {
  url: string;
  /** Requests served, by path. */
  served: Map<string, number>;
  close(): Promise<void>;
}

const DEFAULT_MODEL = "tokentrace-sim-1";
/** When the simulated server "started" (the model cards' created), fixed so lists compare. */
const CREATED = 1767225600;

/** ModelPermission as vLLM's protocol.py has it (every field its default). */
const modelPermission = (id: string): Record<string, unknown> => ({
  id,
  object: "model_permission",
  created: CREATED,
  allow_create_engine: false,
  allow_sampling: true,
  allow_logprobs: true,
  allow_search_indices: false,
  allow_view: true,
  allow_fine_tuning: false,
  organization: "*",
  group: null,
  is_blocking: false,
});

/**
 * GET /v1/models with LoRA on, as vLLM answers it (vllm-project/vllm 075e9ba
 * vllm/entrypoints/openai/serving_models.py OpenAIServingModels.show_available_models, ModelCard and
 * ModelPermission of vllm/entrypoints/openai/protocol.py at 0052bed, dumped with every field): the base
 * model's card (root its path, parent null, its max_model_len), then one per adapter in load order,
 * root the adapter's path and parent the base model (an adapter loaded without a base model name is
 * given the first served model), max_model_len null.
 */
export function loraModelList(model: string, maxModelLen: number, modules: readonly LoraModule[]): Record<string, unknown> {
  const card = (id: string, root: string, parent: string | null, maxLen: number | null, n: number): Record<string, unknown> => ({
    id,
    object: "model",
    created: CREATED,
    owned_by: "vllm",
    root,
    parent,
    max_model_len: maxLen,
    permission: [modelPermission(`modelperm-${String(n).padStart(32, "0")}`)],
  });
  return { object: "list", data: [card(model, model, null, maxModelLen, 0), ...modules.map((m, i) => card(m.name, m.path, model, null, i + 1))] };
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const v: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
        resolve(v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
      } catch {
        resolve({});
      }
    });
  });
}

/** A rough token count: one token per 4 characters, at least 1. */
export function countTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function promptText(body: Record<string, unknown>): string {
  if (Array.isArray(body.messages)) {
    return body.messages.map((m) => (m && typeof m === "object" && typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content : "")).join("\n");
  }
  if (typeof body.prompt === "string") return body.prompt;
  if (typeof body.input === "string") return body.input;
  if (Array.isArray(body.input)) return body.input.filter((x) => typeof x === "string").join("\n");
  return "";
}

function sendJson(res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...extra });
  res.end(body);
}

/** Starts the simulated server on 127.0.0.1. */
export async function startLlmUpstream(opts: LlmUpstreamOptions = {}): Promise<LlmUpstream> {
  const random = opts.random ?? Math.random;
  const wallMs = opts.wallMs ?? Date.now;
  const served = new Map<string, number>();
  let seq = 0;

  /** Runs a request through the engine (or at once); resolves when it is done (with its engine timings), calling onToken per token. */
  const adapters = new Set((opts.loraModules ?? []).map((m) => m.name));
  const generate = (res: ServerResponse, promptTokens: number, outputTokens: number, onToken: (i: number) => void, prefix?: { id: string; tokens: number }, adapter?: string): Promise<{ timings: RequestTimings; arrivalWallMs: number } | undefined> => {
    if (!opts.engine) {
      for (let i = 0; i < outputTokens; i++) onToken(i);
      return Promise.resolve(undefined);
    }
    const engine = opts.engine;
    const arrivalWallMs = wallMs();
    return new Promise((resolve) => {
      // An adapter's KV blocks are its own: vLLM hashes a LoRA request's blocks with the adapter's name
      // (vllm/v1/core/kv_cache_utils.py _gen_lora_extra_hash_keys), so it never reuses the base model's cached prefix.
      const cached = prefix && adapter !== undefined ? { id: `${adapter}\u0000${prefix.id}`, tokens: prefix.tokens } : prefix;
      const handle = engine.submit({ promptTokens, outputTokens, onToken, onDone: (timings) => resolve({ timings, arrivalWallMs }), ...(cached ? { prefix: cached } : {}), ...(adapter !== undefined ? { adapter } : {}) });
      // A client that goes away leaves the queue or the batch, as vLLM aborts the request.
      res.once("close", () => handle.cancel());
    });
  };

  async function completion(req: IncomingMessage, res: ServerResponse, kind: "chat" | "text"): Promise<void> {
    const body = await readJson(req);
    const model = typeof body.model === "string" && body.model !== "" ? body.model : (opts.model ?? DEFAULT_MODEL);
    // A request naming a loaded adapter runs with it (vLLM's LoRARequest); its answer names the adapter as the model.
    const adapter = adapters.has(model) ? model : undefined;
    const maxTokens = typeof body.max_tokens === "number" && body.max_tokens > 0 ? Math.floor(body.max_tokens) : (opts.defaultMaxTokens ?? 12);
    const defaultLimit = opts.defaultMaxTokens ?? 12;
    const completionTokens = opts.outputTokens?.() ?? Math.min(maxTokens, defaultLimit);
    const finishReason = opts.outputTokens === undefined && maxTokens < defaultLimit ? "length" : "stop";
    // The system prompt and context a real application adds count as prompt tokens too.
    const added = opts.addedPrompt?.();
    const promptTokens = (added?.prefix?.tokens ?? 0) + (added?.contextTokens ?? 0) + countTokens(promptText(body));
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${++seq}`;
    const created = Math.floor(wallMs() / 1000);
    const words = Array.from({ length: completionTokens }, (_, i) => `tok${i} `);
    const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;

    const exportSpan = (done: { timings: RequestTimings; arrivalWallMs: number } | undefined): void => {
      if (done === undefined || opts.spans === undefined) return;
      const traceparent = typeof req.headers.traceparent === "string" ? req.headers.traceparent : undefined;
      const span = vllmRequestSpan({ traceparent, ...done, requestId: id, model, finishReason, ...(typeof body.max_tokens === "number" ? { maxTokens: maxTokens } : {}) });
      if (span !== undefined) opts.spans.add(span);
    };

    if (body.stream !== true) {
      exportSpan(await generate(res, promptTokens, completionTokens, () => undefined, added?.prefix, adapter));
      if (res.destroyed) return;
      const text = words.join("");
      const choice = kind === "chat" ? { index: 0, message: { role: "assistant", content: text }, finish_reason: finishReason } : { index: 0, text, finish_reason: finishReason };
      sendJson(res, 200, { id, object: kind === "chat" ? "chat.completion" : "text_completion", created, model, choices: [choice], usage });
      return;
    }

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
    const event = (choices: unknown[], extra: Record<string, unknown> = {}): string => `data: ${JSON.stringify({ id, object, created, model, choices, ...extra })}\n\n`;
    const done = await generate(res, promptTokens, completionTokens, (i) => {
      if (res.destroyed) return;
      const delta = kind === "chat" ? { index: 0, delta: i === 0 ? { role: "assistant", content: words[i] } : { content: words[i] }, finish_reason: null } : { index: 0, text: words[i], finish_reason: null };
      res.write(event([delta]));
    }, added?.prefix, adapter);
    exportSpan(done);
    if (res.destroyed) return;
    res.write(event([kind === "chat" ? { index: 0, delta: {}, finish_reason: finishReason } : { index: 0, text: "", finish_reason: finishReason }]));
    if (streamOptions?.include_usage === true) res.write(event([], { usage }));
    res.end("data: [DONE]\n\n");
  }

  async function embeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const model = typeof body.model === "string" && body.model !== "" ? body.model : (opts.model ?? DEFAULT_MODEL);
    const inputs = Array.isArray(body.input) ? body.input.filter((x): x is string => typeof x === "string") : [typeof body.input === "string" ? body.input : ""];
    const promptTokens = inputs.reduce((n, s) => n + countTokens(s), 0);
    await generate(res, promptTokens, 0, () => undefined);
    if (res.destroyed) return;
    sendJson(res, 200, {
      object: "list",
      data: inputs.map((s, index) => ({ object: "embedding", index, embedding: Array.from({ length: 8 }, (_, k) => Number((((s.length + 1) * (k + 1)) % 97 / 97).toFixed(6))) })),
      model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    served.set(path, (served.get(path) ?? 0) + 1);
    const known = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models"];
    if (known.includes(path) && (opts.errorRate ?? 0) > 0 && random() < (opts.errorRate ?? 0)) {
      req.resume();
      if (random() < 0.5) sendJson(res, 429, { error: { message: "rate limit reached (simulated)", type: "rate_limit_error", code: "rate_limit_exceeded" } }, { "retry-after": "1" });
      else sendJson(res, 500, { error: { message: "internal error (simulated)", type: "server_error", code: null } });
      return;
    }
    if (req.method === "GET" && path === "/metrics" && opts.metrics) {
      const text = opts.metrics.render();
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": String(Buffer.byteLength(text)) });
      res.end(text);
      return;
    }
    if (req.method === "GET" && path === "/v1/models") {
      if (opts.loraModules !== undefined) sendJson(res, 200, loraModelList(opts.model ?? DEFAULT_MODEL, opts.maxModelLen ?? 8192, opts.loraModules));
      else sendJson(res, 200, { object: "list", data: [{ id: opts.model ?? DEFAULT_MODEL, object: "model", created: CREATED, owned_by: "tokentrace" }] });
      return;
    }
    if (req.method === "POST" && path === "/v1/chat/completions") return void completion(req, res, "chat");
    if (req.method === "POST" && path === "/v1/completions") return void completion(req, res, "text");
    if (req.method === "POST" && path === "/v1/embeddings") return void embeddings(req, res);
    req.resume();
    sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}`, type: "invalid_request_error", code: null } });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
