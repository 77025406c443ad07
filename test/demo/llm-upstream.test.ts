// The emulated OpenAI-compatible server the demo fronts: shapes of every endpoint, SSE framing and
// usage placement, the injected error rate, and LoRA adapters as vLLM lists and serves them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startLlmUpstream, type LlmUpstreamOptions } from "./llm-upstream.js";
import type { Engine, EngineRequest } from "./engine.js";
import { parseModelList } from "../../control-plane/src/engine/model-list.js";

async function withUpstream(opts: LlmUpstreamOptions, fn: (url: string) => Promise<void>): Promise<void> {
  const up = await startLlmUpstream(opts);
  try {
    await fn(up.url);
  } finally {
    await up.close();
  }
}

const post = (url: string, body: unknown): Promise<Response> => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

test("emulated LLM: chat completion JSON carries model, usage and finish_reason (length when max_tokens cuts it)", async () => {
  await withUpstream({ model: "m-default" }, async (url) => {
    const full = (await (await post(`${url}/v1/chat/completions`, { messages: [{ role: "user", content: "12345678" }] })).json()) as Record<string, unknown>;
    assert.equal(full.model, "m-default");
    assert.equal(full.object, "chat.completion");
    assert.deepEqual(full.usage, { prompt_tokens: 2, completion_tokens: 12, total_tokens: 14 });
    assert.equal((full.choices as Array<{ finish_reason: string }>)[0]!.finish_reason, "stop");
    const cut = (await (await post(`${url}/v1/chat/completions`, { model: "other", max_tokens: 3, messages: [] })).json()) as Record<string, unknown>;
    assert.equal(cut.model, "other");
    assert.deepEqual(cut.usage, { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
    assert.equal((cut.choices as Array<{ finish_reason: string; message: { content: string } }>)[0]!.message.content, "tok0 tok1 tok2 ");
    assert.equal((cut.choices as Array<{ finish_reason: string }>)[0]!.finish_reason, "length");
  });
});

test("emulated LLM: streaming sends one data event per token, a finish event, usage only when asked, then [DONE]", async () => {
  await withUpstream({ defaultMaxTokens: 3 }, async (url) => {
    for (const includeUsage of [true, false]) {
      const res = await post(`${url}/v1/chat/completions`, { stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}), messages: [{ role: "user", content: "hi" }] });
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      const events = (await res.text()).split("\n\n").filter((e) => e !== "");
      assert.ok(events.every((e) => e.startsWith("data: ")));
      assert.equal(events.at(-1), "data: [DONE]");
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ delta?: { content?: string }; finish_reason: string | null }>; usage?: unknown });
      assert.deepEqual(chunks.slice(0, 3).map((c) => c.choices[0]!.delta!.content), ["tok0 ", "tok1 ", "tok2 "]);
      assert.equal(chunks[3]!.choices[0]!.finish_reason, "stop");
      assert.equal(chunks.length, includeUsage ? 5 : 4);
      if (includeUsage) assert.deepEqual(chunks[4], { ...chunks[4], choices: [], usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 } });
      assert.ok(chunks.slice(0, 4).every((c) => c.usage === undefined));
    }
  });
});

test("emulated LLM: text completions, embeddings and the model list", async () => {
  await withUpstream({}, async (url) => {
    const text = (await (await post(`${url}/v1/completions`, { prompt: "abcd", max_tokens: 2 })).json()) as { object: string; choices: Array<{ text: string }>; usage: unknown };
    assert.equal(text.object, "text_completion");
    assert.equal(text.choices[0]!.text, "tok0 tok1 ");
    assert.deepEqual(text.usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    const emb = (await (await post(`${url}/v1/embeddings`, { input: ["abcdefgh", "x"] })).json()) as { data: Array<{ index: number; embedding: number[] }>; usage: unknown };
    assert.deepEqual(emb.data.map((d) => [d.index, d.embedding.length]), [[0, 8], [1, 8]]);
    assert.deepEqual(emb.usage, { prompt_tokens: 3, total_tokens: 3 });
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> };
    assert.deepEqual(models.data.map((m) => m.id), ["tokentrace-sim-1"]);
    assert.equal((await fetch(`${url}/v2/nope`)).status, 404);
  });
});

