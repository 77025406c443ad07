// The receiver decodes one body per event-loop turn, so what arrives between two bodies (a /healthz,
// a policy pull) is served after one decode, not after all that were ready at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DecodeTurns } from "../../../control-plane/src/traces/decode-turns.js";

test("DecodeTurns: jobs queued together run one per turn, in order, and work queued meanwhile runs between them", async () => {
  const turns = new DecodeTurns();
  const order: string[] = [];
  const jobs = ["a", "b", "c"].map((name) =>
    turns.run(() => {
      order.push(name);
      // What a request arriving during this decode stands for: it must not wait for the next decode.
      setImmediate(() => order.push(`after ${name}`));
      return name.toUpperCase();
    }),
  );
  assert.equal(turns.pending, 3, "nothing runs in the turn that queues it");
  assert.deepEqual(await Promise.all(jobs), ["A", "B", "C"]);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ["a", "after a", "b", "after b", "c", "after c"]);
});

test("DecodeTurns: a job that throws rejects its own promise and the next job still runs", async () => {
  const turns = new DecodeTurns();
  const failing = turns.run(() => {
    throw new Error("malformed");
  });
  const next = turns.run(() => 2);
  await assert.rejects(failing, /malformed/);
  assert.equal(await next, 2);
  assert.equal(turns.pending, 0);
});
