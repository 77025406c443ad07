// The durable stores after issue #27 (power-loss safety) beside the code before it, in the same
// run: a frozen copy of main's disk queue and journal (test/bench/support/baseline/), on the same
// disk, interleaved so both see the same machine. Bars: unchanged within 10%.
// - remote-write queue append throughput: 1.5 KB records (a compact record of a few hundred
//   samples) in the default fsync mode (per finished segment) and segment size; process CPU time,
//   since the appends are synchronous (write(2) to the page cache) and a segment's fsync waits on
//   the disk, not the CPU.
// - policy journal write latency: one change line appended and fsynced, as a write is
//   acknowledged; wall time, pairs of appends alternating between the two journals, median of each.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskQueue } from "../../control-plane/src/remote-write/disk-queue.js";
import { PolicyJournal } from "../../control-plane/src/policy/journal.js";
import { DiskQueue as MainDiskQueue } from "./support/baseline/disk-queue.js";
import { PolicyJournal as MainPolicyJournal } from "./support/baseline/journal.js";
import { median } from "./measure.js";
import type { BenchRow } from "./table.js";

const BASELINE = "main before #27";
const RECORD_BYTES = 1536;
const RECORDS = 12_000; // 18 MiB: two finished 8 MiB segments per round
const SEGMENT_BYTES = 8 * 1024 * 1024;
const ROUNDS = 3;
const JOURNAL_PAIRS = 300;

interface Appender {
  append(payload: Uint8Array, samples: number, newestTimestampMs: number): unknown;
  close(): void;
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Records per CPU second of `RECORDS` appends into a fresh queue. */
function appendRate(open: (dir: string) => Appender, payload: Uint8Array): number {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-queue-"));
  try {
    const q = open(dir);
    const started = cpuMs();
    for (let i = 0; i < RECORDS; i++) q.append(payload, 300, i);
    const spent = cpuMs() - started;
    q.close();
    return RECORDS / (spent / 1000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function queueRow(): BenchRow {
  const payload = new Uint8Array(RECORD_BYTES);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 131) & 0xff;
  const options = (dir: string) => ({ dir, maxBytes: 256 * 1024 * 1024, segmentBytes: SEGMENT_BYTES, fsync: "segment" as const });
  const ours: number[] = [];
  const main: number[] = [];
  appendRate((dir) => new DiskQueue(options(dir)), payload); // warm-up: both compiled before timing
  appendRate((dir) => new MainDiskQueue(options(dir)), payload);
  for (let round = 0; round < ROUNDS; round++) {
    main.push(appendRate((dir) => new MainDiskQueue(options(dir)), payload));
    ours.push(appendRate((dir) => new DiskQueue(options(dir)), payload));
  }
  const value = median(ours);
  const baseline = median(main);
  return {
    figure: `remote-write queue append throughput (${RECORD_BYTES}-byte records, fsync per segment, CPU time)`,
    value: Math.round(value),
    unit: "records/s",
    baseline: { name: BASELINE, value: Math.round(baseline) },
    ratio: { value: value / baseline, of: "ours/main", better: "higher" },
    bar: { on: "ratio", min: 0.9 },
  };
}

const line = {
  type: "change",
  name: "chat-completions",
  action: "replace",
  version: "1042",
  previousVersion: "1041",
  at: "2026-12-02T12:00:00.000Z",
  by: "ci-deployer",
  policy: {
    name: "chat-completions",
    target: { namespace: "llm", selector: { matchLabels: { app: "chat" } } },
    pluginConfig: { sampling: { defaultRate: 0.05, routes: [{ routeName: "completions", rate: 0.2 }], force: [{ header: "x-debug", value: "1" }] }, llm: { requestUsageInStream: true } },
  },
};

function journalRows(): BenchRow[] {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-journal-"));
  try {
    const ours = new PolicyJournal(join(dir, "ours.json"));
    const main = new MainPolicyJournal(join(dir, "main.json"));
    ours.load();
    main.load();
    const oursMs: number[] = [];
    const mainMs: number[] = [];
    for (let i = 0; i < JOURNAL_PAIRS; i++) {
      // Alternate which goes first, so neither always follows the other's fsync.
      const order = i % 2 === 0 ? ([[main, mainMs], [ours, oursMs]] as const) : ([[ours, oursMs], [main, mainMs]] as const);
      for (const [journal, times] of order) {
        const started = performance.now();
        journal.append([line], true);
        times.push(performance.now() - started);
      }
    }
    ours.close();
    main.close();
    // The code path alone: the same append without the fsync, CPU time per line.
    const ourCpu = new PolicyJournal(join(dir, "ours-nofsync.json"), { fsync: false });
    const mainCpu = new MainPolicyJournal(join(dir, "main-nofsync.json"), { fsync: false });
    ourCpu.load();
    mainCpu.load();
    const perLine = (j: { append(entries: readonly unknown[], durable: boolean): void }): number => {
      const started = cpuMs();
      for (let i = 0; i < 20_000; i++) j.append([line], true);
      return ((cpuMs() - started) * 1000) / 20_000;
    };
    perLine(ourCpu);
    perLine(mainCpu);
    const cpuMain = median([perLine(mainCpu), perLine(mainCpu), perLine(mainCpu)]);
    const cpuOurs = median([perLine(ourCpu), perLine(ourCpu), perLine(ourCpu)]);
    ourCpu.close();
    mainCpu.close();
    const latency = median(oursMs);
    const baseline = median(mainMs);
    return [
      {
        figure: "policy journal write latency (one change line, write + fsync, median of 300 alternating with main's)",
        value: latency,
        unit: "ms",
        baseline: { name: BASELINE, value: baseline },
        ratio: { value: latency / baseline, of: "ours/main", better: "lower" },
        bar: { on: "ratio", max: 1.1 },
      },
      {
        figure: "policy journal append, code path only (no fsync, CPU time per line)",
        value: cpuOurs,
        unit: "us",
        baseline: { name: BASELINE, value: cpuMain },
        ratio: { value: cpuOurs / cpuMain, of: "ours/main", better: "lower" },
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Reported, no bar: a commit (once per send round) is now fsynced with its directory in the
 * default mode too, where main only renamed it, so a power loss cannot bring back a position that
 * re-sends what was delivered. Wall time per commit, alternating between the two queues.
 */
function commitRow(): BenchRow {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-commit-"));
  try {
    const options = (name: string) => ({ dir: join(dir, name), maxBytes: 1 << 30, segmentBytes: SEGMENT_BYTES, fsync: "segment" as const });
    const ours = new DiskQueue(options("ours"));
    const main = new MainDiskQueue(options("main"));
    const payload = new Uint8Array(RECORD_BYTES);
    const oursMs: number[] = [];
    const mainMs: number[] = [];
    for (let i = 0; i < 200; i++) {
      for (const [q, times] of [[main, mainMs], [ours, oursMs]] as const) {
        q.append(payload, 300, i);
        const [r] = q.read(1000);
        const started = performance.now();
        q.commit(r!.next, i);
        times.push(performance.now() - started);
      }
    }
    ours.close();
    main.close();
    const value = median(oursMs);
    const baseline = median(mainMs);
    return {
      figure: "remote-write queue commit per send round (fsync per segment mode; now fsynced with its directory)",
      value,
      unit: "ms",
      baseline: { name: BASELINE, value: baseline },
      ratio: { value: value / baseline, of: "ours/main", better: "lower" },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function run(): Promise<BenchRow[]> {
  return Promise.resolve([queueRow(), ...journalRows(), commitRow()]);
}
