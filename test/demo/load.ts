// The demo's load generator: OpenAI-style requests through the proxy at a target rate (exponential
// gaps, like independent users), a mix of streaming and non-streaming chat, text completions and
// embeddings, and the figures its one-line progress display shows. With LoRA adapters, a share of the
// chat and text completions names an adapter instead of the base model.
import { realClock, type EngineClock } from "./engine.js";

/** A LoRA adapter's share of the chat and text completions, and the context its application adds to each prompt. */
export interface AdapterShare {
  model: string;
  /** 0..1 of the completions; the shares of all adapters add up to at most 1, the rest go to the base model. */
  share: number;
  /** Characters of context added before each prompt (a text-to-SQL application's rows retrieved for the question), default none. */
  contextChars?: number;
}

/** Options of the load generator. */
export interface LoadOptions {
  /** Proxy base URL. */
  url: string;
  /** Target requests per second (> 0). */
  rps: number;
  /** Most requests in flight at once; further ones are skipped (counted), default 64. */
  maxInFlight?: number;
  random?: () => number;
  /** Monotonic ms clock for the rate window, default performance.now. */
  nowMs?: () => number;
  /** The gap timer, default the global one (a simulated stack passes its clock). */
  timers?: EngineClock;
  /** LoRA adapters and their shares; absent: every request names the base model. */
  adapters?: readonly AdapterShare[];
}

/** What the progress line shows. */
export interface LoadProgress {
  sent: number;
  /** Non-2xx answers and failed connections. */
  errors: number;
  inFlight: number;
  /** Requests completed per second over the last RATE_WINDOW_MS. */
  currentRps: number;
  /** Requests not sent because maxInFlight were in flight. */
  skipped: number;
}

/** A running load generator. */
export interface Load {
  progress(): LoadProgress;
  /** Stops sending and aborts what is in flight. */
  stop(): Promise<void>;
}

const RATE_WINDOW_MS = 5000;
const PROMPTS = ["Say hello", "Summarise the plot of Hamlet in two sentences.", "Write a haiku about GPUs", "What is the capital of France?", "Explain TTFT to a new engineer in plain words, with an example."];

/** The request the k-th draw picks: 55% streaming chat, 20% chat, 15% completions, 10% embeddings. */
export function pickRequest(r: number, promptIndex: number): { path: string; body: Record<string, unknown> } {
  const prompt = PROMPTS[promptIndex % PROMPTS.length]!;
  const model = "tokentrace-sim-1";
  const maxTokens = 8 + (promptIndex % 5) * 8;
  if (r < 0.55) return { path: "/v1/chat/completions", body: { model, stream: true, stream_options: { include_usage: true }, max_tokens: maxTokens, messages: [{ role: "user", content: prompt }] } };
  if (r < 0.75) return { path: "/v1/chat/completions", body: { model, max_tokens: maxTokens, messages: [{ role: "user", content: prompt }] } };
  if (r < 0.9) return { path: "/v1/completions", body: { model, max_tokens: maxTokens, prompt } };
  return { path: "/v1/embeddings", body: { model, input: prompt } };
}

/**
 * The context an adapter's application adds to request `seq`: `chars` characters of table rows
 * retrieved for that question. They differ from the first line on, so no prefix cache can hold them:
 * every call prefills them.
 */
export function adapterContext(chars: number, seq: number): string {
  const lines = [`-- orders retrieved for question ${seq}`];
  let length = lines[0]!.length;
  for (let row = 0; length < chars; row++) {
    const line = `(${seq * 1000 + row}, ${(seq * 7 + row * 13) % 9973}, '2026-01-${String(1 + (row % 28)).padStart(2, "0")}', ${((seq + row) % 500) + 0.9})`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n").slice(0, chars);
}

/**
 * The request `pickRequest` made for request `seq`, sent to an adapter when draw `r` (0..1) falls in
 * one's share: chat and text completions only (embeddings stay on the base model), the adapter's
 * context before the prompt. The body is a copy; `model` keeps its place, first.
 */
export function withAdapter(request: { path: string; body: Record<string, unknown> }, r: number, adapters: readonly AdapterShare[], seq: number): { path: string; body: Record<string, unknown> } {
  if (request.path === "/v1/embeddings") return request;
  let below = 0;
  const adapter = adapters.find((a) => r < (below += a.share));
  if (!adapter) return request;
  const body: Record<string, unknown> = { ...request.body, model: adapter.model };
  const context = adapter.contextChars ? `${adapterContext(adapter.contextChars, seq)}\n` : "";
  if (context !== "" && Array.isArray(body.messages)) body.messages = (body.messages as { role: string; content: string }[]).map((m) => ({ ...m, content: `${context}${m.content}` }));
  else if (context !== "" && typeof body.prompt === "string") body.prompt = `${context}${body.prompt}`;
  return { path: request.path, body };
}

/** The progress line (no newline; the caller redraws it with \r). */
export function formatProgress(p: LoadProgress): string {
  return `load: ${p.sent} sent, ${p.errors} errors, ${p.inFlight} in flight, ${p.currentRps.toFixed(1)} rps`;
}

/** Starts sending; the first request leaves at once. */
export function startLoad(opts: LoadOptions): Load {
  if (!(opts.rps > 0)) throw new Error(`load rps must be > 0, got ${opts.rps}`);
  const random = opts.random ?? Math.random;
  const now = opts.nowMs ?? (() => performance.now());
  const maxInFlight = opts.maxInFlight ?? 64;
  const done: number[] = [];
  const inFlight = new Set<AbortController>();
  const stats = { sent: 0, errors: 0, skipped: 0 };
  let stopped = false;
  let timer: unknown;
  const timers = opts.timers ?? realClock;

  const one = async (): Promise<void> => {
    if (inFlight.size >= maxInFlight) {
      stats.skipped++;
      return;
    }
    const picked = pickRequest(random(), stats.sent);
    // A second draw only with adapters, so without them the sequence of requests is what it was.
    const { path, body } = opts.adapters && opts.adapters.length > 0 ? withAdapter(picked, random(), opts.adapters, stats.sent) : picked;
    const abort = new AbortController();
    inFlight.add(abort);
    stats.sent++;
    try {
      const res = await fetch(`${opts.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: abort.signal });
      await res.arrayBuffer();
      if (res.status < 200 || res.status > 299) stats.errors++;
    } catch {
      if (!stopped) stats.errors++;
    } finally {
      inFlight.delete(abort);
      done.push(now());
    }
  };

  const schedule = (): void => {
    if (stopped) return;
    // Exponential inter-arrival times: a Poisson process at the target rate.
    const gapMs = (-Math.log(1 - random()) / opts.rps) * 1000;
    timer = timers.setTimeout(() => {
      void one();
      schedule();
    }, gapMs);
  };
  void one();
  schedule();

  return {
    progress() {
      const cutoff = now() - RATE_WINDOW_MS;
      while (done.length > 0 && done[0]! < cutoff) done.shift();
      return { ...stats, inFlight: inFlight.size, currentRps: done.length / (RATE_WINDOW_MS / 1000) };
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      for (const a of inFlight) a.abort();
      while (inFlight.size > 0) await new Promise((r) => setImmediate(r));
    },
  };
}
