// `make demo` on a fresh clone compiles what the demo runs (the release filter) and nothing the
// benchmarks alone need (the no-op baseline, the redaction engine) nor what it never loads.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

test("make demo builds build/filter.wasm and no benchmark-only or unused module (make -n -B: every prerequisite as if nothing were built)", () => {
  const plan = execFileSync("make", ["-n", "-B", "demo"], { cwd: root, encoding: "utf8" });
  assert.match(plan, /asc filter\/index\.ts --target release/);
  for (const unused of ["noop-filter", "redaction-module", "index-content.ts", "--target debug"]) assert.ok(!plan.includes(unused), `make demo would build ${unused}:\n${plan}`);
  assert.match(plan, /node --import tsx test\/demo\/main\.ts/);
});
