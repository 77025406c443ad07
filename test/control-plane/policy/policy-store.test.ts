// The file-backed policy repository: a journal line per change (fsynced before the answer), a
// snapshot written by compaction, group commit, no-op writes, crash leftovers (torn lines, stale
// temporaries, unaudited changes), and records re-validated at load (invalid ones quarantined,
// the rest served).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { AuditRecord } from "../../../control-plane/src/policy/audit.js";
import { FilePolicyStore, historyLimit, type FileStoreOptions } from "../../../control-plane/src/policy/file-store.js";
import { PolicyJournal } from "../../../control-plane/src/policy/journal.js";
import { nodeFileSystem, type FileSystem } from "../../../control-plane/src/storage/file-system.js";
import { samplePolicy } from "../helpers.js";

const clock = () => new Date("2026-12-02T12:00:00.000Z");
const at = "2026-12-02T12:00:00.000Z";

function storePath(): string {
  return join(mkdtempSync(join(tmpdir(), "tt-store-")), "policies.json");
}

function open(path: string, extra: Partial<FileStoreOptions> = {}): FilePolicyStore {
  return new FilePolicyStore({ path, now: clock, ...extra });
}

/** A journal line exactly as the store frames one (CRC-32 of the JSON, a space, the JSON). */
function journalLine(entry: object): string {
  const json = JSON.stringify(entry);
  return `${crc32(Buffer.from(json)).toString(16).padStart(8, "0")} ${json}\n`;
}

function journalLines(path: string): { type: string; version?: string; through?: number }[] {
  return readFileSync(`${path}.journal`, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l.slice(9)) as { type: string });
}

