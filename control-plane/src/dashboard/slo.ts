// The dashboard's SLO view: per route and model, the objective in force, goodput, the 30-day error
// budget left and the fast and slow burn rates, read as instant queries (GET /api/v1/query) of the
// series istio/observability/prometheus-rules.yaml records (groups tokentrace.slo-objectives and
// tokentrace.slo, docs/slo.md). The answers' shape is Prometheus's (prometheus/prometheus@003276ee
// web/api/v1/api.go: query(), queryData with resultType "vector"; promql/value.go Sample marshals
// as {"metric": {...}, "value": [unixSeconds, "string"]}). Like the alert list (alerts.ts) every
// read is bounded in time (one deadline for all its queries), in bytes (each answer) and in rows,
// failures are typed, and reads are shared for cacheMs.
import { boundedText, readBounded } from "./alerts.js";

/** Where and how to read; the `alerts` section's Prometheus and bounds (the same source). */
export interface SloReaderOptions {
  url: string;
  /** Whole read: every query, connect, answer and body. */
  timeoutMs: number;
  /** Largest answer read per query; a larger one is refused, not truncated. */
  maxBytes: number;
  /** Most rows kept per SLI (worst fast burn first); the rest are counted in `truncated`. */
  maxRows: number;
  cacheMs: number;
  fetch?: typeof fetch;
  now?: () => number;
}

/** The burn-rate windows shown: the page alert's long window and the ticket's (SRE workbook, Alerting on SLOs). */
export const FAST_BURN = { window: "1h", threshold: 14.4 } as const;
export const SLOW_BURN = { window: "1d", threshold: 3 } as const;
/** The goodput window shown. */
export const GOODPUT_WINDOW = "1h";

/** One route's (TTFT: route and model's) SLO figures; null where Prometheus has no value yet. */
export interface SloRow {
  namespace: string;
  route: string;
  /** TTFT only: the model. */
  model?: string;
  objective: number | null;
  goodput: number | null;
  budgetLeft: number | null;
  burnFast: number | null;
  burnSlow: number | null;
}

export type SloFailure = "timeout" | "unreachable" | "http_status" | "too_large" | "invalid" | "error_status";

export type SloRead =
  | { ok: true; ttft: SloRow[]; errors: SloRow[]; truncated: number; readAtMs: number }
  | { ok: false; reason: SloFailure; detail: string; readAtMs: number };

type Measure = Exclude<keyof SloRow, "namespace" | "route" | "model">;
const SLIS = {
  ttft: { prefix: "namespace_route_model:tokentrace_slo_ttft", keys: ["namespace", "route", "model"] },
  errors: { prefix: "namespace_route:tokentrace_slo_errors", keys: ["namespace", "route"] },
} as const;
/** Each figure's recorded series, after the SLI's prefix. */
const MEASURES: Record<Measure, string> = {
  objective: "_objective:ratio",
  goodput: `_goodput:ratio_rate${GOODPUT_WINDOW}`,
  budgetLeft: "_error_budget_remaining:ratio_rate30d",
  burnFast: `_burn_rate:rate${FAST_BURN.window}`,
  burnSlow: `_burn_rate:rate${SLOW_BURN.window}`,
};

/** The instant queries of one read: every recorded series the view shows, by SLI and figure. */
export function sloQueries(): { sli: keyof typeof SLIS; measure: Measure; query: string }[] {
  return (Object.keys(SLIS) as (keyof typeof SLIS)[]).flatMap((sli) => (Object.keys(MEASURES) as Measure[]).map((measure) => ({ sli, measure, query: `${SLIS[sli].prefix}${MEASURES[measure]}` })));
}

const FAILURE_DETAIL_BYTES = 200;
const LABEL_BYTES = 256;
type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === "object" && v !== null && !Array.isArray(v);

/** The samples of one instant-vector answer as [labels, value]; null when it is not one. */
function vectorOf(body: unknown): { metric: Plain; value: number }[] | null {
  if (!isPlain(body) || body.status !== "success" || !isPlain(body.data) || body.data.resultType !== "vector" || !Array.isArray(body.data.result)) return null;
  const out: { metric: Plain; value: number }[] = [];
  for (const s of body.data.result) {
    if (!isPlain(s) || !isPlain(s.metric) || !Array.isArray(s.value) || typeof s.value[1] !== "string") return null;
    out.push({ metric: s.metric, value: Number(s.value[1]) });
  }
  return out;
}

