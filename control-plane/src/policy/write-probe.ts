// Whether the store's directory takes a durable write now: a few bytes written, fsynced and
// removed beside the store file. A full disk (ENOSPC), a read-only filesystem (EROFS) or a gone
// mount fail it the way they fail a journal append, so readiness can turn true again on its own.
import { closeSync, fsyncSync, openSync, unlinkSync, writeSync } from "node:fs";

/** Throws the filesystem's error when `<storePath>.probe` cannot be written and synced. */
export function writeProbe(storePath: string): void {
  const path = `${storePath}.probe`;
  const fd = openSync(path, "w", 0o600);
  try {
    writeSync(fd, "probe\n");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}