describe("file-backed policy store", () => {
  it("survives a restart with policies, versions and history, each entry naming the version it replaced", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-store-")), "nested", "policies.json");
    const first = open(path);
    await first.create(samplePolicy("a"), { by: "admin" });
    await first.put("b", samplePolicy("b"), { by: "ci" });
    await first.put("a", samplePolicy("a", { pluginConfig: {} }), { by: "ci" });
    await first.delete("a", { by: "admin" });
    await first.close();
    const second = open(path);
    assert.deepEqual(second.list(), [{ policy: samplePolicy("b"), version: "2", updatedAt: at, updatedBy: "ci" }]);
    assert.deepEqual((await second.history("a"))?.map((h) => [h.action, h.version, h.previousVersion]), [["create", "1", null], ["replace", "3", "1"], ["delete", "4", "3"]]);
    const next = await second.create(samplePolicy("c"), { by: "admin" });
    assert.equal(next.ok && next.record?.version, "5");
    // The store is still open: it holds its lock file beside the journal.
    assert.deepEqual(readdirSync(join(path, "..")).sort(), ["policies.json.journal", "policies.json.lock"]);
  });

  it("hands out frozen records that readers share: no caller can change what is stored", async () => {
    const store = open(storePath());
    await store.create(samplePolicy("a"), { by: "admin" });
    const record = store.get("a");
    assert.ok(record !== undefined && Object.isFrozen(record) && Object.isFrozen(record.policy.pluginConfig.sampling?.routes?.[0]));
    assert.equal(store.get("a"), record);
    assert.throws(() => {
      (record.policy.pluginConfig.sampling as { defaultRate: number }).defaultRate = 1;
    }, TypeError);
    assert.equal(store.list()[0], record);
  });

  it("indexes names in a Map: a policy named constructor is stored, read and versioned like any other", async () => {
    const path = storePath();
    const store = open(path);
    assert.equal(store.get("constructor"), undefined);
    assert.equal(await store.history("constructor"), undefined);
    const created = await store.create(samplePolicy("constructor"), { by: "admin" });
    assert.equal(created.ok && created.record?.version, "1");
    const other = await store.create(samplePolicy("other"), { by: "admin" });
    assert.equal(other.ok && other.record?.version, "2");
    await store.close();
    assert.deepEqual(open(path).list().map((r) => [r.policy.name, r.version]), [["constructor", "1"], ["other", "2"]]);
  });

  it("costs one journal line per write: fsynced before the answer, never the whole state", async () => {
    const path = storePath();
    const store = open(path);
    for (let i = 0; i < 20; i++) await store.create(samplePolicy(`p${i}`), { by: "admin" });
    const before = statSync(`${path}.journal`).size;
    await store.put("p0", samplePolicy("p0", { pluginConfig: {} }), { by: "admin" });
    const grown = statSync(`${path}.journal`).size - before;
    // One change line plus one audited mark, independent of the 20 policies stored.
    assert.ok(grown < 1000, `a write appended ${grown} bytes`);
    assert.equal(existsSync(path), false, "no snapshot is written before the journal outgrows the threshold");
  });

  it("commits concurrent writes in batches: every version unique, the last write wins, fewer fsyncs than writes", async () => {
    class CountingJournal extends PolicyJournal {
      durableAppends = 0;
      override append(entries: readonly unknown[], durable: boolean): void {
        if (durable) this.durableAppends += 1;
        return super.append(entries, durable);
      }
    }
    const path = storePath();
    const journal = new CountingJournal(path);
    const store = open(path, { journal });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.put("a", samplePolicy("a", { pluginConfig: { sampling: { defaultRate: i / 100 } } }), { by: "admin" })),
    );
    assert.deepEqual(results.map((r) => r.ok && r.record?.version), Array.from({ length: 20 }, (_, i) => String(i + 1)));
    assert.deepEqual(store.get("a")?.policy.pluginConfig, { sampling: { defaultRate: 0.19 } });
    assert.ok(journal.durableAppends < 20, `${journal.durableAppends} fsynced appends for 20 writes`);
    await store.close();
    assert.equal(open(path).get("a")?.version, "20");
  });

  it("changes nothing and answers unavailable when the journal append fails; the next write works", async () => {
    class FailingOnce extends PolicyJournal {
      failNext = false;
      override append(entries: readonly unknown[], durable: boolean): void {
        if (this.failNext && durable) {
          this.failNext = false;
          throw new Error("ENOSPC: injected");
        }
        return super.append(entries, durable);
      }
    }
    const path = storePath();
    const journal = new FailingOnce(path);
    const audit: AuditRecord[] = [];
    const store = open(path, { journal, audit: (r) => audit.push(r) });
    await store.create(samplePolicy("a"), { by: "admin" });
    const before = readFileSync(`${path}.journal`, "utf8");
    journal.failNext = true;
    const failed = await store.put("a", samplePolicy("a", { pluginConfig: {} }), { by: "admin" });
    assert.deepEqual(failed, { ok: false, kind: "unavailable", reason: "policy journal append failed: ENOSPC: injected" });
    assert.equal(readFileSync(`${path}.journal`, "utf8"), before);
    assert.deepEqual(store.get("a")?.policy, samplePolicy("a"));
    assert.equal(audit.length, 1);
    const after = await store.put("a", samplePolicy("a", { pluginConfig: {} }), { by: "admin" });
    assert.equal(after.ok && after.record?.version, "2");
  });

  it("creates no version, history entry, event or audit record for a write that changes nothing", async () => {
    const path = storePath();
    const audit: AuditRecord[] = [];
    const store = open(path, { audit: (r) => audit.push(r) });
    let events = 0;
    store.onChange(() => events++);
    await store.create(samplePolicy("a"), { by: "admin" });
    const size = statSync(`${path}.journal`).size;
    // The same policy with its keys in another order is the same JSON value.
    const reordered = { pluginConfig: samplePolicy("a").pluginConfig, target: samplePolicy("a").target, name: "a" };
    const cases = [
      await store.put("a", reordered, { by: "ci" }),
      await store.patch("a", {}, { by: "ci" }),
      await store.patch("a", { pluginConfig: { sampling: { defaultRate: 0.05 } } }, { by: "ci" }),
      await store.rollback("a", "1", { by: "ci" }),
    ];
    for (const result of cases) assert.deepEqual(result.ok && [result.changed, result.record?.version, result.previous?.version], [false, "1", "1"]);
    assert.equal(statSync(`${path}.journal`).size, size);
    assert.equal((await store.history("a"))?.length, 1);
    assert.equal(events, 1);
    assert.equal(audit.length, 1);
    // A stale precondition still fails on a no-op (it is evaluated first).
    assert.deepEqual(await store.put("a", samplePolicy("a"), { by: "ci", ifMatch: ["7"] }), { ok: false, kind: "precondition-failed", header: "if-match" });
  });

  it("keeps the real history: 60 no-op writes evict nothing, and a rollback to the first version still works", async () => {
    const store = open(storePath());
    await store.create(samplePolicy("a"), { by: "admin" });
    await store.put("a", samplePolicy("a", { pluginConfig: {} }), { by: "admin" });
    for (let i = 0; i < historyLimit + 10; i++) await store.patch("a", {}, { by: "admin" });
    const rolled = await store.rollback("a", "1", { by: "admin" });
    assert.equal(rolled.ok && rolled.changed && rolled.record?.version, "3");
  });

  it("evaluates If-Match lists, If-None-Match and the document's version in RFC 9110 order", async () => {
    const store = open(storePath());
    await store.create(samplePolicy("a"), { by: "admin" });
    const changed = (rate: number) => samplePolicy("a", { pluginConfig: { sampling: { defaultRate: rate } } });
    const cases: [string, Parameters<FilePolicyStore["put"]>[2], string][] = [
      ["If-Match list containing the current version", { by: "x", ifMatch: ["9", "1"] }, "ok"],
      ["If-Match list without it", { by: "x", ifMatch: ["1", "9"] }, "precondition-failed:if-match"],
      ["If-Match: * on an existing policy", { by: "x", ifMatch: "*" }, "ok"],
      ["If-None-Match: * on an existing policy", { by: "x", ifNoneMatch: "*" }, "precondition-failed:if-none-match"],
      ["If-None-Match naming the current version", { by: "x", ifNoneMatch: ["3"] }, "precondition-failed:if-none-match"],
      ["If-None-Match naming another version", { by: "x", ifNoneMatch: ["1"] }, "ok"],
      ["a stale document version", { by: "x", expectVersion: "1" }, "conflict"],
      ["the current document version", { by: "x", expectVersion: "4" }, "ok"],
      ["If-Match holds but the document version is stale", { by: "x", ifMatch: ["5"], expectVersion: "4" }, "conflict"],
    ];
    let rate = 0.1;
    for (const [why, options, expected] of cases) {
      const result = await store.put("a", changed((rate += 0.1)), options);
      const got = result.ok ? "ok" : result.kind === "precondition-failed" ? `${result.kind}:${result.header}` : result.kind;
      assert.equal(got, expected, why);
    }
    assert.deepEqual(await store.put("b", samplePolicy("b"), { by: "x", ifMatch: "*" }), { ok: false, kind: "precondition-failed", header: "if-match" });
    const created = await store.put("b", samplePolicy("b"), { by: "x", ifNoneMatch: "*" });
    assert.equal(created.ok && created.previous, null);
    assert.deepEqual(await store.put("c", samplePolicy("c"), { by: "x", expectVersion: "1" }), { ok: false, kind: "conflict", reason: "policy c does not exist (any more): version 1 is stale" });
    // A write the response would refuse anyway (404) ignores preconditions (RFC 9110 §13.2.1).
    assert.deepEqual(await store.delete("nope", { by: "x", ifMatch: ["1"] }), { ok: false, kind: "not-found" });
  });

  it("validates the exact object it stores: inherited properties are neither validated nor stored", async () => {
    const store = open(storePath());
    // What a prototype-polluting merge used to produce: the values exist only through the prototype.
    const inherited = Object.create({ target: { namespace: "llm", selector: { matchLabels: {} } }, pluginConfig: {} }) as object;
    (inherited as { name: string }).name = "sneaky";
    const result = await store.create(inherited, { by: "admin" });
    assert.deepEqual(result, { ok: false, kind: "invalid", errors: [{ field: "target", reason: "required" }, { field: "pluginConfig", reason: "required" }] });
    await store.create(samplePolicy("a"), { by: "admin" });
    const patched = await store.patch("a", JSON.parse('{"target":null,"__proto__":{"target":{"namespace":"llm","selector":{"matchLabels":{}}}}}'), { by: "admin" });
    assert.deepEqual(patched, { ok: false, kind: "invalid", errors: [{ field: "target", reason: "required" }, { field: "__proto__", reason: "unknown field" }] });
    assert.deepEqual(store.get("a")?.policy, samplePolicy("a"));
  });

  it("refuses to start on a snapshot that is not a store file", () => {
    const path = storePath();
    writeFileSync(path, '{"formatVersion": 9}');
    assert.throws(() => open(path), /unrecognised format/);
    writeFileSync(path, "{");
    assert.throws(() => open(path), /not valid JSON/);
  });

  it("cuts a torn last journal line (never acknowledged) and serves everything before it", async () => {
    const path = storePath();
    const first = open(path);
    await first.create(samplePolicy("a"), { by: "admin" });
    await first.close();
    const torn = journalLine({ type: "change", name: "b", action: "create", version: "2", previousVersion: null, at, by: "admin", policy: samplePolicy("b") });
    appendFileSync(`${path}.journal`, torn.slice(0, 40));
    const logs: object[] = [];
    const second = open(path, { log: (r) => logs.push(r) });
    assert.deepEqual(second.list().map((r) => r.policy.name), ["a"]);
    assert.deepEqual(logs, [{ level: "warn", msg: "policy store: cut a torn journal line left by a crash (never acknowledged)", bytes: 40 }]);
    const next = await second.create(samplePolicy("b"), { by: "admin" });
    assert.equal(next.ok && next.record?.version, "2");
    await second.close();
    assert.deepEqual(open(path).list().map((r) => r.policy.name), ["a", "b"]);
  });

  it("quarantines stored records that fail validation at load (log line, count, not served) and serves the rest", async () => {
    const path = storePath();
    const lines = [
      { type: "change", name: "good", action: "create", version: "1", previousVersion: null, at, by: "admin", policy: samplePolicy("good") },
      // What the merge-patch bug stored: no target at all.
      { type: "change", name: "p1", action: "patch", version: "2", previousVersion: null, at, by: "admin", policy: { name: "p1", pluginConfig: {} } },
      { type: "change", name: "renamed", action: "create", version: "3", previousVersion: null, at, by: "admin", policy: samplePolicy("other") },
    ];
    writeFileSync(`${path}.journal`, lines.map(journalLine).join("") + "00000000 {}\n");
    const logs: { level: string; msg: string; policy?: string }[] = [];
    const store = open(path, { log: (r) => logs.push(r as never) });
    assert.deepEqual(store.list().map((r) => r.policy.name), ["good"]);
    assert.equal(store.get("p1"), undefined);
    assert.deepEqual(store.quarantined(), [
      { name: "(journal)", version: "line 4", errors: [{ field: "(record)", reason: "checksum mismatch" }] },
      { name: "p1", version: "2", errors: [{ field: "target", reason: "required" }] },
      { name: "renamed", version: "3", errors: [{ field: "name", reason: "stored under renamed" }] },
    ]);
    assert.deepEqual(logs.map((l) => [l.level, l.msg, l.policy]), [
      ["error", "policy store: corrupt journal line skipped", undefined],
      ["warn", "policy quarantined: the stored record does not validate and is not served", "p1"],
      ["warn", "policy quarantined: the stored record does not validate and is not served", "renamed"],
    ]);
    assert.deepEqual(store.readiness(), { ok: true, detail: "1 policies, 3 quarantined" });
    // A quarantined record stays on disk through compaction until its name is written again.
    await store.close();
    const compacting = open(path, { compactMinBytes: 1 });
    await compacting.create(samplePolicy("x"), { by: "admin" });
    await compacting.whenIdle();
    await compacting.close();
    const snapshot = JSON.parse(readFileSync(path, "utf8")) as { policies: Record<string, { current: { policy: unknown } }> };
    assert.deepEqual(snapshot.policies.p1?.current.policy, { name: "p1", pluginConfig: {} });
    const again = open(path);
    assert.deepEqual(again.quarantined().map((q) => q.name), ["p1", "renamed"]);
    const fixed = await again.put("p1", samplePolicy("p1"), { by: "admin" });
    assert.equal(fixed.ok && fixed.previous, null);
    assert.deepEqual(again.quarantined().map((q) => q.name), ["renamed"]);
  });

  it("removes temporary files left by an interrupted snapshot write, and only those", () => {
    const path = storePath();
    const dir = join(path, "..");
    writeFileSync(join(dir, ".policies.json.4242.0a1b2c3d.tmp"), "{half");
    writeFileSync(join(dir, "notes.tmp"), "keep me");
    const logs: object[] = [];
    open(path, { log: (r) => logs.push(r) });
    assert.deepEqual(readdirSync(dir).sort(), ["notes.tmp", "policies.json.journal", "policies.json.lock"]);
    assert.deepEqual(logs, [{ level: "warn", msg: "policy store: removed a temporary file left by an interrupted write", file: ".policies.json.4242.0a1b2c3d.tmp" }]);
  });

  it("compacts the journal into the snapshot once it outgrows it; a crash between the two steps replays nothing twice", async () => {
    const path = storePath();
    const store = open(path, { compactMinBytes: 2000 });
    for (let i = 0; i < 12; i++) await store.put("a", samplePolicy("a", { pluginConfig: { sampling: { defaultRate: i / 100 } } }), { by: "admin" });
    await store.whenIdle();
    assert.ok(existsSync(path), "a snapshot was written");
    assert.ok(statSync(`${path}.journal`).size < 2000);
    const journalBefore = readFileSync(`${path}.journal`, "utf8");
    await store.close();
    // Simulate the crash: the new snapshot is in place but the journal was not emptied.
    writeFileSync(`${path}.journal`, journalBefore);
    const reopened = open(path);
    assert.equal(reopened.get("a")?.version, "12");
    assert.deepEqual((await reopened.history("a"))?.map((h) => h.version), Array.from({ length: 12 }, (_, i) => String(i + 1)));
  });

  it("reads a format-1 store file (before the journal) and derives each entry's previous version", async () => {
    const path = storePath();
    const record = { policy: samplePolicy("a"), version: "2", updatedAt: at, updatedBy: "ci" };
    writeFileSync(path, JSON.stringify({
      formatVersion: 1,
      nextVersion: 3,
      policies: { a: { current: record, history: [{ action: "create", version: "1", at, by: "admin", policy: samplePolicy("a") }, { action: "replace", version: "2", at, by: "ci", policy: samplePolicy("a") }] } },
    }));
    const store = open(path);
    assert.deepEqual(store.get("a"), record);
    assert.deepEqual((await store.history("a"))?.map((h) => [h.version, h.previousVersion]), [["1", null], ["2", "1"]]);
    const next = await store.put("a", samplePolicy("a", { pluginConfig: {} }), { by: "admin" });
    assert.equal(next.ok && next.record?.version, "3");
  });

  it("writes each change and its audit facts in one journal line, and emits at start the audit lines a crash cut off", async () => {
    const path = storePath();
    const audit: AuditRecord[] = [];
    const store = open(path, { audit: (r) => audit.push(r) });
    await store.create(samplePolicy("a"), { by: "admin" });
    await store.close();
    assert.deepEqual(journalLines(path).map((l) => [l.type, l.version ?? l.through]), [["change", "1"], ["audited", 1]]);
    // A change committed by a process killed before it emitted the line (no audited mark after it).
    appendFileSync(`${path}.journal`, journalLine({ type: "change", name: "a", action: "delete", version: "2", previousVersion: "1", at, by: "ci" }));
    const recovered: AuditRecord[] = [];
    const reopened = open(path, { audit: (r) => recovered.push(r) });
    assert.deepEqual(recovered, [{ who: "ci", action: "delete", policy: "a", oldVersion: "1", newVersion: null, at, recovered: true }]);
    await reopened.close();
    const quiet: AuditRecord[] = [];
    open(path, { audit: (r) => quiet.push(r) });
    assert.deepEqual(quiet, [], "recovered lines are marked and not repeated");
  });
});

