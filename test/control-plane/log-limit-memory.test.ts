// The log's repeat limiter remembers at most maxKeys records, each by its text up to MAX_KEY_CHARS
// characters and by its SHA-256 past that: what it holds is bounded in bytes whatever the records
// carry (an error message quoting a whole response), at most REMEMBERED_RECORD_BYTES a record
// (measured in a child run with --expose-gc).
import { test } from "node:test";
import assert from "node:assert/strict";
import { limitRepeats, MAX_KEY_CHARS, REMEMBERED_RECORD_BYTES } from "../../control-plane/src/log-limit.js";
import { measureInChild } from "./heap.js";

test("a remembered record costs V8 at most REMEMBERED_RECORD_BYTES, however long the record (measured with --expose-gc)", { timeout: 60_000 }, (t) => {
  for (const chars of [100, MAX_KEY_CHARS - 80, 100_000]) {
    const r = measureInChild<{ logged: number; measuredPerRecord: number }>(new URL("./log-limit-memory-child.ts", import.meta.url), [4096, chars]);
    t.diagnostic(`records of ${chars} characters: ${r.measuredPerRecord.toFixed(0)} B each`);
    assert.equal(r.logged, 4096);
    assert.ok(r.measuredPerRecord <= REMEMBERED_RECORD_BYTES, `${r.measuredPerRecord} B per record of ${chars} characters`);
  }
});

test("long records are still told apart and limited: the same one repeats once per window, another is logged", () => {
  const lines: object[] = [];
  let now = 0;
  const log = limitRepeats((r) => lines.push(r), { nowMs: () => now });
  const long = (tail: string) => ({ level: "error", msg: "failed", error: `${"x".repeat(5000)}${tail}` });
  log(long("a"));
  log(long("a"));
  log(long("b"));
  assert.equal(lines.length, 2);
  now = 10_000;
  log(long("a"));
  assert.deepEqual(lines[2], { ...long("a"), repeated: 1, repeatedOverMs: 10_000 });
});
