// Runs the leak corpus (leak-corpus.ts) through the real content module under the emulated Envoy
// host, exporting to a real OTLP receiver on 127.0.0.1, and reports every leak: a raw value, or 8
// characters of its secret part, in an exported span, a log line or a stat name. Each value goes
// into prompts and streamed completions of all five protocols, JSON-escaped in varied ways, the
// request and response bodies split inside it, and (the cut phase) placed so that
// spans.content.maxBytes cuts it; pseudonyms and placeholders alike. In-suite runs sample chunk and
// cut positions; `exhaustive` runs every chunk position and every cut position of every value.
import { createHmac } from "node:crypto";
import { ManualClock, type FilterVm } from "../host/index.js";
import { countingRandom, FILTER_CONTENT_WASM, loadFilter } from "../filter/support.js";
import { filler, generateCorpus, separator, type LeakValue } from "./leak-corpus.js";
import { mulberry32 } from "./mulberry32.js";
import { startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "./otlp-receiver.js";
import { startContentKeyServer, type ContentKeyServer } from "./content-key-server.js";

export type Protocol = "openai" | "responses" | "anthropic" | "tgi" | "kserve";
export const PROTOCOLS: Protocol[] = ["openai", "responses", "anthropic", "tgi", "kserve"];

export interface LeakRunOptions {
  seed: number;
  count: number;
  /** Every chunk and cut position of every value (else a spread sample of them). */
  exhaustive?: boolean;
  /** The module to run (default build/filter-content.wasm). */
  wasm?: string;
  /** Values per bulk exchange (per channel). */
  batch?: number;
  /** Stop after this many leaks (a mutant run needs one). */
  maxLeaks?: number;
  /** Only these protocols. */
  protocols?: Protocol[];
  /** Each value through one protocol and one mode, in turn (else every protocol, half the values in each mode). */
  spread?: boolean;
  progress?: (line: string) => void;
}

export interface Leak {
  kind: string;
  value: string;
  where: string;
  protocol: Protocol;
  excerpt: string;
}

export interface LeakReport {
  values: number;
  kinds: Record<string, number>;
  exchanges: number;
  spans: number;
  chunkPositions: number;
  cutPositions: number;
  replaced: number;
  leaks: Leak[];
  seconds: number;
}

/** A value placed in a text: where it begins and ends (UTF-16 indices). */
interface Placed {
  value: LeakValue;
  start: number;
  end: number;
}

/** A JSON string literal of `text` with some characters escaped by `mask` (\uXXXX, surrogate pairs, \/); `at[i]` is where text index i begins in it. */
function escapeJson(text: string, mask: number): { literal: string; at: number[] } {
  let out = '"';
  const at: number[] = [];
  const hex = (code: number): string => `\\u${code.toString(16).padStart(4, "0")}`;
  for (let i = 0; i < text.length; i++) {
    at.push(out.length);
    const code = text.charCodeAt(i);
    const c = text[i]!;
    const pick = ((i + 1) * 2654435761 + mask * 40503) >>> 0;
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      // a surrogate pair: escaped as two \u escapes, or left as it is, both halves alike
      const low = text.charCodeAt(i + 1);
      out += pick % 2 === 0 ? hex(code) + hex(low) : text.slice(i, i + 2);
      at.push(out.length);
      i++;
      continue;
    }
    if (c === '"' || c === "\\") out += `\\${c}`;
    else if (code < 0x20) out += c === "\n" ? "\\n" : c === "\t" ? (pick % 2 === 0 ? "\\t" : "\\u0009") : hex(code);
    else if (c === "/" && pick % 3 === 0) out += "\\/";
    else if (pick % 11 === mask % 11) out += hex(code);
    else out += c;
  }
  at.push(out.length);
  return { literal: out + '"', at };
}

/** A text of values with words and separators around them; where each value sits. */
function compose(rnd: () => number, values: LeakValue[]): { text: string; placed: Placed[] } {
  let text = "";
  const placed: Placed[] = [];
  for (const value of values) {
    text += filler(rnd, 1 + Math.floor(rnd() * 4)) + separator(rnd);
    placed.push({ value, start: text.length, end: text.length + value.text.length });
    text += value.text;
    text += separator(rnd) + "\n";
  }
  return { text, placed };
}