test("emulated LLM: the error rate answers 429 (with retry-after) or 500 by the injected random source", async () => {
  const draws = [0.1, 0.2, 0.1, 0.9, 0.6];
  await withUpstream({ errorRate: 0.5, random: () => draws.shift() ?? 0.99 }, async (url) => {
    const a = await post(`${url}/v1/chat/completions`, {});
    assert.deepEqual([a.status, a.headers.get("retry-after"), ((await a.json()) as { error: { type: string } }).error.type], [429, "1", "rate_limit_error"]);
    const b = await post(`${url}/v1/chat/completions`, {});
    assert.deepEqual([b.status, ((await b.json()) as { error: { type: string } }).error.type], [500, "server_error"]);
    const c = await post(`${url}/v1/chat/completions`, {});
    assert.equal(c.status, 200);
    await c.text();
  });
});

test("emulated LLM with LoRA modules: GET /v1/models lists each adapter with the base model as parent, as vLLM does; a request naming one runs as that adapter's, with KV blocks of its own", async () => {
  const submitted: EngineRequest[] = [];
  // The engine's side of the contract: what the server asks of it; each request done at once.
  const engine = {
    submit(req: EngineRequest) {
      submitted.push(req);
      for (let i = 0; i < req.outputTokens; i++) req.onToken?.(i);
      req.onDone({ arrivalMs: 0, scheduledMs: 0, firstTokenMs: 0, finishedMs: 0, promptTokens: req.promptTokens, outputTokens: req.outputTokens, preemptions: 0 });
      return { cancel: () => undefined };
    },
  } as unknown as Engine;
  const loraModules = [{ name: "sql-lora", path: "/adapters/sql-lora" }, { name: "chat-de", path: "/adapters/chat-de" }];
  await withUpstream({ model: "base-1", engine, loraModules, addedPrompt: () => ({ prefix: { id: "tenant-0", tokens: 100 }, contextTokens: 0 }) }, async (url) => {
    const list = (await (await fetch(`${url}/v1/models`)).json()) as { object: string; data: Record<string, unknown>[] };
    assert.equal(list.object, "list");
    assert.deepEqual(list.data.map((c) => [c.id, c.object, c.owned_by, c.root, c.parent, c.max_model_len]), [
      ["base-1", "model", "vllm", "base-1", null, 8192],
      ["sql-lora", "model", "vllm", "/adapters/sql-lora", "base-1", null],
      ["chat-de", "model", "vllm", "/adapters/chat-de", "base-1", null],
    ]);
    // Every ModelCard field, ModelPermission's defaults.
    assert.deepEqual(Object.keys(list.data[1]!), ["id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission"]);
    assert.deepEqual({ ...(list.data[1]!.permission as Record<string, unknown>[])[0], id: "-" }, { id: "-", object: "model_permission", created: list.data[1]!.created, allow_create_engine: false, allow_sampling: true, allow_logprobs: true, allow_search_indices: false, allow_view: true, allow_fine_tuning: false, organization: "*", group: null, is_blocking: false });
    // The control plane's reader of the list relates each adapter to the base model.
    const parsed = parseModelList(JSON.stringify(list));
    assert.deepEqual(parsed.ok ? [...parsed.parents] : parsed, [["sql-lora", "base-1"], ["chat-de", "base-1"]]);

    for (const model of ["sql-lora", "base-1", "unknown"]) {
      const res = (await (await post(`${url}/v1/chat/completions`, { model, max_tokens: 2, messages: [{ role: "user", content: "hi" }] })).json()) as { model: string };
      assert.equal(res.model, model);
    }
    assert.deepEqual(submitted.map((r) => [r.adapter, r.prefix?.id]), [["sql-lora", "sql-lora\u0000tenant-0"], [undefined, "tenant-0"], [undefined, "tenant-0"]], "only a loaded adapter's name makes a LoRA request; its cached prefix is its own");
  });
});

test("emulated LLM without LoRA modules: the model list is the one model, as before", async () => {
  await withUpstream({ model: "base-1" }, async (url) => {
    assert.deepEqual(await (await fetch(`${url}/v1/models`)).json(), { object: "list", data: [{ id: "base-1", object: "model", created: 1767225600, owned_by: "tokentrace" }] });
  });
});
