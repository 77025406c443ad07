// Scrapes every target on its own interval with bounded concurrency. Each scrape has its own
// timeout, so a slow or dead target holds at most one slot for at most its timeout and never
// delays the schedule of the others. Results (success or failure) go to one callback.
import type { Clock } from "../remote-write/retry.js";
import type { FamilyMetadata, ParsedSample } from "./sample.js";
import { TextParser, type ParseError } from "./text-parser.js";
import type { ScrapeTarget } from "./targets.js";
import { isApplicationSeries, MERGED_QUERY } from "./merged.js";

/** The outcome of one scrape. */
export interface ScrapeResult {
  target: ScrapeTarget;
  /** Scrape start, ms since the epoch (the timestamp its samples get when they carry none). */
  timestampMs: number;
  durationMs: number;
  ok: boolean;
  /**
   * Bounded reason when !ok: timeout, network, http_<status>, body_too_large, and for a merged
   * target app_unavailable (pilot-agent answered, but without the application's series).
   */
  error?: string;
  samples: ParsedSample[];
  families: Map<string, FamilyMetadata>;
  parseErrors: ParseError[];
}

/** Scraper settings. */
export interface ScraperOptions {
  clock: Clock;
  concurrency: number;
  onResult: (r: ScrapeResult) => void;
  /** Largest body accepted, bytes. */
  maxBodyBytes?: number;
  /**
   * Scrape each target at a fixed phase of its interval, a stable hash of its id counted from the
   * epoch (default true), as Prometheus fixes a target's offset (scrape/target.go offset): every
   * replica places a target's scrapes at the same instants, so one can hand a target to another at
   * a scrape boundary. False: the first scrape at once, then every interval.
   */
  spreadStart?: boolean;
  /** Monotonic ms for durations (default performance.now). */
  monotonicMs?: () => number;
}

interface Scheduled {
  target: ScrapeTarget;
  nextAt: number;
  /** No scrape starts at or after this instant (the target is being handed to another replica). */
  untilMs: number;
  running: boolean;
}

/** When a replica may scrape a target: from `fromMs` (its first scrape the first slot at or after it), until `untilMs` (exclusive). */
export interface ScrapeWindow {
  fromMs?: number;
  untilMs?: number;
}

/** Why a sleeping schedule was cut short (no one reads it: a sleep ends early on any abort). */
const WAKE = "wake";

