// A target's report: `up` and `scrape_duration_seconds` of each scrape, shipped at once whether
// or not the scrape's series are held.
import type { Labels } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import type { WriteSeries } from "../remote-write/series.js";
import * as C from "./catalogue.js";

/** `instance` (host:port, as Prometheus sets it from `__address__`) and the path of a target's URL. */
export function instanceAndPath(url: string): { instance: string; path: string } {
  try {
    const u = new URL(url);
    return { instance: u.host, path: u.pathname + u.search };
  } catch {
    return { instance: url, path: "" };
  }
}

/** The labels of a target's `up` and `scrape_duration_seconds`: distinct for every target identity (kind, URL, pod). */
export function targetLabels(t: ScrapeTarget): Labels {
  const { instance, path } = instanceAndPath(t.url);
  const labels: Labels = ["job", t.kind, "instance", instance];
  // Prometheus keeps the path out of `up` because a job has one path; targets of one kind here can
  // differ only by path (several exporters behind one host:port), so it stays in.
  if (path) labels.push("metrics_path", path);
  if (t.namespace) labels.push("namespace", t.namespace);
  if (t.pod) labels.push("pod", t.pod);
  return labels;
}

/**
 * A duration as Prometheus reports scrape_duration_seconds (prometheus/prometheus d15adb9
 * scrape/scrape.go, `duration.Seconds()`): whole nanoseconds, then Go's time.Duration.Seconds,
 * whole seconds plus the remaining nanoseconds / 1e9.
 */
export function durationSeconds(durationMs: number): number {
  const ns = Math.round(durationMs * 1e6);
  const sec = Math.trunc(ns / 1e9);
  return sec + (ns - sec * 1e9) / 1e9;
}

/** `up` and `scrape_duration_seconds` of one scrape. */
export function reportOf(r: ScrapeResult): WriteSeries[] {
  const labels = targetLabels(r.target);
  const ts = r.timestampMs;
  return [
    { labels: ["__name__", C.UP, ...labels], samples: [{ value: r.ok ? 1 : 0, timestampMs: ts }] },
    { labels: ["__name__", C.SCRAPE_DURATION, ...labels], samples: [{ value: durationSeconds(r.durationMs), timestampMs: ts }] },
  ];
}
