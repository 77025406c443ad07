// Pull mode end to end: the control plane (real express app on 127.0.0.1) and the local proxy
// running the real filter.wasm (emulated Envoy host) in front of the simulated LLM server. A policy
// written through the REST API changes the filter's sampling within one poll interval; a failed poll
// keeps the last good policy.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../host/index.js";
import { startLocalProxy, type LocalProxy, type TickTimers } from "../host/local-proxy.js";
import { startLlmUpstream, type LlmUpstream } from "../demo/llm-upstream.js";
import { adminToken, call, startTestApp, type TestApp } from "../control-plane/helpers.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";

const INTERVAL_MS = 1000;
let app: TestApp;
let upstream: LlmUpstream;
let proxy: LocalProxy;
const clock = new ManualClock(1_700_000_000_000_000_000n);
let tickFn: (() => void) | undefined;
const timers: TickTimers = {
  setInterval: (fn, ms) => {
    assert.equal(ms, INTERVAL_MS, "the filter ticks at its poll interval");
    tickFn = fn;
    return 1;
  },
  clearInterval: () => {
    tickFn = undefined;
  },
};

/** Lets one poll interval pass: the proxy's tick fires and the poll's answer is delivered. */
async function onePollInterval(): Promise<void> {
  clock.advanceMs(INTERVAL_MS);
  assert.ok(tickFn, "the filter asked for ticks");
  tickFn();
  await proxy.vm.settle();
}

async function chatRequest(): Promise<void> {
  const res = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.text();
}

const sampled = (): number => proxy.vm.stats.value("tokentrace_traces_sampled_total", { route: "chat" }) ?? 0;
const policy = (rate: number): unknown => ({
  name: "chat-sampling",
  target: { namespace: "llm", selector: { matchLabels: { app: "chat" } } },
  pluginConfig: { sampling: { defaultRate: rate }, stats: { flushIntervalMs: 0 } },
});

before(async () => {
  app = await startTestApp();
  upstream = await startLlmUpstream();
  proxy = await startLocalProxy({
    wasm: requireArtifact(FILTER_WASM),
    upstream: upstream.url,
    routes: [{ prefix: "/v1/chat", name: "chat" }],
    clusters: { "control-plane": app.url },
    pluginConfig: JSON.stringify({
      sampling: { defaultRate: 0 },
      stats: { flushIntervalMs: 0 }, // the test reads counters right after each request
      policySource: { cluster: "control-plane", workload: "llm.chat", intervalMs: INTERVAL_MS },
    }),
    statTags: [...FILTER_STAT_TAGS],
    clock,
    timers,
  });
});

after(async () => {
  await proxy.close();
  await upstream.close();
  await app.close();
});

it("a policy written through the REST API reaches the filter within one poll interval (emulated Envoy host, real control plane)", async () => {
  await onePollInterval();
  assert.equal(proxy.vm.stats.value("tokentrace_policy_poll_failures_total"), 1, "no policy yet: 404, counted");
  await chatRequest();
  assert.equal(sampled(), 0, "the local pluginConfig (rate 0) is in force");

  assert.equal((await call(app.url, "POST", "/v1/policies", { body: policy(1), token: adminToken })).status, 201);
  await onePollInterval();
  assert.equal(proxy.vm.stats.value("tokentrace_policy_updates_total"), 1);
  await chatRequest();
  assert.equal(sampled(), 1, "rate 1 from the control plane");

  const put = await call(app.url, "PUT", "/v1/policies/chat-sampling", { body: policy(0), token: adminToken });
  assert.equal(put.status, 200);
  await onePollInterval();
  await chatRequest();
  assert.equal(sampled(), 1, "rate 0 from the control plane: nothing more sampled");
  assert.equal(proxy.vm.stats.value("tokentrace_policy_updates_total"), 2);

  await onePollInterval();
  assert.equal(proxy.vm.stats.value("tokentrace_policy_updates_total"), 2, "an unchanged policy answers 304 and changes nothing");
  assert.equal(proxy.vm.stats.value("tokentrace_policy_poll_failures_total"), 1);
});

it("a failed poll keeps the last good policy (emulated Envoy host, real control plane)", async () => {
  await call(app.url, "PUT", "/v1/policies/chat-sampling", { body: policy(1), token: adminToken });
  await onePollInterval();
  assert.equal(proxy.vm.stats.value("tokentrace_policy_updates_total"), 3);
  await app.close();
  await onePollInterval();
  assert.equal(proxy.vm.stats.value("tokentrace_policy_poll_failures_total"), 2);
  const before = sampled();
  await chatRequest();
  assert.equal(sampled(), before + 1, "rate 1 is still in force");
  assert.ok(proxy.vm.logs.some((l) => l.message.includes("policy poll failed, keeping the policy in force")));
});
