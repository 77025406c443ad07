// docs/demo-lora.md's walk-through, end to end: the whole demo stack with LoRA on (real filter.wasm
// on the emulated Envoy host, the simulated vLLM server with two adapters, the real pipeline and
// control plane) and real Prometheus evaluating the alert rules and the per-adapter recording rules
// of istio/observability/. The page's block of curl and jq is run as written with bash: it names
// both adapters under tokentrace-sim-1, and sql-lora, whose calls carry the rows retrieved for their
// question, is the slow one on every call: several times chat-de's prompt tokens and TTFT P50; the
// errors table names the models that fail and how (the server's 2% of 429 and 500 answers).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import { query, until } from "./gpu-scenario-support.js";
import { DEMO_MODEL, startDemoStack, type DemoStack } from "./stack.js";

/** The sh block of docs/demo-lora.md that queries the running demo. */
function loraWalkthrough(): string {
  const doc = readFileSync(new URL("../../docs/demo-lora.md", import.meta.url), "utf8");
  assert.ok(doc.startsWith("# Which adapter is slow? LoRA on the demo\n"), "docs/demo-lora.md has the walk-through");
  const block = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.startsWith("PROM="));
  assert.ok(block, "its block of queries");
  return block;
}

test("docs/demo-lora.md (LoRA on the demo: two adapters of tokentrace-sim-1, real pipeline, Prometheus with the tokentrace.lora-adapters recording rules, control plane): its block run as written names both adapters under the base model, and sql-lora is slow on every call, for its prompts", { timeout: 280_000 }, async () => {
  assert.equal(spawnSync("prometheus", ["--version"], { stdio: "ignore" }).status, 0, "prometheus is missing: run `make test-deps`");
  const block = loraWalkthrough();
  const stack: DemoStack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), errorRate: 0.02, scrapeIntervalMs: 1000, prometheus: "auto", lora: true });
  try {
    const url = stack.prometheus!.url;
    // Both adapters recorded per base model, and on the control plane's table with their calls.
    await until("the recording rules to give both adapters a TTFT P99", async () => (await query(url, "namespace_base_model_model:tokentrace_llm_ttft_ms:histogram_quantile_rate5m")).length === 2, 180_000);
    // Medians of a few calls are the start's (cold prefixes, a stack warming up): as the page's reader, a minute of calls.
    await until("30 streaming calls of each adapter and of the base model", async () => {
      const calls = await query(url, 'sum by (model) (tokentrace_llm_ttft_ms_bucket{le="+Inf"})');
      return calls.length === 3 && calls.every((c) => c.value >= 30);
    }, 180_000);
    await until("the dashboard's LoRA table to give both adapters their calls", async () => {
      const body = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/models?namespace=demo&range=300`)).json()) as { models: { adapters: { ttftP99Ms: number | null }[] }[] };
      return body.models.flatMap((m) => m.adapters).filter((a) => a.ttftP99Ms !== null).length === 2;
    }, 60_000);

    const run = async (): Promise<string> => (await promisify(execFile)("bash", ["-e", "-o", "pipefail", "-c", block], { env: { PATH: process.env.PATH ?? "", PROM: url, CP: stack.controlPlaneUrl } })).stdout;
    const told = (out: string): boolean => ["sql-lora", "chat-de"].every((a) => new RegExp(`^${a} TTFT P50 \\d+ ms$`, "m").test(out) && new RegExp(`^${a} \\d+ prompt tokens per call$`, "m").test(out)) && / calls failed /.test(out);
    let stdout = await run();
    for (let tries = 1; tries < 8 && !told(stdout); tries++) {
      await new Promise((r) => setTimeout(r, 5000));
      stdout = await run();
    }
    const lines = stdout.trim().split("\n");
    const value = (re: RegExp): number => Number(re.exec(stdout)?.[1] ?? NaN);
    // 1. The adapters and their base model, from the server's /v1/models.
    assert.deepEqual(lines.filter((l) => l.startsWith("adapter ")).sort(), [`adapter chat-de of ${DEMO_MODEL}`, `adapter sql-lora of ${DEMO_MODEL}`], `1. the adapters:\n${stdout}`);
    // 2. P99 TTFT and duration of each, in ms.
    for (const adapter of ["sql-lora", "chat-de"]) for (const histogram of ["ttft", "duration"]) assert.ok(lines.some((l) => new RegExp(`^${adapter} tokentrace_llm_${histogram}_ms P99 \\d+ ms$`).test(l)), `2. ${adapter} ${histogram}:\n${stdout}`);
    // 3. Why: sql-lora's calls carry about 4,000 tokens of retrieved rows beside the tenants' 1,000-token system prompt.
    const sqlTokens = value(/^sql-lora (\d+) prompt tokens per call$/m);
    const chatTokens = value(/^chat-de (\d+) prompt tokens per call$/m);
    assert.ok(chatTokens > 900 && chatTokens < 1200, `3. chat-de's prompts: the system prompt and a line:\n${stdout}`);
    assert.ok(sqlTokens > 3 * chatTokens, `3. sql-lora's prompts several times chat-de's:\n${stdout}`);
    // 4. Every call, not only the tail: sql-lora's median TTFT is several times chat-de's and the base model's.
    const sqlP50 = value(/^sql-lora TTFT P50 (\d+) ms$/m);
    assert.ok(sqlP50 > 2 * value(/^chat-de TTFT P50 (\d+) ms$/m) && sqlP50 > 2 * value(new RegExp(`^${DEMO_MODEL} TTFT P50 (\\d+) ms$`, "m")), `4. TTFT P50:\n${stdout}`);
    // 5. The control plane's table: both adapters of the base model, with their calls.
    const row = (adapter: string): RegExpExecArray | null => new RegExp(`^${DEMO_MODEL} ${adapter}: ([\\d.]+) calls/s, ([\\d.]+) tokens/s in, TTFT P99 ([\\d.]+) ms, duration P99 ([\\d.]+) ms, loaded on llm-sim-0$`, "m").exec(stdout);
    const sqlRow = row("sql-lora");
    const chatRow = row("chat-de");
    assert.ok(sqlRow && chatRow, `5. the table's rows:\n${stdout}`);
    assert.ok(Number(sqlRow[2]) > 2 * Number(chatRow[2]), `5. sql-lora's tokens/s in several times chat-de's:\n${stdout}`);
    // 6. The errors table: the demo server's 2% of 429 and 500 answers, per model, by error.type (the status code).
    const failures = lines.filter((l) => l.includes(" calls failed "));
    assert.ok(failures.length > 0, `6. some failed calls:\n${stdout}`);
    for (const l of failures) assert.match(l, new RegExp(`^(sql-lora|chat-de|${DEMO_MODEL}) on \\S+: \\d+ of \\d+ calls failed \\((429|500) x\\d+(, (429|500) x\\d+)?\\)$`), `6. ${l}`);
  } finally {
    await stack.close();
  }
});