/** A request with `system` and `prompt` (JSON literals) in `protocol`'s shape; where each literal begins in it. */
function requestBody(protocol: Protocol, system: string, prompt: string): { body: string; systemAt: number; promptAt: number } {
  const shapes: Record<Protocol, Array<string | 0 | 1>> = {
    openai: ['{"model":"m","stream":true,"messages":[{"role":"system","content":', 0, '},{"role":"user","content":[{"type":"text","text":', 1, "}]}]}"],
    responses: ['{"model":"m","stream":true,"instructions":', 0, ',"input":', 1, "}"],
    anthropic: ['{"model":"m","stream":true,"system":', 0, ',"messages":[{"role":"user","content":', 1, "}]}"],
    tgi: ['{"parameters":{"max_new_tokens":20,"details":false,"note":', 0, '},"inputs":', 1, "}"],
    kserve: ['{"parameters":{"note":', 0, '},"text_input":', 1, "}"],
  };
  const parts = shapes[protocol];
  let body = "";
  let systemAt = -1;
  let promptAt = -1;
  for (const p of parts) {
    if (p === 0) {
      systemAt = body.length;
      body += system;
    } else if (p === 1) {
      promptAt = body.length;
      body += prompt;
    } else {
      body += p;
    }
  }
  return { body, systemAt, promptAt };
}

/** A streamed response of `deltas` (JSON literals) in `protocol`'s shape; where each delta begins in it. */
function responseBody(protocol: Protocol, deltas: string[]): { body: string; at: number[] } {
  let body = "";
  const at: number[] = [];
  deltas.forEach((d, i) => {
    const [before, after] = {
      openai: ['data: {"choices":[{"index":0,"delta":{"content":', "}}]}\n\n"],
      responses: ['event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":', "}\n\n"],
      anthropic: ['event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":', "}}\n\n"],
      tgi: [`data:{"index":${i + 1},"token":{"id":1,"text":`, ',"logprob":-0.1,"special":false}}\n\n'],
      kserve: ['data: {"model_name":"m","text_output":', "}\n\n"],
    }[protocol];
    body += before;
    at.push(body.length);
    body += d + after;
  });
  if (protocol === "openai") body += 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
  return { body, at };
}

/** Splits `text` (UTF-16) at `points` (UTF-16 indices) into UTF-8 chunks cut at those characters' first bytes. */
function chunksAt(text: string, points: number[]): Buffer[] {
  const cuts = [...new Set(points.filter((p) => p > 0 && p < text.length))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of cuts) {
    out.push(Buffer.from(text.slice(from, c)));
    from = c;
  }
  out.push(Buffer.from(text.slice(from)));
  return out;
}

/** Every 8 characters of `s`. */
function windows(s: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 8 <= s.length; i++) out.push(s.slice(i, i + 8));
  return out;
}

function grams(s: string): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + 8 <= s.length; i++) out.add(s.slice(i, i + 8));
  return out;
}

/** `s` with separators between letters and digits removed (a number as typed, compacted). */
const compactOf = (s: string): string => s.replace(/(?<=[0-9a-z])[ \-./()]{1,3}(?=[0-9a-z])/g, "");

/** Every string in a span (keys and values), decoded from OTLP/JSON. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      strings(v, out);
    }
  }
  return out;
}

/** The leaks of `values` in `text` (a span's strings, the logs, the stat names). */
export function leaksIn(text: string, values: LeakValue[], where: string, protocol: Protocol): Leak[] {
  const out: Leak[] = [];
  // A pseudonym is a keyed hash, not the value: its hex is no window of a secret.
  const lower = text.replace(/\[[A-Z_]+:[0-9a-f]{16}\]/g, "[P]").toLowerCase();
  const all = grams(lower);
  const compact = grams(compactOf(lower));
  for (const v of values) {
    let hit = text.includes(v.text) ? v.text : undefined;
    for (const w of windows(v.secret.toLowerCase())) {
      if (hit !== undefined) break;
      if (all.has(w)) hit = w;
    }
    for (const w of windows((v.compact ?? "").toLowerCase())) {
      if (hit !== undefined) break;
      if (compact.has(w)) hit = w;
    }
    if (hit !== undefined) {
      const at = lower.indexOf(hit.toLowerCase());
      out.push({ kind: v.kind, value: v.text, where, protocol, excerpt: lower.slice(Math.max(0, at - 40), at + 40) });
    }
  }
  return out;
}

