// The replay's traffic: a seeded, simulated-time load through the demo's engine (test/demo/engine.ts,
// vLLM V1 scheduling, KV cache, prefix caching, speculative decoding) with what production traffic
// has and a static threshold gets wrong: three routes of different shapes over two models (short
// chats, retrieval prompts of thousands of tokens, long summaries), bursts of two to three times the
// base rate, a GPU that slows down over twenty minutes and recovers, and 1-2% errors (429s, 500s,
// 503s, clients that go away). Each model runs on several replicas behind a least-request balancer
// (Envoy's LEAST_REQUEST picks the less loaded of two at random). The filter is pure telemetry, so
// the traffic does not depend on it: it is generated once and replayed through each filter setup.
import { Engine, type EngineParams } from "../../../demo/engine.js";
import { mulberry32 } from "../../../support/mulberry32.js";
import { EventClock } from "./event-clock.js";

/** How a request ended. */
export type Outcome = "ok" | "429" | "500" | "503" | "reset_before_response" | "reset_during_response";

/** One request as the proxy sees it, times in ms of simulated time from the start of the replay. */
export interface RequestScript {
  id: number;
  route: string;
  model: string;
  path: string;
  stream: boolean;
  startMs: number;
  /** Streams: when the response began with its first token; undefined otherwise. */
  firstTokenMs: number | undefined;
  endMs: number;
  /** The response status; 0 when the stream ended before any response. */
  status: number;
  outcome: Outcome;
  promptTokens: number;
  outputTokens: number;
  replica: string;
}

/** A route's share of the traffic and the shape of its requests. */
interface RouteShape {
  route: string;
  share: number;
  /** Model by cumulative share. */
  models: Array<[string, number]>;
  path: string;
  streamShare: number;
  promptTokens: [number, number];
  /** Median completion tokens (log-normal, sigma 0.6). */
  outputMedian: number;
  outputMax: number;
  /** A system prompt shared by the route's requests (prefix cache), tokens. */
  systemPromptTokens: number;
}

const ROUTES: RouteShape[] = [
  { route: "chat", share: 0.6, models: [["llama-3.1-8b", 0.7], ["llama-3.1-70b", 1]], path: "/v1/chat/completions", streamShare: 0.85, promptTokens: [50, 1200], outputMedian: 120, outputMax: 1000, systemPromptTokens: 600 },
  { route: "rag", share: 0.28, models: [["llama-3.1-8b", 1]], path: "/v1/chat/completions", streamShare: 0.7, promptTokens: [2500, 7000], outputMedian: 90, outputMax: 600, systemPromptTokens: 300 },
  { route: "summarize", share: 0.12, models: [["llama-3.1-70b", 1]], path: "/v1/completions", streamShare: 0.2, promptTokens: [1000, 4000], outputMedian: 250, outputMax: 800, systemPromptTokens: 0 },
];

/** Replicas per model and their engines (a small and a large model, vLLM-like costs). */
const MODELS: Record<string, { replicas: number; engine: Partial<EngineParams> }> = {
  "llama-3.1-8b": { replicas: 3, engine: { maxNumSeqs: 32, maxNumBatchedTokens: 8192, hostOverheadMs: 6, stepBaseMs: 14, decodeMsPerSeq: 0.6, prefillMsPerToken: 0.02 } },
  "llama-3.1-70b": { replicas: 2, engine: { maxNumSeqs: 32, maxNumBatchedTokens: 8192, hostOverheadMs: 8, stepBaseMs: 35, decodeMsPerSeq: 1.2, prefillMsPerToken: 0.06, draftAcceptance: 0.8 } },
};

/** What the traffic looks like; every figure has a default. */
export interface TrafficOptions {
  seed: number;
  /** Requests to generate. */
  requests: number;
  /** Requests per second outside bursts. */
  baseRps: number;
  /** Mean seconds between the starts of bursts, and their length and rate multiplier ranges. */
  burstEverySeconds: number;
  burstSeconds: [number, number];
  burstFactor: [number, number];
  /** The degrading GPU: which replica, when it starts (s), ramp up, hold, ramp down (s), and how many times slower at worst. */
  degrading: { replica: string; startSeconds: number; rampSeconds: number; holdSeconds: number; recoverSeconds: number; factor: number };
  /** Error shares (of all requests). */
  errors: { status429: number; status500: number; status503: number; clientGone: number };
  /** Clients give up (reset) after this long. */
  clientTimeoutMs: number;
}

