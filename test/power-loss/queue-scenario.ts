// The remote-write disk queue under power loss. The workload appends records (each carries its
// id, so a delivery names exactly what was sent), hands them to a receiver that lives outside the
// disk (it keeps what it got through the power loss), commits, rewinds after "failed" sends and
// reopens cleanly now and then. After each power loss the queue is recovered from the disk image,
// more is appended, and everything is drained to the receiver; sometimes the power goes again in
// the middle of that, and recovery runs a second time.
//
// The property ("what was made durable is sent exactly once"), per record:
// - acknowledged (its append was covered by an fsync before the power went: `durablePosition`)
//   -> after recovery it reaches the receiver exactly once with a durable commit: one delivery
//   covered by a commit that returned, or a last delivery whose commit the power cut short;
// - never delivered again once a commit covering it returned (a durable commit is final);
// - not acknowledged -> at most one committed delivery (it may be lost, never doubled);
// - every delivery is a record that was appended, byte for byte (no zero-filled or torn record
//   is ever handed out), and each phase delivers in append order;
// - recovery never throws (no crash loop), and after the drain nothing is pending or unread.
import assert from "node:assert/strict";
import { DiskQueue, type QueuePosition } from "../../control-plane/src/remote-write/disk-queue.js";
import type { CrashScenario } from "./sweep.js";
import { PowerLoss, type SimFs } from "./sim-fs.js";

type Delivery = "open" | "committed" | "in-doubt" | "wasted";

interface Rec {
  id: number;
  payload: Buffer;
  samples: number;
  /** Position just after it (from append). */
  end: QueuePosition;
  acked: boolean;
  deliveries: Delivery[];
}

/** What the workload and the recoveries did, as the receiver and the callers saw it. */
export interface QueueOracle {
  recs: Rec[];
  /** Record ids delivered in the current phase, in order. */
  phase: number[];
}

/** Queue settings of a scenario. */
export interface QueueScenarioOptions {
  fsync: "always" | "segment";
  /** Workload steps before the power loss. */
  steps: number;
  segmentBytes: number;
}

const DIR = "/var/lib/tokentrace/queue/t1";

const covers = (pos: QueuePosition, end: QueuePosition): boolean => end.segment < pos.segment || (end.segment === pos.segment && end.offset <= pos.offset);

/** One session of the queue on one disk, until it closes or the power goes. */
class Session {
  q: DiskQueue;
  private committing: QueuePosition | undefined;

  constructor(
    private readonly fs: SimFs,
    private readonly oracle: QueueOracle,
    private readonly options: QueueScenarioOptions,
  ) {
    this.q = this.open();
  }

  private open(): DiskQueue {
    return new DiskQueue({ dir: DIR, maxBytes: 1 << 30, segmentBytes: this.options.segmentBytes, fsync: this.options.fsync, fs: this.fs, now: () => 0 });
  }

  /** Records appended in this session: `durablePosition` speaks for what this queue wrote, not for what an earlier power loss took. */
  private readonly appended: Rec[] = [];

  private markAcked(): void {
    const durable = this.q.durablePosition;
    for (const r of this.appended) if (!r.acked && covers(durable, r.end)) r.acked = true;
  }

  append(random: () => number): void {
    const id = this.oracle.recs.length;
    const samples = 1 + Math.floor(random() * 8);
    const payload = Buffer.alloc(8 + samples * 4 + Math.floor(random() * 300));
    payload.writeUInt32LE(id, 0);
    payload.writeUInt32LE(samples, 4);
    for (let i = 8; i < payload.length; i++) payload[i] = (id * 31 + i) & 0xff;
    // Recorded before the call: a record the power cut off mid-append may still come back, unacknowledged.
    const rec: Rec = { id, payload, samples, end: { segment: Infinity, offset: 0 }, acked: false, deliveries: [] };
    this.oracle.recs.push(rec);
    rec.end = this.q.append(payload, samples, id);
    this.appended.push(rec);
    this.markAcked();
  }

  private deliver(payload: Uint8Array, samples: number): Rec {
    const id = Buffer.from(payload).readUInt32LE(0);
    const rec = this.oracle.recs[id];
    assert.ok(rec !== undefined, `delivered a record that was never appended (id ${id})`);
    assert.ok(Buffer.compare(Buffer.from(payload), rec.payload) === 0 && samples === rec.samples, `record ${id} came back changed`);
    const last = this.oracle.phase.at(-1);
    assert.ok(last === undefined || id > last, `record ${id} delivered after record ${last} in one session`);
    assert.ok(!rec.deliveries.includes("committed"), `record ${id} delivered again after a commit covering it returned`);
    this.oracle.phase.push(id);
    rec.deliveries.push("open");
    return rec;
  }