/** spans.content.maxBytes in the cut phase. */
const CUT_WINDOW = 256;

const KEY = Buffer.from("leak-corpus-key-0123456789abcdef0123456789abcdef", "utf8");

/** Runs the corpus; resolves with what was exercised and every leak found. */
export async function runLeakCorpus(options: LeakRunOptions): Promise<LeakReport> {
  const started = Date.now();
  const values = generateCorpus(options.seed, options.count);
  const report: LeakReport = { values: values.length, kinds: {}, exchanges: 0, spans: 0, chunkPositions: 0, cutPositions: 0, replaced: 0, leaks: [], seconds: 0 };
  for (const v of values) report.kinds[v.kind] = (report.kinds[v.kind] ?? 0) + 1;
  const receiver = await startOtlpReceiver();
  const keys: ContentKeyServer = await startContentKeyServer();
  keys.keys.set("v1", KEY);
  keys.current = "v1";
  const maxLeaks = options.maxLeaks ?? Number.POSITIVE_INFINITY;
  try {
    const protocols = options.protocols ?? PROTOCOLS;
    for (const [p, protocol] of protocols.entries()) {
      for (const pseudonyms of [false, true]) {
        const mode = pseudonyms ? 1 : 0;
        const half = values.filter((_, i) => (options.spread === true ? i % protocols.length === p && Math.floor(i / protocols.length) % 2 === mode : i % 2 === mode));
        const rnd = mulberry32(options.seed * 31 + p * 7 + (pseudonyms ? 1 : 0));
        const run = new ProtocolRun(protocol, pseudonyms, receiver, keys, report, options.wasm ?? FILTER_CONTENT_WASM);
        await run.start();
        // Bulk: every value in a prompt and in a completion, split inside it, escaped, nothing cut.
        const batch = options.batch ?? 20;
        for (let i = 0; i < half.length && report.leaks.length < maxLeaks; i += batch) {
          const slice = half.slice(i, i + batch);
          await run.bulk(rnd, slice, (i / batch) | 0, [...slice].reverse());
        }
        // The cut: each value where spans.content.maxBytes (CUT_WINDOW) cuts it, in the prompt and the completion.
        for (let i = 0; i < half.length && report.leaks.length < maxLeaks; i++) {
          const v = half[i]!;
          const size = Buffer.byteLength(v.text);
          // The window is 256 bytes: it can cut a value at most 256 bytes into it (from its first byte on).
          const reach = Math.min(size, CUT_WINDOW);
          const positions = options.exhaustive ? Array.from({ length: reach + 1 }, (_, k) => k) : [(i * 13 + p * 7) % (reach + 1)];
          for (const k of positions) {
            if (report.leaks.length >= maxLeaks) break;
            await run.cut(rnd, v, half[(i + 1) % half.length]!, k, options.exhaustive === true);
          }
        }
        await run.finish();
        options.progress?.(`${protocol} (${pseudonyms ? "pseudonyms" : "placeholders"}): ${report.exchanges} exchanges, ${report.spans} spans, ${report.leaks.length} leaks so far`);
      }
    }
  } finally {
    await receiver.close();
    await keys.close();
  }
  report.seconds = (Date.now() - started) / 1000;
  return report;
}

/** One VM for one protocol and one mode; exchanges go through it and their spans are checked. */
class ProtocolRun {
  private vm!: FilterVm;
  private clock = new ManualClock(1_800_000_000_000_000_000n);
  private pending = new Map<string, LeakValue[]>();
  private next = 0;

