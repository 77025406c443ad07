// The simulated disk keeps exactly what an fsync made durable and may lose everything else, in
// every way a power loss can: unsynced bytes, torn writes at sector boundaries, zero-filled
// tails, unsynced names (new files, renames, unlinks, new folders). Each rule is checked over many
// power losses, both ways: what must survive always does, and what may be lost sometimes is.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mulberry32 } from "../support/mulberry32.js";
import { PowerLoss, SECTOR_BYTES, SimFs } from "./sim-fs.js";

const images = (fs: SimFs, n = 200): SimFs[] => Array.from({ length: n }, (_, i) => fs.powerLossImage(mulberry32(i + 1)));

function write(fs: SimFs, path: string, bytes: Buffer, options: { sync?: boolean; syncDir?: boolean } = {}): number {
  const fd = fs.openSync(path, "a");
  fs.writeSync(fd, bytes, 0, bytes.length, null);
  if (options.sync) fs.fsyncSync(fd);
  fs.closeSync(fd);
  if (options.syncDir) fsyncDir(fs, path.slice(0, path.lastIndexOf("/")) || "/");
  return bytes.length;
}

function fsyncDir(fs: SimFs, dir: string): void {
  const fd = fs.openSync(dir, "r");
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

describe("simulated disk under power loss", () => {
  it("keeps fsynced bytes of a durably named file in every image; unsynced appends survive whole, torn, zeroed or not at all", () => {
    const fs = new SimFs();
    fs.mkdirSync("/d", { recursive: true });
    fsyncDir(fs, "/");
    const synced = Buffer.alloc(700, 1);
    write(fs, "/d/f", synced, { sync: true, syncDir: true });
    const unsynced = Buffer.alloc(3 * SECTOR_BYTES, 2);
    write(fs, "/d/f", unsynced);
    const outcomes = new Set<string>();
    for (const image of images(fs)) {
      const bytes = image.contents("/d/f");
      assert.ok(bytes !== undefined, "a durably named file is never lost");
      assert.deepEqual(bytes.subarray(0, 700), synced, "fsynced bytes never change");
      const tail = bytes.subarray(700);
      // Each sector past the synced bytes is the new data or zeros (or stale garbage past the durable size), never a mix inside a sector.
      for (let at = 0; at < tail.length; ) {
        const end = Math.min(tail.length, at + (at === 0 ? SECTOR_BYTES * 2 - 700 : SECTOR_BYTES));
        const part = tail.subarray(at, end);
        outcomes.add(part.every((b) => b === 2) ? "new" : part.every((b) => b === 0) ? "zero" : "garbage");
        at = end;
      }
      outcomes.add(bytes.length === 700 ? "size:old" : bytes.length === 700 + unsynced.length ? "size:new" : "size:between");
    }
    assert.deepEqual([...outcomes].sort(), ["garbage", "new", "size:between", "size:new", "size:old", "zero"]);
  });

  it("writes a sector whole: durable bytes sharing a sector with an unsynced write are never lost", () => {
    const fs = new SimFs();
    write(fs, "/f", Buffer.alloc(100, 7), { sync: true, syncDir: true });
    write(fs, "/f", Buffer.alloc(50, 9));
    for (const image of images(fs)) assert.deepEqual(image.contents("/f")?.subarray(0, 100), Buffer.alloc(100, 7));
  });

  it("loses a new file's name unless its directory was fsynced (fsync of the file is not enough)", () => {
    const fs = new SimFs();
    write(fs, "/f", Buffer.from("data"), { sync: true });
    const seen = new Set(images(fs).map((i) => i.existsSync("/f")));
    assert.deepEqual([...seen].sort(), [false, true]);
    fsyncDir(fs, "/");
    assert.ok(images(fs).every((i) => i.contents("/f")?.toString() === "data"));
  });

  it("makes a rename atomic: after a power loss the old name or the new, never both or neither; fsync of the directory makes it final", () => {
    const fs = new SimFs();
    write(fs, "/a", Buffer.from("A"), { sync: true, syncDir: true });
    fs.renameSync("/a", "/b");
    const seen = new Set(images(fs).map((i) => `${i.existsSync("/a")}/${i.existsSync("/b")}`));
    assert.deepEqual([...seen].sort(), ["false/true", "true/false"]);
    fsyncDir(fs, "/");
    assert.ok(images(fs).every((i) => !i.existsSync("/a") && i.contents("/b")?.toString() === "A"));
  });

  it("can keep a rename and lose the renamed file's unsynced bytes (why a file is fsynced before it is renamed)", () => {
    const fs = new SimFs();
    write(fs, "/tmp1", Buffer.from("new contents"), { sync: false });
    fs.renameSync("/tmp1", "/final");
    const seen = new Set<string>();
    for (const i of images(fs, 400)) seen.add(i.existsSync("/final") ? (i.contents("/final")?.toString() === "new contents" ? "renamed" : "renamed, bytes lost") : "neither");
    assert.deepEqual([...seen].sort(), ["neither", "renamed", "renamed, bytes lost"]);
  });

  it("loses an unsynced unlink or a new folder's entry the same way", () => {
    const fs = new SimFs();
    write(fs, "/gone", Buffer.from("x"), { sync: true, syncDir: true });
    fs.unlinkSync("/gone");
    fs.mkdirSync("/new/deeper", { recursive: true });
    const seen = new Set(images(fs).map((i) => `${i.existsSync("/gone")}/${i.existsSync("/new")}`));
    assert.ok(seen.has("true/false") && seen.has("false/true"), [...seen].join(" "));
  });

  it("brings an unsynced truncation back as the old bytes or the new size", () => {
    const fs = new SimFs();
    const fd = fs.openSync("/f", "w");
    fs.writeSync(fd, Buffer.alloc(1000, 3), 0, 1000, 0);
    fs.fsyncSync(fd);
    fsyncDir(fs, "/");
    fs.ftruncateSync(fd, 10);
    const sizes = new Set(images(fs).map((i) => i.contents("/f")?.length));
    assert.ok(sizes.has(10) && sizes.has(1000), [...sizes].join(" "));
    for (const i of images(fs)) assert.ok(i.contents("/f")!.subarray(0, 10).every((b) => b === 3));
  });

  it("goes down at the chosen operation, after applying it, and refuses every call after", () => {
    const fs = new SimFs();
    fs.crashAt = 2;
    const fd = fs.openSync("/f", "w"); // operation 1: the file is created
    assert.throws(() => fs.writeSync(fd, Buffer.from("abc"), 0, 3, 0), PowerLoss); // operation 2
    assert.equal(fs.crashed, true);
    assert.throws(() => fs.readFileSync("/f"), PowerLoss);
    assert.throws(() => fs.existsSync("/f"), PowerLoss);
    assert.equal(fs.ops, 2);
    // The write reached the page cache, so it may survive; nothing was synced, so it may not.
    const seen = new Set(images(fs).map((i) => i.contents("/f")?.toString() ?? "no file"));
    assert.ok(seen.has("abc") && seen.has("no file"), [...seen].join(" "));
  });

  it("appends at the end of a file opened for appending, whatever the position (Linux pwrite with O_APPEND)", () => {
    const fs = new SimFs();
    const fd = fs.openSync("/f", "a");
    fs.writeSync(fd, Buffer.from("ab"), 0, 2, null);
    fs.writeSync(fd, Buffer.from("cd"), 0, 2, 0);
    assert.equal(fs.readFileSync("/f").toString(), "abcd");
  });

  it("answers like node:fs where the stores look at the error code", () => {
    const fs = new SimFs();
    assert.throws(() => fs.readFileSync("/missing"), { code: "ENOENT" });
    assert.throws(() => fs.openSync("/missing", "r+"), { code: "ENOENT" });
    assert.throws(() => fs.unlinkSync("/missing"), { code: "ENOENT" });
    fs.mkdirSync("/d", { recursive: true });
    assert.equal(fs.mkdirSync("/d", { recursive: true }), undefined, "nothing created");
    assert.equal(fs.mkdirSync("/d/e/f", { recursive: true }), "/d/e");
  });
});