export const DEFAULT_TRAFFIC: TrafficOptions = {
  seed: 24,
  requests: 100_000,
  baseRps: 11,
  burstEverySeconds: 480,
  burstSeconds: [20, 60],
  burstFactor: [2, 3],
  degrading: { replica: "llama-3.1-8b-0", startSeconds: 2400, rampSeconds: 1200, holdSeconds: 600, recoverSeconds: 300, factor: 2.5 },
  errors: { status429: 0.005, status500: 0.004, status503: 0.002, clientGone: 0.003 },
  clientTimeoutMs: 120_000,
};

/** The generated traffic and what the load looked like. */
export interface Traffic {
  requests: RequestScript[];
  /** Simulated seconds from the first arrival to the last end. */
  seconds: number;
  /** Bursts as [start, end] seconds. */
  bursts: Array<[number, number]>;
}

interface Replica {
  name: string;
  engine: Engine;
  inFlight: number;
  base: EngineParams;
}

/** Generates the traffic for `options` (deterministic for a seed). */
export function generateTraffic(partial: Partial<TrafficOptions> = {}): Traffic {
  const o: TrafficOptions = { ...DEFAULT_TRAFFIC, ...partial };
  const random = mulberry32(o.seed);
  const clock = new EventClock();
  const replicas = new Map<string, Replica[]>();
  for (const [model, m] of Object.entries(MODELS)) {
    replicas.set(
      model,
      Array.from({ length: m.replicas }, (_, i) => {
        const engine = new Engine(m.engine, clock, mulberry32(o.seed * 31 + i + model.length));
        return { name: `${model}-${i}`, engine, inFlight: 0, base: { ...engine.currentParams } };
      }),
    );
  }
  const requests: RequestScript[] = [];
  const bursts: Array<[number, number]> = [];
  // Bursts: exponential gaps between starts.
  let burstStart = -Math.log(1 - random()) * o.burstEverySeconds;
  let burstEnd = burstStart + o.burstSeconds[0] + random() * (o.burstSeconds[1] - o.burstSeconds[0]);
  let burstFactor = o.burstFactor[0] + random() * (o.burstFactor[1] - o.burstFactor[0]);
  const rateAt = (s: number): number => {
    while (s > burstEnd) {
      bursts.push([burstStart, burstEnd]);
      burstStart = burstEnd + -Math.log(1 - random()) * o.burstEverySeconds;
      burstEnd = burstStart + o.burstSeconds[0] + random() * (o.burstSeconds[1] - o.burstSeconds[0]);
      burstFactor = o.burstFactor[0] + random() * (o.burstFactor[1] - o.burstFactor[0]);
    }
    return s >= burstStart ? o.baseRps * burstFactor : o.baseRps;
  };
  // The degrading GPU: its step costs grow to `factor` times, hold, and come back.
  const d = o.degrading;
  const slowdownAt = (s: number): number => {
    const t = s - d.startSeconds;
    if (t <= 0) return 1;
    if (t < d.rampSeconds) return 1 + ((d.factor - 1) * t) / d.rampSeconds;
    if (t < d.rampSeconds + d.holdSeconds) return d.factor;
    const back = t - d.rampSeconds - d.holdSeconds;
    return back < d.recoverSeconds ? d.factor - ((d.factor - 1) * back) / d.recoverSeconds : 1;
  };
  const degrading = [...replicas.values()].flat().find((r) => r.name === d.replica);
  if (degrading === undefined) throw new Error(`degrading.replica ${d.replica} is not a replica`);
  const adjustGpu = (): void => {
    const f = slowdownAt(clock.now() / 1000);
    const b = degrading.base;
    degrading.engine.setParams({ stepBaseMs: b.stepBaseMs * f, decodeMsPerSeq: b.decodeMsPerSeq * f, prefillMsPerToken: b.prefillMsPerToken * f });
    if (requests.length < o.requests) clock.setTimeout(adjustGpu, 5000);
  };
  adjustGpu();

  const pick = <T>(items: Array<[T, number]>): T => {
    const r = random();
    for (const [item, upTo] of items) if (r < upTo) return item;
    return items[items.length - 1]![0];
  };
  const routeTable: Array<[RouteShape, number]> = [];
  let cumulative = 0;
  for (const r of ROUTES) routeTable.push([r, (cumulative += r.share)]);
  const logNormal = (median: number, sigma: number): number => {
    // Box-Muller from two uniforms of the seeded source.
    const u = Math.max(1e-12, random());
    const v = random();
    return median * Math.exp(sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
  };
  const e = o.errors;
  const errorTable: Array<[Outcome | "ok", number]> = [
    ["429", e.status429],
    ["500", e.status429 + e.status500],
    ["503", e.status429 + e.status500 + e.status503],
    ["reset_during_response", e.status429 + e.status500 + e.status503 + e.clientGone],
    ["ok", 1],
  ];

  const arrive = (): void => {
    const id = requests.length;
    const shape = pick(routeTable);
    const model = pick(shape.models);
    const stream = random() < shape.streamShare;
    const promptTokens = Math.round(shape.promptTokens[0] + random() * (shape.promptTokens[1] - shape.promptTokens[0]));
    const outputTokens = Math.max(1, Math.min(shape.outputMax, Math.round(logNormal(shape.outputMedian, 0.6))));
    const outcome = pick(errorTable);
    const startMs = clock.now();
    const script: RequestScript = { id, route: shape.route, model, path: shape.path, stream, startMs, firstTokenMs: undefined, endMs: startMs, status: 200, outcome: "ok", promptTokens: promptTokens + shape.systemPromptTokens, outputTokens, replica: "" };
    requests.push(script);
    if (outcome === "429" || outcome === "503") {
      // Rejected at once: the server's rate limiter, or no healthy upstream (Envoy's local 503).
      script.outcome = outcome;
      script.status = Number(outcome);
      script.endMs = startMs + 1 + random() * 4;
      script.outputTokens = 0;
    } else {
      // Least request: the less loaded of two replicas drawn at random.
      const pool = replicas.get(model)!;
      const a = pool[Math.floor(random() * pool.length)]!;
      const b = pool[Math.floor(random() * pool.length)]!;
      const replica = b.inFlight < a.inFlight ? b : a;
      script.replica = replica.name;
      replica.inFlight++;
      // A client that goes away does so after a share of its tokens (or while it waits).
      const goneAfter = outcome === "reset_during_response" ? Math.floor(random() * outputTokens) : -1;
      const fails = outcome === "500";
      let generated = 0;
      let finished = false;
      const finish = (): void => {
        if (finished) return;
        finished = true;
        replica.inFlight--;
        script.endMs = clock.now();
        clock.clearTimeout(timeout);
      };
      const timeout = clock.setTimeout(() => {
        if (finished) return;
        handle.cancel();
        script.outcome = script.firstTokenMs === undefined && !stream ? "reset_before_response" : script.firstTokenMs === undefined ? "reset_before_response" : "reset_during_response";
        script.status = script.outcome === "reset_before_response" ? 0 : 200;
        script.outputTokens = generated;
        finish();
      }, o.clientTimeoutMs);
      const handle = replica.engine.submit({
        promptTokens: script.promptTokens,
        prefix: shape.systemPromptTokens > 0 ? { id: shape.route, tokens: shape.systemPromptTokens } : undefined,
        outputTokens: fails ? 0 : outputTokens,
        onToken: () => {
          generated++;
          if (generated === 1 && stream) script.firstTokenMs = clock.now();
          if (generated - 1 === goneAfter && !finished) {
            handle.cancel();
            script.outcome = stream && goneAfter > 0 ? "reset_during_response" : "reset_before_response";
            script.status = script.outcome === "reset_before_response" ? 0 : 200;
            if (script.outcome === "reset_before_response") script.firstTokenMs = undefined;
            script.outputTokens = generated;
            finish();
          }
        },
        onDone: () => {
          if (finished) return;
          if (fails) {
            // The engine failed the request after its prefill: a 500 with an error body.
            script.outcome = "500";
            script.status = 500;
            script.outputTokens = 0;
          }
          finish();
        },
      });
    }
    if (requests.length < o.requests) clock.setTimeout(arrive, (-Math.log(1 - random()) / rateAt(clock.now() / 1000)) * 1000);
  };
  arrive();
  clock.run();
  for (const r of requests) r.endMs = Math.max(r.endMs, r.startMs);
  const end = requests.reduce((m, r) => Math.max(m, r.endMs), 0);
  return { requests, seconds: end / 1000, bursts };
}
