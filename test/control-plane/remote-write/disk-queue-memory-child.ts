// Run by disk-queue-memory.test.ts as `node --expose-gc`: appends `records` records of `payloadBytes`
// bytes to one DiskQueue (nothing read or delivered) and prints, as JSON, what the heap and the array
// buffers grew by per record (its in-memory index entry).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskQueue } from "../../../control-plane/src/remote-write/disk-queue.js";
import { heldBytes } from "../heap.js";

const [records, payloadBytes] = process.argv.slice(2).map(Number) as [number, number];
const dir = mkdtempSync(join(tmpdir(), "tt-queue-memory-"));
let nowMs = 1_800_000_000_000;
const queue = new DiskQueue({ dir, maxBytes: 1 << 30, segmentBytes: 64 << 20, fsync: "never", now: () => (nowMs += 0.5) });
const payload = new Uint8Array(payloadBytes).fill(7);
// A warm-up first: compiled code and the first segment are not counted.
for (let i = 0; i < 1000; i++) queue.append(payload, 1, nowMs);
const before = heldBytes();
for (let i = 0; i < records; i++) queue.append(payload, 1 + (i % 7), nowMs + 0.25);
const after = heldBytes();
process.stdout.write(JSON.stringify({ records: queue.records - 1000, measuredPerRecord: (after - before) / records }));
queue.close();
rmSync(dir, { recursive: true, force: true });
