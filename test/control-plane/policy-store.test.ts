// The file-backed policy store: survives a restart, writes atomically (no temp files left, the
// old file intact when a save fails), serialises concurrent writes, and hands out unique versions.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePersistence } from "../../control-plane/src/policy/file-persistence.js";
import { PolicyStore } from "../../control-plane/src/policy/store.js";
import { samplePolicy } from "./helpers.js";

const clock = () => new Date("2026-12-02T12:00:00.000Z");

describe("file-backed policy store", () => {
  it("survives a restart with policies, versions and history", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tt-store-"));
    const path = join(dir, "nested", "policies.json");
    const first = new PolicyStore(new FilePersistence(path), clock);
    await first.create(samplePolicy("a"), { by: "admin" });
    await first.put(samplePolicy("b"), { by: "ci" });
    await first.delete("a", { by: "admin" });
    const second = new PolicyStore(new FilePersistence(path), clock);
    assert.deepEqual(second.list(), [{ policy: samplePolicy("b"), version: "2", updatedAt: "2026-12-02T12:00:00.000Z", updatedBy: "ci" }]);
    assert.deepEqual(second.history("a")?.map((h) => [h.action, h.version]), [["create", "1"], ["delete", "3"]]);
    const next = await second.create(samplePolicy("c"), { by: "admin" });
    assert.equal(next.ok && next.record?.version, "4");
    assert.deepEqual(readdirSync(join(dir, "nested")), ["policies.json"]);
  });

  it("keeps the old file and state when a save fails", async () => {
    // Tests run as root, so permissions cannot make the disk fail: inject the failure instead.
    class FailingOnce extends FilePersistence {
      failNext = false;
      override async save(state: Parameters<FilePersistence["save"]>[0]): Promise<void> {
        if (this.failNext) {
          this.failNext = false;
          throw new Error("ENOSPC: injected");
        }
        return super.save(state);
      }
    }
    const dir = mkdtempSync(join(tmpdir(), "tt-store-"));
    const path = join(dir, "policies.json");
    const persistence = new FailingOnce(path);
    const store = new PolicyStore(persistence, clock);
    await store.create(samplePolicy("a"), { by: "admin" });
    const before = readFileSync(path, "utf8");
    persistence.failNext = true;
    await assert.rejects(store.put(samplePolicy("a", { pluginConfig: {} }), { by: "admin" }), /ENOSPC/);
    assert.equal(readFileSync(path, "utf8"), before);
    assert.deepEqual(store.get("a")?.policy, samplePolicy("a"));
    const after = await store.put(samplePolicy("a", { pluginConfig: {} }), { by: "admin" });
    assert.equal(after.ok && after.record?.version, "2");
    assert.deepEqual(readdirSync(dir), ["policies.json"]);
  });

  it("serialises concurrent writes: every version unique, the last write wins", async () => {
    const store = new PolicyStore(new FilePersistence(join(mkdtempSync(join(tmpdir(), "tt-store-")), "p.json")), clock);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.put(samplePolicy("a", { pluginConfig: { sampling: { defaultRate: i / 100 } } }), { by: "admin" })),
    );
    assert.deepEqual(results.map((r) => r.ok && r.record?.version), Array.from({ length: 20 }, (_, i) => String(i + 1)));
    assert.deepEqual(store.get("a")?.policy.pluginConfig, { sampling: { defaultRate: 0.19 } });
  });

  it("refuses to start on a corrupt file", () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-store-")), "p.json");
    writeFileSync(path, '{"formatVersion": 9}');
    assert.throws(() => new PolicyStore(new FilePersistence(path)), /unrecognised format/);
  });
});
