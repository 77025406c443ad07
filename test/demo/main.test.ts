// `make demo` end to end: main.ts as a child process, real curl-like requests through it to the
// emulated LLM server, the stats it shows, and a clean stop on SIGINT.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

test("make demo (emulated LLM upstream): prints URLs, proxies JSON and SSE through filter.wasm, shows stats, stops on SIGINT", async () => {
  assert.ok(existsSync(`${root}/build/filter.wasm`), "build/filter.wasm is missing: run `make build` first");
  const child = spawn(process.execPath, ["--import", "tsx", "test/demo/main.ts"], {
    cwd: root,
    env: { ...process.env, TOKENTRACE_DEMO_PORT: "0", TOKENTRACE_DEMO_ADMIN_PORT: "0", TOKENTRACE_DEMO_TTFT_MS: "0", TOKENTRACE_DEMO_TOKENS_PER_SECOND: "0", TOKENTRACE_DEMO_ERROR_RATE: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("Ctrl-C stops it.")) resolve();
      });
      void exited.then((code) => reject(new Error(`demo exited early with ${code}: ${out}${err}`)));
    });
    const proxy = /proxy: +(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
    const stats = /stats: +(http:\/\/127\.0\.0\.1:\d+\/stats\/prometheus)/.exec(out)?.[1];
    assert.ok(proxy && stats, out);
    assert.match(out, /curl -sS http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions -H 'content-type: application\/json' -d '\{"model":"tokentrace-sim-1","messages"/);
    assert.match(out, /curl -sSN http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions .*"stream":true,"stream_options":\{"include_usage":true\}/);
    assert.match(out, /filter configuration accepted/);

    const json = await fetch(`${proxy}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "Say hello" }] }) });
    assert.equal(json.status, 200);
    const body = (await json.json()) as { usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }; model: string };
    assert.deepEqual(body.usage, { prompt_tokens: 3, completion_tokens: 12, total_tokens: 15 });
    assert.equal(body.model, "tokentrace-sim-1");

    const sse = await fetch(`${proxy}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] }) });
    assert.equal(sse.headers.get("content-type"), "text/event-stream");
    const events = (await sse.text()).split("\n\n").filter((e) => e !== "");
    assert.equal(events.length, 12 + 1 + 1 + 1, "12 tokens, the finish chunk, the usage chunk, [DONE]");
    assert.equal(events.at(-1), "data: [DONE]");
    assert.deepEqual((JSON.parse(events.at(-2)!.slice(6)) as { usage: unknown }).usage, { prompt_tokens: 1, completion_tokens: 12, total_tokens: 13 });

    // Counters reach Envoy's stats on the filter's next tick (stats.flushIntervalMs, 1 s by default).
    let text = "";
    for (let attempt = 0; attempt < 50 && !/^tokentrace_requests_total\{route="chat",status_class="2xx"\} 2$/m.test(text); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
      text = await (await fetch(stats)).text();
    }
    assert.match(text, /^# TYPE tokentrace_requests_total counter$/m);
    assert.match(text, /^tokentrace_requests_total\{route="chat",status_class="2xx"\} 2$/m);
    assert.doesNotMatch(text, /___/, "every TAG=.=VALUE;.; the filter encodes is extracted (unextracted ones print as ___)");
  } finally {
    child.kill("SIGINT");
  }
  assert.equal(await exited, 0, err);
  assert.match(out, /SIGINT: stopping\nstopped\n$/);
});
