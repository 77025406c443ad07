// Readiness tells the truth about the store: not ready while it cannot write (a full disk, a
// read-only filesystem: ENOSPC and EROFS injected at the journal and the directory probe), ready
// again once a write or a probe succeeds; and a failing disk does not flood the log: identical
// errors are logged once per window, then with a count.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { limitRepeats } from "../../../control-plane/src/log-limit.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { PolicyJournal } from "../../../control-plane/src/policy/journal.js";
import { samplePolicy } from "../helpers.js";

/** The filesystem's answer to every durable append and probe while `code` is set. */
class Disk {
  code: "ENOSPC" | "EROFS" | undefined;
  fail(): void {
    if (this.code !== undefined) throw Object.assign(new Error(`${this.code}: injected`), { code: this.code });
  }
}

class DiskJournal extends PolicyJournal {
  constructor(path: string, private readonly disk: Disk) {
    super(path, { fsync: false });
  }
  override append(entries: readonly unknown[], durable: boolean): void {
    this.disk.fail();
    super.append(entries, durable);
  }
}

describe("store readiness and the log under a failing disk", () => {
  for (const code of ["ENOSPC", "EROFS"] as const) {
    it(`${code}: not ready while writes fail, ready again when the directory takes a write`, async () => {
      const path = join(mkdtempSync(join(tmpdir(), "tt-ready-")), "policies.json");
      const disk = new Disk();
      let now = 0;
      const store = new FilePolicyStore({ path, journal: new DiskJournal(path, disk), probe: () => disk.fail(), nowMs: () => now });
      try {
        assert.equal(store.readiness().ok, true);
        disk.code = code;
        const failed = await store.create(samplePolicy("a"), { by: "t" });
        assert.equal(failed.ok ? "ok" : failed.kind, "unavailable");
        assert.deepEqual([store.readiness().ok, store.readiness().detail.includes(code)], [false, true]);
        now += 5000;
        assert.equal(store.readiness().ok, false, "the probe still fails");
        disk.code = undefined;
        now += 500;
        assert.equal(store.readiness().ok, false, "probed at most once a second");
        now += 500;
        assert.equal(store.readiness().ok, true, "the probe succeeds: ready again");
        disk.code = code;
        assert.equal((await store.create(samplePolicy("b"), { by: "t" })).ok, false);
        disk.code = undefined;
        assert.equal((await store.create(samplePolicy("c"), { by: "t" })).ok, true);
        assert.equal(store.readiness().ok, true, "a successful write clears it too");
      } finally {
        disk.code = undefined;
        await store.close();
      }
    });
  }

  it("1,000 identical write failures in a second log one line, then one with the count after the window", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-ready-")), "policies.json");
    const disk = new Disk();
    const lines: Record<string, unknown>[] = [];
    let now = 0;
    const log = limitRepeats((r) => lines.push(r as Record<string, unknown>), { windowMs: 10_000, nowMs: () => now });
    const store = new FilePolicyStore({ path, journal: new DiskJournal(path, disk), probe: () => disk.fail(), log, nowMs: () => now });
    try {
      disk.code = "ENOSPC";
      for (let i = 0; i < 1000; i++) {
        await store.create(samplePolicy(`p${i}`), { by: "t" });
        now += 1;
      }
      assert.equal(lines.length, 1);
      assert.equal(lines[0]?.msg, "policy store write failed; nothing changed");
      now = 20_000;
      await store.create(samplePolicy("late"), { by: "t" });
      assert.equal(lines.length, 2);
      assert.equal(lines[1]?.repeated, 999);
      log({ level: "info", msg: "other" });
      log({ level: "info", msg: "other" });
      assert.equal(lines.length, 4, "info lines are never limited");
    } finally {
      disk.code = undefined;
      await store.close();
    }
  });
});
