// The shipped module's interface, as Envoy loads it (REFERENCE section 2).
import { it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Wasm } from "../host/wasm-api.js";
import { FILTER_WASM, requireArtifact } from "./support.js";

it("build/filter.wasm exports one proxy_abi_version_0_2_x and malloc, and imports only env.proxy_* and WASI", () => {
  const module = new Wasm.Module(readFileSync(requireArtifact(FILTER_WASM)));
  const exports = Wasm.Module.exports(module).map((e) => e.name);
  assert.deepEqual(exports.filter((n) => n.startsWith("proxy_abi_version_")), ["proxy_abi_version_0_2_0"]);
  assert.ok(exports.includes("malloc"));
  assert.ok(exports.includes("_initialize"));
  for (const imp of Wasm.Module.imports(module)) {
    const ok = (imp.module === "env" && imp.name.startsWith("proxy_")) || imp.module === "wasi_snapshot_preview1";
    assert.ok(ok, `unexpected import ${imp.module}.${imp.name}`);
  }
});

// Issue #29's bar (issue #26's was 96 KiB): every VM of every LLM pod loads it, and Istio fetches it per pod.
const MAX_MODULE_BYTES = 80 * 1024;

it(`build/filter.wasm is at most ${MAX_MODULE_BYTES} bytes (80 KiB)`, () => {
  const bytes = readFileSync(requireArtifact(FILTER_WASM)).byteLength;
  assert.ok(bytes <= MAX_MODULE_BYTES, `${bytes} bytes`);
});