  constructor(
    private readonly protocol: Protocol,
    private readonly pseudonyms: boolean,
    private readonly receiver: OtlpReceiver,
    private readonly keys: ContentKeyServer,
    private readonly report: LeakReport,
    private readonly wasm: string,
  ) {}

  async start(maxBytes = 65536): Promise<void> {
    const content = { enabled: true, maxBytes, ...(this.pseudonyms ? { pseudonyms: { keySource: { cluster: "cp", workload: "llm.chat" } } } : {}) };
    this.vm = await loadFilter({
      wasm: this.wasm, clock: this.clock, random: countingRandom(),
      config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", flushIntervalMs: 1000, batchSize: 200, maxBufferedSpans: 100000, content } },
      clusters: { otel: this.receiver.url, cp: this.keys.url }, maxLogEntries: 10000, maxRetainedSamples: 0,
    });
    if (!this.vm.configureAccepted) throw new Error(`the content module refused the corpus configuration: ${this.vm.logs.map((l) => l.message).join("; ")}`);
    this.vm.tick();
    await this.vm.settle();
    if (this.pseudonyms && this.keys.requests.length === 0) throw new Error("no key was fetched");
  }

  private path(): string {
    return { openai: "/v1/chat/completions", responses: "/v1/responses", anthropic: "/v1/messages", tgi: "/generate_stream", kserve: "/v2/models/m/generate_stream" }[this.protocol];
  }

  /** One exchange: the request in `requestChunks`, the response in `responseChunks`; its values are checked when its span arrives. */
  private async exchange(requestChunks: Buffer[], responseChunks: Buffer[], values: LeakValue[]): Promise<void> {
    const id = `leak-${this.next++}`;
    this.pending.set(id, values);
    const s = this.vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", this.path()], [":authority", "llm.svc"], ["x-token-trace-id", id]], false);
    requestChunks.forEach((c, i) => s.requestBody(c, i === requestChunks.length - 1));
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    responseChunks.forEach((c, i) => s.responseBody(c, i === responseChunks.length - 1));
    s.end();
    this.seen.push(...values);
    this.report.exchanges++;
    this.report.chunkPositions += requestChunks.length + responseChunks.length - 2;
    if (this.pending.size >= 200) await this.drain();
  }

  /** `prompt` and `completion` values each in a text, split inside every value. */
  async bulk(rnd: () => number, prompt: LeakValue[], round: number, completion: LeakValue[]): Promise<void> {
    const p = compose(rnd, prompt);
    const c = compose(rnd, completion);
    const mask = round * 5 + 1;
    const lit = escapeJson(p.text, mask);
    const { body, promptAt } = requestBody(this.protocol, escapeJson("You answer briefly.", mask).literal, lit.literal);
    // A chunk boundary inside every value, at a different place for each.
    const requestCuts = p.placed.map((v, i) => promptAt + lit.at[v.start + ((i * 7 + round) % Math.max(1, v.end - v.start))]!);
    // Deltas split inside every completion value, and the byte stream too.
    const deltaCuts = c.placed.map((v, i) => v.start + ((i * 5 + round + 1) % Math.max(1, v.end - v.start)));
    const pieces = splitText(c.text, deltaCuts).map((t, i) => escapeJson(t, mask + i).literal);
    const response = responseBody(this.protocol, pieces);
    const responseCuts = response.at.map((a, i) => a + (i % 3) + 1);
    await this.exchange(chunksAt(body, requestCuts), chunksAt(response.body, responseCuts), [...prompt, ...completion]);
  }

