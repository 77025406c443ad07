// The demo's load generator against the simulated LLM server (real HTTP on 127.0.0.1): the request
// mix and its LoRA adapters, error counting, the rate window on an injected clock, and a stop that leaves nothing in flight.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startLlmUpstream } from "./llm-upstream.js";
import { adapterContext, formatProgress, pickRequest, startLoad, withAdapter } from "./load.js";

test("pickRequest: 55% streaming chat, 20% chat, 15% completions, 10% embeddings", () => {
  assert.deepEqual(
    [0, 0.549, 0.55, 0.749, 0.75, 0.899, 0.9, 0.999].map((r) => {
      const { path, body } = pickRequest(r, 0);
      return `${path}${body.stream === true ? " stream" : ""}`;
    }),
    ["/v1/chat/completions stream", "/v1/chat/completions stream", "/v1/chat/completions", "/v1/chat/completions", "/v1/completions", "/v1/completions", "/v1/embeddings", "/v1/embeddings"],
  );
  assert.deepEqual(pickRequest(0, 6).body, { model: "tokentrace-sim-1", stream: true, stream_options: { include_usage: true }, max_tokens: 16, messages: [{ role: "user", content: "Summarise the plot of Hamlet in two sentences." }] });
});

test("formatProgress is one line", () => {
  assert.equal(formatProgress({ sent: 120, errors: 3, inFlight: 4, currentRps: 9.96, skipped: 0 }), "load: 120 sent, 3 errors, 4 in flight, 10.0 rps");
});

test("load against the simulated server (emulated errors): counts sent and failed requests, rate over the last 5 s of an injected clock, stops cleanly", async () => {
  // Every request fails (429 or 500): errors must equal completed requests.
  const upstream = await startLlmUpstream({ errorRate: 1 });
  let nowMs = 0;
  const load = startLoad({ url: upstream.url, rps: 200, nowMs: () => nowMs });
  try {
    const deadline = Date.now() + 10_000;
    while (load.progress().errors < 10) {
      assert.ok(Date.now() < deadline, JSON.stringify(load.progress()));
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await load.stop();
    await upstream.close();
  }
  const p = load.progress();
  assert.equal(p.inFlight, 0);
  const served = [...upstream.served.values()].reduce((a, b) => a + b, 0);
  assert.ok(p.errors >= 10 && p.errors <= p.sent && served <= p.sent, JSON.stringify({ p, served }));
  // Every completion happened at t = 0 of the injected clock: all inside the 5 s window, then none.
  assert.equal(p.currentRps, p.sent / 5);
  nowMs = 5001;
  assert.equal(load.progress().currentRps, 0);
});

test("withAdapter: a quarter of the completions to each adapter by the second draw, embeddings never; the adapter's context before the prompt, new rows for every request", () => {
  const adapters = [{ model: "sql-lora", share: 0.25, contextChars: 400 }, { model: "chat-de", share: 0.25 }];
  const chat = pickRequest(0, 6);
  const models = [0, 0.249, 0.25, 0.499, 0.5, 0.999].map((r) => withAdapter(chat, r, adapters, 6).body.model);
  assert.deepEqual(models, ["sql-lora", "sql-lora", "chat-de", "chat-de", "tokentrace-sim-1", "tokentrace-sim-1"]);
  assert.equal(withAdapter(pickRequest(0.95, 0), 0, adapters, 0).body.model, "tokentrace-sim-1", "embeddings stay on the base model");
  const sql = withAdapter(chat, 0, adapters, 6).body;
  assert.deepEqual(Object.keys(sql), Object.keys(chat.body), "model keeps its place, first");
  const content = (sql.messages as { content: string }[])[0]!.content;
  assert.equal(content, `${adapterContext(400, 6)}\nSummarise the plot of Hamlet in two sentences.`);
  assert.equal(adapterContext(400, 6).length, 400);
  assert.notEqual(adapterContext(400, 7).slice(0, 40), adapterContext(400, 6).slice(0, 40), "another request's rows differ from the first line: no cache holds them");
  assert.equal((chat.body.messages as { content: string }[])[0]!.content, "Summarise the plot of Hamlet in two sentences.", "the request picked is not changed");
  const text = withAdapter(pickRequest(0.8, 1), 0.1, adapters, 1).body;
  assert.equal(text.prompt, `${adapterContext(400, 1)}\nSummarise the plot of Hamlet in two sentences.`);
  // chat-de adds no context.
  assert.deepEqual(withAdapter(chat, 0.3, adapters, 6).body, { ...chat.body, model: "chat-de" });
});
