// The window keeps a series' points as values against its target's scrape times, and its own times
// only once it leaves that order (a scrape without it, a time out of order). Checked against the
// plain form (every point's time and value, as the window kept them before) on random scrapes with
// series coming and going, failed scrapes, repeated and backward times, and pruning.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SeriesWindow } from "../../../control-plane/src/promql/series-window.js";
import { mulberry32 } from "../../support/mulberry32.js";
import { heldPoints } from "./samples.js";

interface PlainSeries { target: string; points: number[]; staleAt: number[] }

/** The window's rules on plain [t, v, ...] arrays. */
class PlainWindow {
  readonly series = new Map<string, PlainSeries>();
  constructor(private readonly retainMs: number) {}

  observe(target: string, ts: number, entries: { key: string; value: number }[]): void {
    const seen = new Set<string>();
    for (const e of entries) {
      seen.add(e.key);
      let s = this.series.get(e.key);
      if (!s) this.series.set(e.key, (s = { target, points: [], staleAt: [] }));
      if (s.points.length > 0 && s.points[s.points.length - 2]! >= ts) continue;
      s.points.push(ts, e.value);
    }
    for (const [key, s] of this.series) if (s.target === target && !seen.has(key)) this.markStale(s, ts);
    const horizon = ts - this.retainMs;
    for (const [key, s] of this.series) {
      while (s.points.length > 2 && s.points[2]! <= horizon) s.points.splice(0, 2);
      while (s.staleAt.length > 1 && s.staleAt[1]! <= horizon) s.staleAt.shift();
      if (Math.max(s.points[s.points.length - 2] ?? -Infinity, s.staleAt[s.staleAt.length - 1] ?? -Infinity) <= horizon) this.series.delete(key);
    }
  }

  failed(target: string, ts: number): void {
    for (const s of this.series.values()) if (s.target === target) this.markStale(s, ts);
  }

  private markStale(s: PlainSeries, ts: number): void {
    if ((s.staleAt[s.staleAt.length - 1] ?? -Infinity) < (s.points[s.points.length - 2] ?? -Infinity)) s.staleAt.push(ts);
  }
}

for (const seed of [1, 2, 3, 4]) {
  test(`a window's series hold the points and markers of the plain form through 3,000 random scrapes (seed ${seed}), and its tally goes back to 0 with them`, () => {
    const r = mulberry32(seed);
    const tally = { bytes: 0 };
    const w = new SeriesWindow<string>(60_000, tally);
    const plain = new PlainWindow(60_000);
    const targets = ["a", "b", "c"];
    const now = new Map(targets.map((t) => [t, 0]));
    let own = 0;
    for (let step = 0; step < 3000; step++) {
      const target = targets[Math.floor(r() * targets.length)]!;
      const roll = r();
      // Mostly 5 to 15 s on; now and then the same time again, or a step back.
      const ts = now.get(target)! + (roll < 0.04 ? 0 : roll < 0.08 ? -7_000 : 5_000 + Math.floor(r() * 10) * 1000);
      now.set(target, Math.max(now.get(target)!, ts));
      if (r() < 0.05) {
        w.failed(target, ts);
        plain.failed(target, ts);
        continue;
      }
      // Each of six series in the scrape most of the time; the last two rarely.
      const entries = Array.from({ length: 6 }, (_, i) => i).filter((i) => r() < (i < 4 ? 0.9 : 0.3)).map((i) => ({ key: `${target}\xffs${i}`, info: `s${i}`, value: Math.floor(r() * 100) }));
      w.observe(target, ts, entries);
      plain.observe(target, ts, entries);
      const held = w.all();
      assert.deepEqual(held.map((s) => `${s.targetId}/${s.info}`), [...plain.series.keys()].sort().map((k) => k.replace("\xff", "/")), `step ${step}: the series held`);
      for (const s of held) {
        const p = plain.series.get(`${s.targetId}\xff${s.info}`)!;
        assert.deepEqual(heldPoints(s), p.points, `step ${step}: ${s.targetId}/${s.info}'s points`);
        assert.deepEqual(s.staleAt ?? [], p.staleAt, `step ${step}: ${s.targetId}/${s.info}'s staleness markers`);
        if (s.firstScrape === undefined && s.count > 0) own++;
      }
    }
    assert.ok(own > 100, `series holding their own times were checked (${own} times)`);
    assert.ok(tally.bytes > 0);
    for (const t of targets) w.remove(t);
    assert.equal(tally.bytes, 0, "the tally is what the window holds");
  });
}
