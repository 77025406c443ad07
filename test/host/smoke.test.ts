// The shipped filter and the no-op baseline through a whole stream under the strict host.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { FilterVm, ManualClock } from "./index.js";

const requestHeaders: Array<[string, string]> = [
  [":method", "POST"],
  [":path", "/v1/chat/completions"],
  [":authority", "llm.local"],
  [":scheme", "http"],
  ["content-type", "application/json"],
];

function requireWasm(path: string): string {
  assert.ok(existsSync(path), `${path} is missing: run \`make build\` first`);
  return path;
}

for (const wasm of ["build/filter.wasm", "build/noop.wasm"]) {
  test(`${wasm} runs a whole stream in Envoy's order and leaves every callback at Continue`, async () => {
    const vm = await FilterVm.load({ wasm: requireWasm(wasm), clock: new ManualClock() });
    assert.equal(vm.configureAccepted, true);
    const stream = vm.newStream({ routeName: "chat" });
    assert.equal(stream.requestHeaders(requestHeaders), 0);
    assert.equal(stream.requestBody('{"model":"m"}', true), 0);
    assert.equal(stream.responseHeaders([[":status", "200"], ["content-type", "application/json"]]), 0);
    assert.equal(stream.responseBody('{"usage":{}}', true), 0);
    stream.end();
    assert.equal(stream.ended, true);
    assert.deepEqual(stream.stops, []);
    assert.equal(stream.request.get(":path"), "/v1/chat/completions");
    assert.equal(stream.response.get(":status"), "200");
    assert.equal(vm.failed, false);
    assert.equal(vm.memoryBytes() % 65536, 0);
  });
}