function stableHash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** One scrape over HTTP, body streamed into the parser. */
export async function scrapeOnce(target: ScrapeTarget, clock: Clock, maxBodyBytes = 64 << 20, monotonicMs: () => number = () => performance.now()): Promise<ScrapeResult> {
  const timestampMs = clock.now();
  const t0 = monotonicMs();
  const samples: ParsedSample[] = [];
  // A merged answer (Istio metrics merging) keeps only the application's series.
  const parser = new TextParser(target.merged ? (s) => isApplicationSeries(s.name) && samples.push(s) : (s) => samples.push(s));
  const result = (ok: boolean, error?: string): ScrapeResult => {
    const r: ScrapeResult = { target, timestampMs, durationMs: monotonicMs() - t0, ok, samples: ok ? samples : [], families: parser.families, parseErrors: parser.errors };
    if (error !== undefined) r.error = error;
    if (target.merged) for (const name of [...r.families.keys()]) if (!isApplicationSeries(name)) r.families.delete(name);
    return r;
  };
  try {
    const res = await fetch(target.merged ? `${target.url}?${MERGED_QUERY}` : target.url, {
      headers: {
        Accept: "text/plain;version=0.0.4;q=1,*/*;q=0.1",
        "User-Agent": "tokentrace-control-plane/0.1.0",
        // As Prometheus sends it (scrape/scrape.go): pilot-agent bounds its application request by it.
        "X-Prometheus-Scrape-Timeout-Seconds": String(target.timeoutMs / 1000),
      },
      signal: AbortSignal.timeout(target.timeoutMs),
    });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return result(false, `http_${res.status}`);
    }
    const decoder = new TextDecoder();
    let bytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      if (bytes > maxBodyBytes) return result(false, "body_too_large");
      parser.push(decoder.decode(chunk, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
    // pilot-agent answers 200 whatever became of the application (handleStats only counts the
    // failure): no application series means the engine was not read.
    if (target.merged && samples.length === 0) return result(false, "app_unavailable");
    return result(true);
  } catch (err) {
    const name = (err as { name?: string }).name;
    return result(false, name === "TimeoutError" || name === "AbortError" ? "timeout" : "network");
  }
}

/** Runs the scrape schedule. */
export class Scraper {
  private readonly scheduled = new Map<string, Scheduled>();
  private inFlight = 0;
  private stopped = true;
  private wakeController = new AbortController();
  private loopDone: Promise<void> | undefined;
  private readonly active = new Set<Promise<void>>();

  constructor(private readonly opts: ScraperOptions) {}

  /** The first scrape slot of `t` at or after `atMs`: its phase on the epoch grid, or `atMs` itself without spreading. */
  slotAtOrAfter(t: ScrapeTarget, atMs: number): number {
    if (this.opts.spreadStart === false) return atMs;
    const phase = stableHash(t.id) % t.intervalMs;
    return atMs + ((((phase - atMs) % t.intervalMs) + t.intervalMs) % t.intervalMs);
  }

  /** The slot a scrape of `t` started at `atMs` belongs to: the last one at or before it (every replica places it alike). */
  slotAtOrBefore(t: ScrapeTarget, atMs: number): number {
    if (this.opts.spreadStart === false) return atMs;
    const phase = stableHash(t.id) % t.intervalMs;
    return atMs - ((((atMs - phase) % t.intervalMs) + t.intervalMs) % t.intervalMs);
  }

  /**
   * Replaces the target set; kept targets keep their schedule (and take a new `untilMs`). Returns
   * the removed targets. A new target's first scrape is its first slot at or after its window's
   * `fromMs` (default now); a slot already past (a window opening in the past, for a target whose
   * previous owner may have missed it) is scraped at once.
   */
  setTargets(targets: ScrapeTarget[], windows: ReadonlyMap<string, ScrapeWindow> = new Map()): ScrapeTarget[] {
    const now = this.opts.clock.now();
    const next = new Map(targets.map((t) => [t.id, t]));
    const removed: ScrapeTarget[] = [];
    for (const [id, s] of this.scheduled) {
      if (!next.has(id)) {
        this.scheduled.delete(id);
        removed.push(s.target);
      }
    }
    for (const t of targets) {
      const window = windows.get(t.id);
      const untilMs = window?.untilMs ?? Infinity;
      const cur = this.scheduled.get(t.id);
      if (cur) {
        cur.target = t;
        cur.untilMs = untilMs;
        continue;
      }
      const nextAt = Math.max(now, this.slotAtOrAfter(t, window?.fromMs ?? now));
      this.scheduled.set(t.id, { target: t, nextAt, untilMs, running: false });
    }
    this.wake();
    return removed;
  }

  /** The targets this scraper scrapes now: scheduled, and not past the end of their window. */
  get targets(): ScrapeTarget[] {
    return [...this.scheduled.values()].filter((s) => s.running || s.nextAt < s.untilMs).map((s) => s.target);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loopDone = this.loop();
  }

  /** Stops scheduling and waits for scrapes in flight (each bounded by its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loopDone;
    await Promise.all([...this.active]);
  }

  private wake(): void {
    // A reason of our own: abort() with none builds a DOMException, stack trace and all, each time.
    this.wakeController.abort(WAKE);
  }

  private async loop(): Promise<void> {
    const { clock } = this.opts;
    while (!this.stopped) {
      this.wakeController = new AbortController();
      const now = clock.now();
      const due = [...this.scheduled.values()].filter((s) => !s.running && s.nextAt <= now && s.nextAt < s.untilMs).sort((a, b) => a.nextAt - b.nextAt);
      for (const s of due) {
        if (this.inFlight >= this.opts.concurrency) break;
        this.launch(s, now);
      }
      let nextAt = Infinity;
      for (const s of this.scheduled.values()) if (!s.running && s.nextAt < s.untilMs) nextAt = Math.min(nextAt, s.nextAt);
      // When every slot is busy, wait for a completion (wake) rather than spinning on due targets.
      const waitMs = this.inFlight >= this.opts.concurrency || nextAt === Infinity ? 3_600_000 : Math.max(0, nextAt - now);
      if (waitMs > 0 || due.length === 0) await clock.sleep(waitMs, this.wakeController.signal);
    }
  }

  private launch(s: Scheduled, now: number): void {
    s.running = true;
    this.inFlight++;
    // Keep the phase: the next slot on the target's grid (after a late scrape, or a long stall, the
    // first one still ahead: missed slots are skipped, not scraped in a burst).
    if (this.opts.spreadStart === false) {
      s.nextAt += s.target.intervalMs;
      if (s.nextAt <= now) s.nextAt = now + s.target.intervalMs;
    } else {
      s.nextAt = this.slotAtOrAfter(s.target, Math.max(s.nextAt, now) + 1);
    }
    const p = scrapeOnce(s.target, this.opts.clock, this.opts.maxBodyBytes, this.opts.monotonicMs)
      .then((r) => {
        if (this.scheduled.get(s.target.id) === s) this.opts.onResult(r);
      })
      .finally(() => {
        s.running = false;
        this.inFlight--;
        this.active.delete(p);
        this.wake();
      });
    this.active.add(p);
  }
}
