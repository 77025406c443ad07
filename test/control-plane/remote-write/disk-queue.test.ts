import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { DiskQueue } from "../../../control-plane/src/remote-write/disk-queue.js";
import { nodeFileSystem, type FileSystem } from "../../../control-plane/src/storage/file-system.js";
import { mulberry32 } from "../../support/mulberry32.js";

const tmp = (): string => mkdtempSync(join(tmpdir(), "tokentrace-queue-"));
const rec = (n: number): Uint8Array => new Uint8Array(100).fill(n);
const segments = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith(".seg")).sort();
/** Bytes of one record of `rec(n)` as the queue lays it out, and of its header. */
const RECORD = ((): number => {
  const dir = tmp();
  const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
  q.append(rec(0), 1, 1);
  q.close();
  const size = statSync(join(dir, segments(dir)[0]!)).size;
  rmSync(dir, { recursive: true });
  return size;
})();
const RECORD_HEADER_BYTES = RECORD - 100;
const recovered = (q: DiskQueue): object => ({ segments: q.recovery.segments, records: q.recovery.records, samples: q.recovery.samples, truncatedBytes: q.recovery.truncatedBytes });

describe("durable disk queue", () => {
  it("hands records out in order, at most maxSamples per read (but at least one record)", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 10, 1000);
    q.append(rec(2), 10, 2000);
    q.append(rec(3), 50, 3000);
    const a = q.read(25);
    assert.deepEqual(a.map((r) => [r.payload[0], r.samples, r.newestTimestampMs]), [[1, 10, 1000], [2, 10, 2000]]);
    const b = q.read(25);
    assert.deepEqual(b.map((r) => r.samples), [50]);
    assert.deepEqual(q.read(25), []);
    assert.equal(q.pendingSamples, 70);
    q.commit(b[0]!.next);
    assert.equal(q.pendingSamples, 0);
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("after a reopen, resumes exactly at the committed record: nothing delivered is handed out again, nothing undelivered is lost", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 2 * RECORD }); // two records per segment
    for (let i = 1; i <= 5; i++) q.append(rec(i), 1, i);
    const first = q.read(2);
    q.commit(first[1]!.next);
    q.read(2); // handed out but never committed (the process "dies" mid-send)
    q.close();
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 2 * RECORD });
    // Segments [3,4] and [5], and the new one writing goes on in.
    assert.deepEqual(recovered(again), { segments: 3, records: 3, samples: 3, truncatedBytes: 0 });
    assert.deepEqual(again.read(10).map((r) => r.payload[0]), [3, 4, 5]);
    // The fully delivered first segment was deleted on commit.
    assert.deepEqual(segments(dir), ["00000000000000000001.seg", "00000000000000000002.seg", "00000000000000000003.seg"]);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("writes on in a new segment after a reopen, never after a recovered tail", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 1, 1);
    q.close();
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    const at = again.append(rec(2), 1, 2);
    assert.deepEqual(at, { segment: 1, offset: RECORD });
    assert.equal(statSync(join(dir, "00000000000000000000.seg")).size, RECORD, "the recovered segment is not written to");
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("cuts a torn record (a write cut short by kill -9) off the tail and keeps everything before it", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 4, 1);
    q.append(rec(2), 4, 2);
    q.append(rec(3), 4, 3);
    q.close();
    const seg = join(dir, segments(dir)[0]!);
    truncateSync(seg, 2 * RECORD + 40); // the third record's header and 12 bytes of its payload
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.deepEqual(recovered(again), { segments: 2, records: 2, samples: 8, truncatedBytes: 40 });
    assert.equal(statSync(seg).size, 2 * RECORD, "the torn bytes are cut");
    again.append(rec(4), 4, 4);
    assert.deepEqual(again.read(100).map((r) => r.payload[0]), [1, 2, 4]);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("reads no record out of a zero-filled tail (what a power loss leaves), however long", () => {
    for (const zeros of [4096, 20, 7]) {
      const dir = tmp();
      const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
      q.append(rec(1), 3, 1);
      q.append(rec(2), 3, 2);
      q.close();
      appendFileSync(join(dir, segments(dir)[0]!), Buffer.alloc(zeros));
      const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
      assert.deepEqual(recovered(again), { segments: 2, records: 2, samples: 6, truncatedBytes: zeros }, `${zeros} zero bytes`);
      assert.deepEqual(again.read(100).map((r) => [r.payload[0], r.samples]), [[1, 3], [2, 3]]);
      assert.equal(again.unreadSamples, 0);
      again.close();
      rmSync(dir, { recursive: true });
    }
  });

  it("finds the records after a run of zeros or a corrupt record again: only the damaged bytes are lost", () => {
    for (const damage of ["zeros", "corrupt"] as const) {
      const dir = tmp();
      const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
      for (let i = 1; i <= 3; i++) q.append(rec(i), 1, i);
      q.close();
      const seg = join(dir, segments(dir)[0]!);
      const bytes = readFileSync(seg);
      let damaged: Buffer;
      if (damage === "zeros") {
        // An odd-length run of zeros between the first and second records.
        damaged = Buffer.concat([bytes.subarray(0, RECORD), Buffer.alloc(13), bytes.subarray(RECORD)]);
      } else {
        damaged = Buffer.from(bytes);
        damaged.writeUInt8(damaged.readUInt8(RECORD + RECORD_HEADER_BYTES + 50) ^ 0xff, RECORD + RECORD_HEADER_BYTES + 50); // one byte of the second record's payload
      }
      writeFileSync(seg, damaged);
      const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
      const expected = damage === "zeros" ? [1, 2, 3] : [1, 3];
      assert.deepEqual(again.read(100).map((r) => r.payload[0]), expected, damage);
      assert.equal(again.recovery.truncatedBytes, damage === "zeros" ? 13 : RECORD, damage);
      again.close();
      rmSync(dir, { recursive: true });
    }
  });

  it("clamps a committed position that points past the surviving data, and sends what is appended after it", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    for (let i = 1; i <= 3; i++) q.append(rec(i), 2, i);
    const all = q.read(100);
    q.commit(all[2]!.next);
    q.close();
    // A power loss kept the (renamed) commit but not the segment's last two unsynced records.
    truncateSync(join(dir, segments(dir)[0]!), RECORD);
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.equal(again.recovery.clampedBytes, 2 * RECORD);
    assert.deepEqual(again.committedPosition, { segment: 0, offset: RECORD });
    assert.equal(again.unreadSamples, 0);
    again.append(rec(4), 2, 4);
    assert.equal(again.unreadSamples, 2);
    const next = again.read(100);
    assert.deepEqual(next.map((r) => r.payload[0]), [4], "what is appended after recovery is handed out");
    assert.equal(again.unreadSamples, 0);
    again.commit(next[0]!.next);
    assert.equal(again.pendingSamples, 0);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("treats an unreadable committed file as no delivery (re-sends, never skips)", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 1, 1);
    q.commit(q.read(1)[0]!.next);
    q.close();
    writeFileSync(join(dir, "committed"), Buffer.alloc(24));
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.equal(again.recovery.committedUnreadable, true);
    assert.deepEqual(again.read(10).map((r) => r.payload[0]), [1]);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("writes nothing for a commit that does not move the position", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 1, 1);
    q.append(rec(2), 1, 2);
    const [first] = q.read(1);
    q.commit(first!.next);
    const inode = statSync(join(dir, "committed")).ino;
    q.commit(first!.next);
    q.commit({ segment: 0, offset: 0 });
    assert.equal(statSync(join(dir, "committed")).ino, inode, "the committed file was not replaced");
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("cuts a failed write back and starts a new segment for the next append", () => {
    const dir = tmp();
    let failWrites = 0;
    const failing: FileSystem = {
      ...nodeFileSystem,
      writeSync: (fd, buffer, offset, length, position) => {
        if (failWrites > 0 && --failWrites === 0) throw Object.assign(new Error("ENOSPC: injected"), { code: "ENOSPC" });
        return nodeFileSystem.writeSync(fd, buffer, offset, length, position);
      },
    };
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16, fs: failing });
    q.append(rec(1), 1, 1);
    failWrites = 2; // the payload write of the next record
    assert.throws(() => q.append(rec(2), 1, 2), /ENOSPC/);
    assert.equal(statSync(join(dir, segments(dir)[0]!)).size, RECORD, "the header written before the failure is cut");
    assert.deepEqual(q.append(rec(3), 1, 3), { segment: 1, offset: RECORD });
    assert.deepEqual(q.read(10).map((r) => r.payload[0]), [1, 3]);
    q.close();
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.deepEqual(again.read(10).map((r) => r.payload[0]), [1, 3]);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("still reads segments written in the previous record format (no empty record)", () => {
    const dir = tmp();
    const legacy = (payload: Buffer, samples: number, newest: number): Buffer => {
      const h = Buffer.alloc(20);
      h.writeUInt32LE(payload.length, 0);
      h.writeUInt32LE(crc32(payload), 4);
      h.writeUInt32LE(samples, 8);
      h.writeDoubleLE(newest, 12);
      return Buffer.concat([h, payload]);
    };
    writeFileSync(join(dir, "00000000000000000004.seg"), Buffer.concat([legacy(Buffer.alloc(30, 7), 5, 70), legacy(Buffer.alloc(9, 8), 6, 80), Buffer.alloc(64)]));
    writeFileSync(join(dir, "committed"), JSON.stringify({ segment: 4, offset: 0 }));
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.deepEqual(q.read(100).map((r) => [r.payload[0], r.payload.length, r.samples, r.newestTimestampMs]), [[7, 30, 5, 70], [8, 9, 6, 80]]);
    assert.deepEqual(q.append(rec(1), 1, 1), { segment: 5, offset: RECORD });
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("stays within its byte bound by dropping the oldest segment, counting its undelivered samples", () => {
    const dir = tmp();
    // Two records per segment, bound five records.
    const q = new DiskQueue({ dir, maxBytes: 5 * RECORD, segmentBytes: 2 * RECORD });
    for (let i = 1; i <= 7; i++) q.append(rec(i), 3, i);
    assert.ok(q.bytes <= 5 * RECORD, `bytes ${q.bytes}`);
    assert.equal(q.droppedSamples, 6); // segment [1,2] dropped when record 7 opened a fourth segment
    assert.equal(q.droppedRecords, 2);
    assert.deepEqual(q.read(100).map((r) => r.payload[0]), [3, 4, 5, 6, 7]);
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("stays within its record bound too (the index in memory), cutting segments at their share of it and dropping the oldest", () => {
    const dir = tmp();
    // Bytes to spare; a segment is a quarter of maxBytes, so its share of 8 records is 2.
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 18, maxRecords: 8 });
    for (let i = 1; i <= 9; i++) q.append(rec(i), 3, i);
    assert.equal(q.records, 7, "segments [1,2] [3,4] [5,6] [7,8] [9]: the first went when the ninth record made 9 > 8");
    assert.equal(q.droppedRecords, 2);
    assert.equal(q.droppedSamples, 6);
    assert.deepEqual(q.read(100).map((r) => r.payload[0]), [3, 4, 5, 6, 7, 8, 9]);
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("reads on from the cursor and names the oldest unread record's append time, wherever the cursor stands in a segment of many records, across segments and rewinds", () => {
    const dir = tmp();
    let clock = 0;
    const q = new DiskQueue({ dir, maxBytes: 1 << 24, segmentBytes: 37 * RECORD, now: () => clock });
    // The model: every record in order, the next one to hand out, and the committed one.
    const appended: number[] = [];
    let next = 0;
    let committed = 0;
    const draw = mulberry32(7);
    const random = (n: number): number => Math.floor(draw() * n);
    const nexts: Array<{ segment: number; offset: number }> = [];
    for (let step = 0; step < 600; step++) {
      const action = random(10);
      if (action < 5) {
        clock += 1 + random(5);
        q.append(rec(appended.length % 256), 1, clock);
        appended.push(clock);
      } else if (action < 8) {
        const got = q.read(1 + random(9));
        assert.deepEqual(got.map((r) => r.appendedAtMs), appended.slice(next, next + got.length));
        for (const r of got) nexts[next++] = r.next;
      } else if (action < 9 && next > committed) {
        committed += 1 + random(next - committed);
        q.commit(nexts[committed - 1]!);
      } else {
        q.rewind();
        next = committed;
      }
      assert.equal(q.oldestUnreadAppendedAtMs(), appended[next], `step ${step}`);
    }
    q.close();
    rmSync(dir, { recursive: true });
  });

  it("knows the newest sample time it holds across segments, after a reopen, and once the segment holding it is dropped", () => {
    const dir = tmp();
    const open = (): DiskQueue => new DiskQueue({ dir, maxBytes: 4 * RECORD, segmentBytes: 2 * RECORD });
    let q = open();
    assert.equal(q.newestTimestampMs(), undefined);
    // Out of order on purpose: the newest is in the first segment.
    q.append(rec(1), 1, 9000);
    q.append(rec(2), 1, 1000);
    q.append(rec(3), 1, 2000);
    assert.equal(q.newestTimestampMs(), 9000);
    q.close();
    q = open();
    assert.equal(q.newestTimestampMs(), 9000, "recovered from the segments on disk");
    q.append(rec(4), 1, 3000);
    q.append(rec(5), 1, 4000); // opens a third segment: the first, holding 9000, goes for space
    assert.equal(q.droppedRecords, 2);
    assert.equal(q.newestTimestampMs(), 4000);
    q.close();
    rmSync(dir, { recursive: true });
  });
});
