// Whether the store's directory takes a durable write now: a few bytes written, fsynced and
// removed beside the store file. A full disk (ENOSPC), a read-only filesystem (EROFS) or a gone
// mount fail it the way they fail a journal append, so readiness can turn true again on its own.
import { nodeFileSystem, type FileSystem } from "../storage/file-system.js";

/** Throws the filesystem's error when `<storePath>.probe` cannot be written and synced. */
export function writeProbe(storePath: string, fs: FileSystem = nodeFileSystem): void {
  const path = `${storePath}.probe`;
  const fd = fs.openSync(path, "w", 0o600);
  try {
    const bytes = Buffer.from("probe\n");
    fs.writeSync(fd, bytes, 0, bytes.length, null);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
    fs.unlinkSync(path);
  }
}