describe("file-backed policy store: never loses what it cannot read", () => {
  const change = (name: string, version: string) => ({ type: "change", name, action: "create", version, previousVersion: null, at, by: "admin", policy: samplePolicy(name) });

  it("refuses to start on a journal line of a type it does not know, naming the file, the line and the type", async () => {
    const path = storePath();
    // A newer version wrote a line this one does not know, then was rolled back.
    writeFileSync(`${path}.journal`, [change("a", "1"), { type: "label", name: "a", labels: { team: "x" } }, change("b", "2")].map(journalLine).join(""));
    assert.throws(() => open(path, { compactMinBytes: 1 }), {
      message: `policy store ${path}.journal: line 2 is of type "label", which this version does not know (written by a newer version?); refusing to start rather than drop it: run the version that wrote it`,
    });
    // Nothing was rewritten: the line is there for the version that knows it.
    assert.match(readFileSync(`${path}.journal`, "utf8"), /"type":"label"/);
    assert.equal(existsSync(path), false, "no snapshot written without it");
  });

  it("cuts the journal at a zero-filled hole a power loss left; whole lines after it go to .rejected, not into the state", async () => {
    const path = storePath();
    const after = journalLine(change("b", "2"));
    writeFileSync(`${path}.journal`, Buffer.concat([Buffer.from(journalLine(change("a", "1"))), Buffer.alloc(512), Buffer.from(after)]));
    const logs: object[] = [];
    const store = open(path, { log: (r) => logs.push(r) });
    assert.deepEqual(store.list().map((r) => r.policy.name), ["a"]);
    assert.deepEqual(store.quarantined(), [], "a power loss's hole is not reported as corruption");
    assert.equal(readFileSync(`${path}.journal`, "utf8"), journalLine(change("a", "1")));
    assert.deepEqual(readFileSync(`${path}.rejected`), Buffer.concat([Buffer.alloc(512), Buffer.from(after)]));
    assert.deepEqual(logs, [{ level: "warn", msg: "policy store: cut a torn journal line left by a crash (never acknowledged)", bytes: 512 + after.length, preservedBytes: 512 + after.length, preservedIn: `${path}.rejected` }]);
    const next = await store.create(samplePolicy("c"), { by: "admin" });
    assert.equal(next.ok && next.record?.version, "2");
    await store.close();
  });

  it("copies corrupt and malformed lines to .rejected before a compaction drops them from the journal", async () => {
    const path = storePath();
    const corrupt = "00000000 {}";
    const malformed = journalLine({ type: "change", name: "m", action: "create", version: "x" }).slice(0, -1);
    writeFileSync(`${path}.journal`, [journalLine(change("a", "1")), `${corrupt}\n`, `${malformed}\n`, journalLine(change("b", "2"))].join(""));
    const store = open(path, { compactMinBytes: 1 });
    assert.deepEqual(store.list().map((r) => r.policy.name), ["a", "b"]);
    assert.equal(existsSync(`${path}.rejected`), false, "nothing to copy until the journal is about to lose them");
    await store.create(samplePolicy("c"), { by: "admin" });
    await store.whenIdle();
    assert.equal(readFileSync(`${path}.journal`, "utf8"), "", "compacted");
    assert.equal(readFileSync(`${path}.rejected`, "utf8"), `${corrupt}\n${malformed}\n`);
    await store.close();
    assert.deepEqual(open(path).list().map((r) => r.policy.name), ["a", "b", "c"]);
  });

  for (const failing of ["open", "write", "fsync", "close", "rename"] as const) {
    it(`removes its temporary file when a compaction fails at ${failing} (a full disk, an I/O error), and compacts at the next write`, async () => {
      const path = storePath();
      const dir = join(path, "..");
      let armed = false;
      const fail = <T extends unknown[], R>(name: string, real: (...args: T) => Promise<R>) => async (...args: T): Promise<R> => {
        if (armed && name === failing) {
          armed = false;
          if (name === "open") await real(...args); // created, then the failure
          throw Object.assign(new Error(`ENOSPC: injected at ${name}`), { code: "ENOSPC" });
        }
        return real(...args);
      };
      const p = nodeFileSystem.promises;
      const fs: FileSystem = {
        ...nodeFileSystem,
        promises: { ...p, open: fail("open", p.open), write: fail("write", p.write), fsync: fail("fsync", p.fsync), close: fail("close", p.close), rename: fail("rename", p.rename) },
      };
      const logs: { msg: string; error?: string }[] = [];
      const store = open(path, { compactMinBytes: 1, fs, log: (r) => logs.push(r as never) });
      armed = true;
      const first = await store.create(samplePolicy("a"), { by: "admin" });
      assert.equal(first.ok, true, "the write itself is acknowledged");
      await store.whenIdle();
      assert.deepEqual(logs.map((l) => l.msg), ["policy store compaction failed"]);
      assert.match(logs[0]!.error ?? "", new RegExp(`injected at ${failing}`));
      assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".tmp")), [], "no temporary file left");
      assert.equal(existsSync(path), false);
      await store.create(samplePolicy("b"), { by: "admin" });
      await store.whenIdle();
      assert.ok(existsSync(path), "the next compaction succeeded");
      assert.deepEqual(readdirSync(dir).sort(), ["policies.json", "policies.json.journal"]);
      await store.close();
      assert.deepEqual(open(path).list().map((r) => r.policy.name), ["a", "b"]);
    });
  }
});
