// `make demo` end to end: main.ts as a child process on ephemeral ports, real curl-like requests
// through it to the emulated LLM server, the stats it shows, the control plane and dashboard it
// serves, Prometheus receiving the pipeline's remote write, and a clean stop on SIGINT/SIGTERM; then
// the same on a machine without Prometheus.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const EPHEMERAL = {
  TOKENTRACE_DEMO_PORT: "0",
  TOKENTRACE_DEMO_ADMIN_PORT: "0",
  TOKENTRACE_DEMO_CONTROL_PLANE_PORT: "0",
  TOKENTRACE_DEMO_DCGM_PORT: "0",
  TOKENTRACE_DEMO_ERROR_RATE: "0",
  TOKENTRACE_DEMO_SCRAPE_INTERVAL_MS: "500",
};

interface Demo {
  child: ChildProcessWithoutNullStreams;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

/** Starts main.ts and resolves once it printed "Ctrl-C stops it.". */
async function startDemo(env: Record<string, string>): Promise<Demo> {
  assert.ok(existsSync(`${root}/build/filter.wasm`), "build/filter.wasm is missing: run `make build` first");
  const child = spawn(process.execPath, ["--import", "tsx", "test/demo/main.ts"], { cwd: root, env: { ...process.env, ...EPHEMERAL, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("Ctrl-C stops it.")) resolve();
    });
    void exited.then((code) => reject(new Error(`demo exited early with ${code}: ${out}${err}`)));
  });
  return { child, out: () => out, err: () => err, exited };
}

function urlOf(out: string, name: string, path = ""): string {
  const m = new RegExp(`^  ${name}: +(http://127\\.0\\.0\\.1:\\d+${path.replace(/[/.]/g, "\\$&")})`, "m").exec(out);
  assert.ok(m, `no ${name} URL in:\n${out}`);
  return m[1]!;
}

async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("make demo (emulated Envoy, simulated LLM and dcgm-exporter): prints URLs, proxies JSON and SSE through filter.wasm, pulls the seeded policy, ships to Prometheus, stops on SIGINT", { timeout: 90_000 }, async () => {
  const demo = await startDemo({ TOKENTRACE_DEMO_LOAD_RPS: "0" });
  try {
    const out = demo.out();
    const proxy = urlOf(out, "proxy");
    const stats = urlOf(out, "stats", "/stats/prometheus");
    const dashboard = urlOf(out, "dashboard", "/dashboard");
    const controlPlane = urlOf(out, "control plane", "/v1/policies");
    const dcgm = urlOf(out, "dcgm-exporter", "/metrics");
    const prometheus = urlOf(out, "prometheus");
    const token = /^ {2}write token: +(demo-[0-9a-f]{24}) /m.exec(out)?.[1];
    assert.ok(token, out);
    assert.match(out, /curl -sS http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions -H 'content-type: application\/json' -d '\{"model":"tokentrace-sim-1","messages"/);
    assert.match(out, /curl -sSN http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions .*"stream":true,"stream_options":\{"include_usage":true\}/);
    assert.match(out, /filter configuration accepted; policy demo-sampling pulled every 1000 ms/);

    // The control plane holds the seeded policy, created with the demo token; the dashboard page is served.
    const policies = (await (await fetch(controlPlane)).json()) as { items: { version: string; updatedBy: string; policy: { name: string } }[] };
    assert.deepEqual(policies.items.map((p) => [p.policy.name, p.version, p.updatedBy]), [["demo-sampling", "1", "demo"]]);
    const page = await fetch(dashboard);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<title>tokentrace dashboard<\/title>/);
    const gpu = await (await fetch(dcgm)).text();
    // dcgm-exporter d5e5f51 writes pod_uid only with --kubernetes-enable-pod-uid (transformation/kubernetes.go Process).
    assert.match(gpu, /^DCGM_FI_DEV_GPU_UTIL\{gpu="0",.*namespace="demo",pod="llm-sim-0"\} 0$/m, "idle GPU of the simulated pod");

    const json = await fetch(`${proxy}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "Say hello" }] }) });
    assert.equal(json.status, 200);
    const body = (await json.json()) as { usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }; model: string };
    // The normal scenario's 1000-token system prompt counts as prompt tokens, as it would on a real server.
    assert.deepEqual(body.usage, { prompt_tokens: 1003, completion_tokens: 12, total_tokens: 1015 });
    assert.equal(body.model, "tokentrace-sim-1");

    const sse = await fetch(`${proxy}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] }) });
    assert.equal(sse.headers.get("content-type"), "text/event-stream");
    const events = (await sse.text()).split("\n\n").filter((e) => e !== "");
    assert.equal(events.length, 12 + 1 + 1 + 1, "12 tokens, the finish chunk, the usage chunk, [DONE]");
    assert.equal(events.at(-1), "data: [DONE]");
    assert.deepEqual((JSON.parse(events.at(-2)!.slice(6)) as { usage: unknown }).usage, { prompt_tokens: 1001, completion_tokens: 12, total_tokens: 1013 });

    // Counters reach Envoy's stats on the filter's next tick; the seeded policy was pulled once.
    const text = await until("two chat requests in the stats", async () => (await fetch(stats)).text(), (t) => /^tokentrace_requests_total\{route="chat",status_class="2xx"\} 2$/m.test(t) && /^tokentrace_policy_updates_total\{\} 1$/m.test(t));
    assert.match(text, /^# TYPE tokentrace_requests_total counter$/m);
    assert.doesNotMatch(text, /___/, "every TAG=.=VALUE;.; the filter encodes is extracted (unextracted ones print as ___)");

    // The pipeline scrapes the proxy and the dcgm sim and remote-writes the joined series to Prometheus.
    const query = async (q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> =>
      ((await (await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }).data.result;
    const requests = await until("the chat request count in Prometheus", () => query('tokentrace_requests_total{route="chat",status_class="2xx"}'), (r) => r.length === 1 && r[0]!.value[1] === "2");
    assert.equal(requests[0]!.metric.pod, "llm-sim-0");
    assert.equal(requests[0]!.metric.namespace, "demo");
    assert.equal(requests[0]!.metric.gpu_model, "NVIDIA H100 80GB HBM3", "joined with the simulated GPU");
    const power = await until("the pod's GPU power in Prometheus", () => query('tokentrace_pod_gpu_power_watts{pod="llm-sim-0"}'), (r) => r.length === 1);
    assert.ok(Number(power[0]!.value[1]) >= 70 && Number(power[0]!.value[1]) <= 700, `the simulated H100 draws 70 W idle to 700 W busy: ${power[0]!.value[1]}`);
  } finally {
    demo.child.kill("SIGINT");
  }
  assert.equal(await demo.exited, 0, demo.err());
  assert.match(demo.out(), /SIGINT: stopping\nstopped\n$/);
});