/** Reads the SLO figures on demand, one read at a time, the last kept for `cacheMs`. */
export class PrometheusSloReader {
  private last: SloRead | undefined;
  private inflight: Promise<SloRead> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly options: SloReaderOptions,
    private readonly onFailure: (reason: SloFailure) => void = () => undefined,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** The query API's address (for the page's "from" line). */
  get queryUrl(): string {
    return new URL("/api/v1/query", this.options.url).toString();
  }

  /** The current figures: the last read when fresh, else a new one (shared with concurrent callers). */
  async read(): Promise<SloRead> {
    if (this.last && this.now() - this.last.readAtMs < this.options.cacheMs) return this.last;
    this.inflight ??= this.readOnce().then((r) => {
      this.last = r;
      this.inflight = undefined;
      if (!r.ok) this.onFailure(r.reason);
      return r;
    });
    return this.inflight;
  }

  private async readOnce(): Promise<SloRead> {
    const fail = (reason: SloFailure, detail: string): SloRead => ({ ok: false, reason, detail: boundedText(detail, FAILURE_DETAIL_BYTES), readAtMs: this.now() });
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const queries = sloQueries();
    const answers = await Promise.all(queries.map((q) => this.query(q.query, signal).catch((error: unknown) => ({ error }))));
    const rows = { ttft: new Map<string, SloRow>(), errors: new Map<string, SloRow>() };
    for (const [i, answer] of answers.entries()) {
      if ("error" in answer) {
        if (signal.aborted) return fail("timeout", `no answer within ${this.options.timeoutMs} ms`);
        return fail("unreachable", String((answer.error as Error).cause ?? answer.error));
      }
      if (answer.bytes === null) return fail("too_large", `answer over ${this.options.maxBytes} bytes`);
      let body: unknown;
      try {
        body = JSON.parse(answer.bytes.toString("utf8"));
      } catch {
        return fail(answer.status === 200 ? "invalid" : "http_status", `HTTP ${answer.status}: not JSON`);
      }
      if (isPlain(body) && body.status === "error") return fail("error_status", `HTTP ${answer.status}: ${typeof body.error === "string" ? body.error : "error"}`);
      if (answer.status !== 200) return fail("http_status", `HTTP ${answer.status}`);
      const samples = vectorOf(body);
      if (samples === null) return fail("invalid", "not an instant-vector query answer (data.result[].value)");
      const { sli, measure } = queries[i]!;
      const keys = SLIS[sli].keys;
      for (const s of samples) {
        const id = keys.map((k) => (typeof s.metric[k] === "string" ? boundedText(s.metric[k], LABEL_BYTES) : "")) as [string, string, string?];
        const key = JSON.stringify(id);
        let row = rows[sli].get(key);
        if (!row) {
          row = { namespace: id[0], route: id[1], ...(sli === "ttft" ? { model: id[2] } : {}), objective: null, goodput: null, budgetLeft: null, burnFast: null, burnSlow: null };
          rows[sli].set(key, row);
        }
        row[measure] = Number.isFinite(s.value) ? s.value : null;
      }
    }
    // Worst first: the fastest burn, then the slow one; names break ties so the order is stable. Burns
    // are compared to 1e-6: Prometheus's float sums give equal burns a different last digit each read,
    // which would swap rows between refreshes.
    const name = (r: SloRow): string => JSON.stringify([r.namespace, r.route, r.model ?? ""]);
    const burn = (v: number | null): number => (v === null ? -1 : Math.round(v * 1e6));
    const order = (a: SloRow, b: SloRow): number => burn(b.burnFast) - burn(a.burnFast) || burn(b.burnSlow) - burn(a.burnSlow) || (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0);
    const ttft = [...rows.ttft.values()].sort(order);
    const errors = [...rows.errors.values()].sort(order);
    const { maxRows } = this.options;
    return { ok: true, ttft: ttft.slice(0, maxRows), errors: errors.slice(0, maxRows), truncated: Math.max(0, ttft.length - maxRows) + Math.max(0, errors.length - maxRows), readAtMs: this.now() };
  }

  private async query(query: string, signal: AbortSignal): Promise<{ status: number; bytes: Buffer | null }> {
    const url = `${this.queryUrl}?${new URLSearchParams({ query }).toString()}`;
    const response = await (this.options.fetch ?? fetch)(url, { signal, headers: { accept: "application/json" }, redirect: "error" });
    return { status: response.status, bytes: await readBounded(response, this.options.maxBytes) };
  }
}
