// A process that opens a policy store (argv[2]) and holds it until killed: prints "open" once the
// store is loaded, or the start-up error on stderr with exit code 1 (what main.ts does).
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";

try {
  new FilePolicyStore({ path: process.argv[2] as string, fsync: false });
  process.stdout.write("open\n");
  setInterval(() => undefined, 1 << 30);
} catch (error) {
  process.stderr.write(`start-up failed: ${(error as Error).message}\n`);
  process.exit(1);
}
