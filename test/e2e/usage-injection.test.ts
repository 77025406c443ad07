// llm.requestUsageInStream end to end: the local proxy runs the real filter.wasm (emulated Envoy
// host) in front of the simulated OpenAI-compatible server, which sends usage in the last stream
// chunk only when the request asked for it.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { startLocalProxy, type LocalProxy } from "../host/local-proxy.js";
import { startLlmUpstream, type LlmUpstream } from "../demo/llm-upstream.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";

let upstream: LlmUpstream;
before(async () => {
  upstream = await startLlmUpstream({ model: "sim-llm" });
});
after(async () => upstream.close());

async function streamThrough(requestUsageInStream: boolean): Promise<{ proxy: LocalProxy; text: string }> {
  const proxy = await startLocalProxy({
    wasm: requireArtifact(FILTER_WASM),
    upstream: upstream.url,
    routes: [{ prefix: "/v1/chat", name: "chat" }],
    pluginConfig: JSON.stringify({ llm: { requestUsageInStream } }),
    statTags: [...FILTER_STAT_TAGS],
  });
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sim-llm", stream: true, max_tokens: 7, messages: [{ role: "user", content: "hello there" }] }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  await proxy.close();
  return { proxy, text };
}

it("a streaming request without stream_options gets usage in its last chunk when the filter asks for it (emulated Envoy host)", async () => {
  const { proxy, text } = await streamThrough(true);
  assert.match(text, /"usage":\{/);
  const labels = { route: "chat", model: "sim-llm" };
  assert.equal(proxy.vm.stats.value("tokentrace_llm_output_tokens_total", labels), 7);
  assert.equal(proxy.vm.stats.value("tokentrace_llm_usage_missing_total", labels), 0);
});

it("without the option the same request streams without usage, and it is counted missing (emulated Envoy host)", async () => {
  const { proxy, text } = await streamThrough(false);
  assert.doesNotMatch(text, /"usage"/);
  assert.equal(proxy.vm.stats.value("tokentrace_llm_usage_missing_total", { route: "chat", model: "sim-llm" }), 1);
});
