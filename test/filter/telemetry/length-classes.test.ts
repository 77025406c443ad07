// Latency by length class (issue #26 item 4): the TTFT histogram carries the request's input-token
// class, the decode and duration histograms its output-token class, so a P99 made of long prompts
// can be told from a slow engine. Boundaries are inclusive upper bounds; a count the response did
// not report is `unknown`. Real filter.wasm under the emulated Envoy host.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { countingRandom, llmSamples, loadFilter } from "../support.js";

const L = { route: "chat", model: "m" };

/** One streamed chat call: 100 ms to the first content, 50 ms of decode; usage when the counts are given. */
function streamed(vm: FilterVm, clock: ManualClock, promptTokens?: number, completionTokens?: number): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ["content-type", "application/json"]], false);
  s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }), true);
  clock.advanceMs(100);
  s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
  s.responseBody(`data: ${JSON.stringify({ model: "m", choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] })}\n\n`, false);
  clock.advanceMs(50);
  const usage = promptTokens === undefined ? {} : { usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens } };
  s.responseBody(`data: ${JSON.stringify({ model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], ...usage })}\n\ndata: [DONE]\n\n`, true);
  s.end();
}

const schema = JSON.parse(readFileSync(new URL("../../../filter/config.schema.json", import.meta.url), "utf8")) as { properties: { llm: { properties: { lengthClasses: { properties: Record<string, { default: number[] }> } } } } };

describe("latency by length class (filter.wasm, emulated Envoy host)", () => {
  // Default boundaries: input 512 / 2048 / 8192, output 64 / 256 / 1024 tokens; the cases below
  // observe them through the filter, and the schema documents the same.
  it("the schema's defaults are the boundaries the cases below observe", () => {
    const sides = schema.properties.llm.properties.lengthClasses.properties;
    assert.deepEqual(sides.inputTokens!.default, [512, 2048, 8192]);
    assert.deepEqual(sides.outputTokens!.default, [64, 256, 1024]);
  });
  const cases: Array<[string, number | undefined, number | undefined, string, string]> = [
    ["a short turn", 12, 3, "le512", "le64"],
    ["exactly on the first boundaries", 512, 64, "le512", "le64"],
    ["one past them", 513, 65, "le2048", "le256"],
    ["long context, a long answer", 8192, 1024, "le8192", "le1024"],
    ["past the last boundaries", 8193, 1025, "gt8192", "gt1024"],
    ["no usage in the response", undefined, undefined, "unknown", "unknown"],
  ];
  for (const [name, prompt, completion, input, output] of cases) {
    it(`${name}: TTFT under input_length=${input}, decode and duration under output_length=${output}`, async () => {
      const clock = new ManualClock(1_700_000_000_000_000_000n);
      const vm = await loadFilter({ clock, random: countingRandom() });
      streamed(vm, clock, prompt, completion);
      assert.deepEqual(vm.stats.samples("tokentrace_llm_ttft_ms", { ...L, input_length: input }), [100]);
      assert.deepEqual(vm.stats.samples("tokentrace_llm_decode_ms", { ...L, output_length: output }), [50]);
      assert.deepEqual(vm.stats.samples("tokentrace_llm_duration_ms", { ...L, output_length: output }), [150]);
      // The call counted under its input class (the pipeline's input token usage), unless its usage is not known.
      assert.equal(vm.stats.value("tokentrace_llm_prompts_total", { ...L, input_length: input }), input === "unknown" ? undefined : 1);
      // The other classes were never defined: a class no request fell in costs no series.
      assert.equal(vm.stats.names().filter((n) => n.includes("input_length=")).length, input === "unknown" ? 1 : 2);
      assert.equal(vm.stats.names().filter((n) => n.includes("output_length=")).length, 2);
    });
  }

  it("configured boundaries name the classes; an empty list leaves that side's histograms without the label", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom(), config: { llm: { lengthClasses: { inputTokens: [100, 1000], outputTokens: [] } } } });
    streamed(vm, clock, 150, 2000);
    streamed(vm, clock, 100, 1);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_ttft_ms", { ...L, input_length: "le1000" }), [100]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_ttft_ms", { ...L, input_length: "le100" }), [100]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_decode_ms", L), [50, 50]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_duration_ms", L), [150, 150]);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [100, 100], "summed over the classes, the figure is the pair's");
    assert.deepEqual([vm.stats.value("tokentrace_llm_prompts_total", { ...L, input_length: "le1000" }), vm.stats.value("tokentrace_llm_prompts_total", { ...L, input_length: "le100" })], [1, 1]);
    const off = await loadFilter({ clock, random: countingRandom(), config: { llm: { lengthClasses: { inputTokens: [] } } } });
    streamed(off, clock, 150, 2000);
    assert.deepEqual(off.stats.names().filter((n) => n.includes("tokentrace_llm_prompts_total")), [], "no input classes, no calls per class");
  });

  it("a configuration push with the same boundaries defines no histogram again (Envoy keeps every id a definition hands out)", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const config = { llm: { lengthClasses: { inputTokens: [100, 1000] } }, spans: { cluster: "otel", keep: { live: [{ route: "chat", durationMs: 500 }] } } };
    const vm = await loadFilter({ clock, random: countingRandom(), config });
    const defines = (): number => vm.hostCallsByName()["env.proxy_define_metric"] ?? 0;
    streamed(vm, clock, 150, 3);
    const before = defines();
    for (let push = 0; push < 3; push++) {
      config.spans.keep.live[0]!.durationMs += 10; // as the control plane's live thresholds move
      assert.equal(vm.configure(JSON.stringify(config)), true);
      streamed(vm, clock, 150, 3);
    }
    assert.equal(defines(), before, "the classes of the pushes are the ones already defined");
    assert.deepEqual(vm.stats.samples("tokentrace_llm_ttft_ms", { ...L, input_length: "le1000" }), [100, 100, 100, 100]);
  });

  const invalid: Array<[string, unknown, string]> = [
    ["more than three boundaries", { inputTokens: [1, 2, 3, 4] }, "llm.lengthClasses.inputTokens: must be an array of at most 3 token counts"],
    ["not increasing", { outputTokens: [64, 64] }, "llm.lengthClasses.outputTokens[1]: must exceed the boundary before it"],
    ["zero tokens", { inputTokens: [0] }, "llm.lengthClasses.inputTokens[0]: must be an integer between 1 and 10000000"],
    ["a fraction", { outputTokens: [1.5] }, "llm.lengthClasses.outputTokens[0]: must be an integer between 1 and 10000000"],
    ["not an array", { inputTokens: 512 }, "llm.lengthClasses.inputTokens: must be an array of at most 3 token counts"],
    ["an unknown side", { promptTokens: [512] }, "llm.lengthClasses.promptTokens: unknown key"],
  ];
  for (const [name, classes, message] of invalid) {
    it(`refuses ${name}, naming the field, and the classes in force stay`, async () => {
      const clock = new ManualClock(1_700_000_000_000_000_000n);
      const vm = await loadFilter({ clock, random: countingRandom(), config: { llm: { lengthClasses: { inputTokens: [100] } } } });
      assert.equal(vm.configure(JSON.stringify({ llm: { lengthClasses: classes } })), false);
      assert.ok(vm.logs.some((l) => l.message.endsWith(message)), `logged: ${vm.logs.map((l) => l.message).join(" | ")}`);
      streamed(vm, clock, 150, 3);
      assert.deepEqual(vm.stats.samples("tokentrace_llm_ttft_ms", { ...L, input_length: "gt100" }), [100]);
    });
  }
});