  /** Reads, delivers and (unless `fail`) commits one batch; returns the records delivered. */
  send(max: number, fail: boolean): number {
    const batch = this.q.read(max);
    if (batch.length === 0) return 0;
    if (fail) {
      this.q.rewind(); // the receiver never got it
      return 0;
    }
    for (const r of batch) {
      const rec = this.deliver(r.payload, r.samples);
      if (rec.end.segment === Infinity) rec.end = r.next; // appended as the power went: its place is known now
    }
    const pos = batch[batch.length - 1]!.next;
    this.committing = pos;
    this.q.commit(pos, 0);
    this.committing = undefined;
    for (const r of this.oracle.recs) {
      if (r.deliveries.at(-1) === "open" && covers(pos, r.end)) r.deliveries[r.deliveries.length - 1] = "committed";
    }
    return batch.length;
  }

  reopen(): void {
    this.q.close();
    this.markAcked(); // close fsyncs the active segment
    this.q = this.open();
  }

  /** The power went: deliveries not covered by a returned commit are wasted, or in doubt if it went during the commit. */
  powerLost(): void {
    for (const r of this.oracle.recs) {
      if (r.deliveries.at(-1) !== "open") continue;
      r.deliveries[r.deliveries.length - 1] = this.committing !== undefined && covers(this.committing, r.end) ? "in-doubt" : "wasted";
    }
    this.oracle.phase = [];
  }
}

/** A phase after a power loss: recover, append a little more, drain everything. */
function recoverAndDrain(fs: SimFs, oracle: QueueOracle, options: QueueScenarioOptions, random: () => number): void {
  let session: Session | undefined;
  try {
    session = new Session(fs, oracle, options);
    const q = session.q;
    assert.equal(q.unreadSamples, q.pendingSamples, "right after recovery, everything pending is unread");
    const more = Math.floor(random() * 6);
    for (let i = 0; i < more; i++) {
      session.append(random);
      if (random() < 0.4) session.send(1 + Math.floor(random() * 4), false);
    }
    const pending = session.q.pendingSamples;
    let drained = 0;
    for (;;) {
      const before = oracle.phase.length;
      if (session.send(16, false) === 0) break;
      for (const id of oracle.phase.slice(before)) drained += oracle.recs[id]!.samples;
    }
    assert.equal(drained, pending, "the drain delivered exactly what was counted pending");
    assert.equal(session.q.pendingSamples, 0);
    assert.equal(session.q.unreadSamples, 0);
    assert.deepEqual(session.q.read(100), []);
    session.q.close();
    oracle.phase = [];
  } catch (error) {
    if (error instanceof PowerLoss && session !== undefined) session.powerLost();
    else if (error instanceof PowerLoss) oracle.phase = [];
    throw error;
  }
}

function verify(oracle: QueueOracle): void {
  for (const r of oracle.recs) {
    const committed = r.deliveries.filter((d) => d === "committed").length;
    assert.ok(committed <= 1, `record ${r.id} delivered with a durable commit ${committed} times`);
    if (!r.acked) continue;
    const settled = committed === 1 || (committed === 0 && r.deliveries.at(-1) === "in-doubt");
    assert.ok(settled, `acknowledged record ${r.id} (${r.samples} samples) was lost: deliveries ${JSON.stringify(r.deliveries)}`);
  }
}

/** The disk queue scenario with the given settings. */
export function queueScenario(options: QueueScenarioOptions): CrashScenario<QueueOracle> {
  return {
    name: `remote-write queue (fsync ${options.fsync}, segments of ${options.segmentBytes} bytes)`,
    oracle: () => ({ recs: [], phase: [] }),
    async run(fs, oracle, random) {
      const session = new Session(fs, oracle, options);
      try {
        for (let step = 0; step < options.steps; step++) {
          const r = random();
          if (r < 0.55) session.append(random);
          else if (r < 0.9) session.send(1 + Math.floor(random() * 6), random() < 0.1);
          else if (r < 0.94) session.reopen();
        }
        session.q.close();
      } catch (error) {
        if (error instanceof PowerLoss) session.powerLost();
        throw error;
      }
      return Promise.resolve();
    },
    async check(image, oracle, random) {
      // Sometimes the power goes again while recovering and draining: recovery must survive its own crash.
      if (random() < 0.3) {
        image.crashAt = image.ops + 1 + Math.floor(random() * 60);
        try {
          recoverAndDrain(image, oracle, options, random);
        } catch (error) {
          if (!(error instanceof PowerLoss)) throw error;
        }
        if (image.crashed) image = image.powerLossImage(random);
        else image.crashAt = Infinity;
      }
      recoverAndDrain(image, oracle, options, random);
      verify(oracle);
      return Promise.resolve();
    },
  };
}