test("make demo on a machine without Prometheus: says so, still serves the stack and the load line, stops on SIGTERM", { timeout: 60_000 }, async () => {
  // No PATH entry holds a `prometheus` binary.
  const demo = await startDemo({ PATH: "/nonexistent", TOKENTRACE_DEMO_LOAD_RPS: "20" });
  try {
    const out = demo.out();
    assert.match(out, /^ {2}prometheus: +not started: prometheus is not installed \(make test-deps installs it\): the pipeline runs without a remote-write target$/m);
    const series = urlOf(out, "dashboard", "/dashboard").replace(/\/dashboard$/, "/v1/dashboard/series?route=chat");
    // The load generator's traffic becomes dashboard points once the pipeline has scraped twice.
    const body = await until("dashboard points for the chat route", async () => (await fetch(series)).json() as Promise<{ columns?: { t: number[] } }>, (b) => (b.columns?.t.length ?? 0) >= 1);
    assert.ok(body.columns!.t.length >= 1);
  } finally {
    demo.child.kill("SIGTERM");
  }
  assert.equal(await demo.exited, 0, demo.err());
  assert.match(demo.out(), /SIGTERM: stopping\nstopped\n$/);
});

test("make demo with taken ports: one message before anything starts, naming every taken port and the variable that moves it", { timeout: 60_000 }, async () => {
  const holders = [createServer(() => undefined), createServer(() => undefined)];
  for (const h of holders) await new Promise<void>((resolve) => h.listen(0, "127.0.0.1", resolve));
  const [controlPlanePort, proxyPort] = holders.map((h) => (h.address() as AddressInfo).port) as [number, number];
  try {
    const child = spawn(process.execPath, ["--import", "tsx", "test/demo/main.ts"], { cwd: root, env: { ...process.env, ...EPHEMERAL, TOKENTRACE_DEMO_PROMETHEUS: "off", TOKENTRACE_DEMO_LOAD_RPS: "0", TOKENTRACE_DEMO_CONTROL_PLANE_PORT: String(controlPlanePort), TOKENTRACE_DEMO_PORT: String(proxyPort) } });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    assert.equal(code, 1, err);
    const expected = [
      { port: controlPlanePort, variable: "TOKENTRACE_DEMO_CONTROL_PLANE_PORT" },
      { port: proxyPort, variable: "TOKENTRACE_DEMO_PORT" },
    ].sort((a, b) => a.port - b.port);
    assert.equal(
      err.trimEnd(),
      ["demo failed to start: 2 ports are already in use on 127.0.0.1; set each variable below to another port (0 picks a free one):", ...expected.map((e) => `  port ${e.port}: ${e.variable}`)].join("\n"),
    );
    assert.equal(out, "", "nothing started before the message");
  } finally {
    for (const h of holders) await new Promise<void>((resolve) => h.close(() => resolve()));
  }
});