  /** `inPrompt` and `inCompletion` placed so the window (maxBytes) cuts each `offset` bytes into it. */
  async cut(rnd: () => number, inPrompt: LeakValue, inCompletion: LeakValue, offset: number, everyChunk: boolean): Promise<void> {
    if (this.currentMaxBytes !== CUT_WINDOW) {
      await this.finish();
      await this.start(CUT_WINDOW);
      this.currentMaxBytes = CUT_WINDOW;
    }
    // ASCII words and spaces up to the byte the value starts at (a byte count, so the cut falls `at` bytes into it);
    // OpenAI's system message is the input channel's first part ("S", one byte).
    const place = (v: LeakValue, at: number, before: number): { text: string; start: number; end: number } => {
      const lead = CUT_WINDOW - before - Math.min(at, Buffer.byteLength(v.text));
      let head = "";
      if (lead > 0) {
        while (head.length < lead) head += filler(rnd, 1).replace(/[^\x20-\x7e]/g, "x") + " ";
        head = head.slice(0, lead - 1) + " ";
      }
      return { text: head + v.text + " " + filler(rnd, 6), start: head.length, end: head.length + v.text.length };
    };
    const p = place(inPrompt, offset, this.protocol === "openai" ? 1 : 0);
    const c = place(inCompletion, (offset * 3 + 1) % (Buffer.byteLength(inCompletion.text) + 1), 0);
    const lit = escapeJson(p.text, offset + 3);
    const { body, promptAt } = requestBody(this.protocol, '"S"', lit.literal);
    const inside = (start: number, end: number, k: number): number => start + (end > start ? k % (end - start) : 0);
    const requestCut = promptAt + lit.at[inside(p.start, p.end, everyChunk ? offset : offset * 7 + 1)]!;
    const pieces = splitText(c.text, [inside(c.start, c.end, offset + 2)]).map((t, i) => escapeJson(t, offset + i).literal);
    const response = responseBody(this.protocol, pieces);
    await this.exchange(chunksAt(body, [requestCut]), chunksAt(response.body, [response.at[0]! + 2 + (offset % 5)]), [inPrompt, inCompletion]);
    this.report.cutPositions += 2;
  }

  private currentMaxBytes = 65536;

  /** Exports what is buffered and checks every span that came back. */
  async drain(): Promise<void> {
    this.vm.tick();
    await this.vm.settle();
    while (this.vm.pendingHttpCalls() > 0) await this.vm.settle();
    for (const span of this.receiver.spans.splice(0)) this.check(span);
  }

  private check(span: OtlpSpan): void {
    this.report.spans++;
    const id = span.attributes.find((a) => a.key === "tokentrace.token_trace_id")?.value.stringValue as string | undefined;
    const values = id === undefined ? undefined : this.pending.get(id);
    if (values === undefined) throw new Error(`a span for no exchange: ${id}`);
    this.pending.delete(id!);
    const text = strings(span).join("\u0000");
    this.report.replaced += (text.match(/\[(EMAIL|PHONE|PAYMENT_CARD|IP_ADDRESS|NATIONAL_ID|CREDENTIAL|IBAN|TRUNCATED)[\]:]/g) ?? []).length;
    this.report.leaks.push(...leaksIn(text, values, `span ${id}`, this.protocol));
  }

  async finish(): Promise<void> {
    await this.drain();
    if (this.pending.size > 0) throw new Error(`${this.pending.size} exchanges exported no span`);
    // Logs and stat names of the whole VM, against every value it saw.
    const everything = [...this.vm.logs.map((l) => l.message), ...this.vm.stats.names()].join("\n");
    this.report.leaks.push(...leaksIn(everything, this.seen, "logs and stat names", this.protocol));
    this.seen = [];
  }

  private seen: LeakValue[] = [];
}

/** Splits `text` at UTF-16 indices into pieces (never inside a surrogate pair). */
function splitText(text: string, points: number[]): string[] {
  const cuts = [...new Set(points.map((p) => (p > 0 && p < text.length && text.charCodeAt(p) >= 0xdc00 && text.charCodeAt(p) <= 0xdfff ? p + 1 : p)).filter((p) => p > 0 && p < text.length))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of cuts) {
    out.push(text.slice(from, c));
    from = c;
  }
  out.push(text.slice(from));
  return out;
}

/** HMAC of a value as the module keys pseudonyms, for reports that want to show one. */
export function pseudonymOf(type: number, normal: string): string {
  return createHmac("sha256", KEY).update(Buffer.concat([Buffer.from([type]), Buffer.from(normal, "utf8")])).digest("hex").slice(0, 16);
}
