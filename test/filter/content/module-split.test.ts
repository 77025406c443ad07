// Content capture lives in its own module (build/filter-content.wasm, filter/index-content.ts):
// the default module (build/filter.wasm) carries none of the capture, redaction or SHA-256 code,
// and given a policy that turns capture on it keeps everything else working, captures nothing and
// counts content_unavailable. Both run under the emulated Envoy host, exporting to a real OTLP
// receiver on 127.0.0.1.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { countingRandom, loadContentFilter, loadFilter } from "../support.js";

// Bytes only the capture code holds: its placeholders and attribute names, the key's path (as
// AssemblyScript stores string literals: UTF-16LE), and SHA-256's initial hash value (FIPS 180-4
// 5.3.3) as the module stores it (little-endian u32s). They are looked for in the module's memory
// once it has started: the .wasm file holds its static data packed, and start-up unpacks it
// (filter/transform/pack-static-data.mjs).
const CAPTURE_MARKERS: Array<[string, Buffer]> = [
  ["the e-mail placeholder", Buffer.from("[EMAIL", "utf16le")],
  ["the input messages attribute", Buffer.from("gen_ai.input.messages", "utf16le")],
  ["the key's path", Buffer.from("/content-key", "utf16le")],
  ["SHA-256's initial hash value", Buffer.from([0x67, 0xe6, 0x09, 0x6a, 0x85, 0xae, 0x67, 0xbb])],
];

const CONTENT = { enabled: true, pseudonyms: { keySource: { cluster: "cp", workload: "llm.chat" } } };

describe("content capture in its own module", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  /** The whole linear memory of a VM just started (and configured with every default). */
  const startedMemory = (vm: FilterVm): Buffer => vm.readMemory(0, vm.memoryBytes());

  for (const [what, bytes] of CAPTURE_MARKERS) {
    it(`the default module carries none of the capture code (${what}); the content module does`, async () => {
      assert.equal(startedMemory(await loadFilter()).includes(bytes), false);
      assert.equal(startedMemory(await loadContentFilter()).includes(bytes), true);
    });
  }

  async function run(vm: FilterVm): Promise<void> {
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    assert.equal(s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false), 0);
    assert.equal(s.requestBody(JSON.stringify({ model: "m", messages: [{ role: "user", content: "write to ana@example.org" }] }), true), 0);
    assert.equal(s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false), 0);
    assert.equal(s.responseBody(JSON.stringify({ model: "m", choices: [{ message: { content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1 } }), true), 0);
    s.end();
    vm.tick();
    await vm.settle();
  }

  it("the default module given a policy that turns capture on keeps everything else working, captures nothing and counts content_unavailable", async () => {
    const vm = await loadFilter({ clock: new ManualClock(), random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", content: CONTENT } }, clusters: { otel: receiver.url } });
    assert.equal(vm.configureAccepted, true);
    await run(vm);
    await run(vm);
    assert.equal(receiver.spans.length, 1);
    const span = receiver.spans[0]!;
    assert.deepEqual(span.attributes.filter((a) => a.key.startsWith("gen_ai.input") || a.key.startsWith("gen_ai.output") || a.key.startsWith("tokentrace.content")), []);
    assert.equal(span.attributes.find((a) => a.key === "gen_ai.usage.input_tokens")?.value.intValue, "5", "the span itself is whole");
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_unavailable" }), 2, "one per call that would have captured");
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", { route: "chat", model: "m" }), 10);
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), undefined);
    assert.equal(vm.pendingHttpCalls(), 0);
    assert.ok(vm.stats.names().every((n) => !n.includes("ana")));
  });

  it("the content module, same policy: captures and counts no content_unavailable", async () => {
    const vm = await loadContentFilter({ clock: new ManualClock(), random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", content: { enabled: true } } }, clusters: { otel: receiver.url } });
    await run(vm);
    assert.ok(receiver.spans[0]!.attributes.some((a) => a.key === "gen_ai.input.messages"));
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "content_unavailable" }), undefined);
    assert.equal(vm.stats.value("tokentrace_content_captured_total"), 1);
  });
});
