import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskQueue } from "../../../control-plane/src/remote-write/disk-queue.js";

const tmp = (): string => mkdtempSync(join(tmpdir(), "tokentrace-queue-"));
const rec = (n: number): Uint8Array => new Uint8Array(100).fill(n);

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
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 250 }); // two records per segment
    for (let i = 1; i <= 5; i++) q.append(rec(i), 1, i);
    const first = q.read(2);
    q.commit(first[1]!.next);
    q.read(2); // handed out but never committed (the process "dies" mid-send)
    q.close();
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 250 });
    assert.deepEqual(again.recovery, { segments: 2, records: 3, samples: 3, truncatedBytes: 0 });
    assert.deepEqual(again.read(10).map((r) => r.payload[0]), [3, 4, 5]);
    // The fully delivered first segment was deleted on commit.
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".seg")).length, 2);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("cuts a torn record (a write cut short by kill -9) off the tail and keeps everything before it", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 4, 1);
    q.append(rec(2), 4, 2);
    q.close();
    const seg = readdirSync(dir).find((f) => f.endsWith(".seg"))!;
    // A header that promises 100 bytes followed by only 7 of them.
    appendFileSync(join(dir, seg), Buffer.concat([Buffer.from([100, 0, 0, 0, 1, 2, 3, 4, 4, 0, 0, 0]), Buffer.alloc(8), Buffer.alloc(7)]));
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.deepEqual(again.recovery, { segments: 1, records: 2, samples: 8, truncatedBytes: 27 });
    again.append(rec(3), 4, 3);
    assert.deepEqual(again.read(100).map((r) => r.payload[0]), [1, 2, 3]);
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("rejects a record whose checksum does not match and everything after it", () => {
    const dir = tmp();
    const q = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    q.append(rec(1), 1, 1);
    q.close();
    const seg = join(dir, readdirSync(dir).find((f) => f.endsWith(".seg"))!);
    const bad = Buffer.alloc(20 + 3);
    bad.writeUInt32LE(3, 0);
    bad.writeUInt32LE(12345, 4); // wrong crc
    appendFileSync(seg, bad);
    const again = new DiskQueue({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    assert.deepEqual(again.recovery, { segments: 1, records: 1, samples: 1, truncatedBytes: 23 });
    again.close();
    rmSync(dir, { recursive: true });
  });

  it("stays within its byte bound by dropping the oldest segment, counting its undelivered samples", () => {
    const dir = tmp();
    // 120 bytes per record (20 header + 100), two per segment, bound 600 bytes.
    const q = new DiskQueue({ dir, maxBytes: 600, segmentBytes: 240 });
    for (let i = 1; i <= 7; i++) q.append(rec(i), 3, i);
    assert.ok(q.bytes <= 600, `bytes ${q.bytes}`);
    assert.equal(q.droppedSamples, 6); // segment [1,2] dropped when record 7 opened a fourth segment
    assert.equal(q.droppedRecords, 2);
    assert.deepEqual(q.read(100).map((r) => r.payload[0]), [3, 4, 5, 6, 7]);
    q.close();
    rmSync(dir, { recursive: true });
  });
});
