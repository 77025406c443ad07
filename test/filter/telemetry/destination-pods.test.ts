// On an ambient waypoint the filter's stats come from the waypoint pod, so it labels them with the
// pod each request went to (stats.maxDestinationPods): the host of upstream.address, bounded per
// VM. The shipped filter.wasm under the emulated Envoy host (upstream.address as Envoy's
// UpstreamLookupValues answers it, an internal address on a waypoint).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { baseRequest, loadFilter } from "../support.js";
import type { FilterVm } from "../../host/index.js";

const WAYPOINT = { stats: { maxDestinationPods: 2 } };

/** One non-streaming chat call routed to `address` (absent: no upstream host, a local reply). */
function call(vm: FilterVm, address: string | undefined, status = 200): void {
  const s = vm.newStream({ routeName: "chat", ...(address === undefined ? {} : { upstream: { address, port: 8000 } }) });
  s.requestHeaders(baseRequest(), false);
  s.requestBody(JSON.stringify({ model: "llama", messages: [{ role: "user", content: "hi" }] }), true);
  s.responseHeaders([[":status", String(status)], ["content-type", "application/json"]], false);
  s.responseBody(JSON.stringify({ model: "llama", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2 } }), true);
  s.end();
}

const llmRequests = (vm: FilterVm, podIp?: string): number | undefined =>
  vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "llama", stream: "false", finish_reason: "stop", status_class: "2xx", ...(podIp === undefined ? {} : { pod_ip: podIp }) });

describe("destination pods on a waypoint (filter.wasm, emulated Envoy host)", () => {
  const addresses: Array<[string, string, string]> = [
    ["a waypoint's internal address (connect_originate, endpoint id ip:port)", "envoy://connect_originate/10.1.2.3:8000", "10.1.2.3"],
    ["a socket address", "10.1.2.4:8000", "10.1.2.4"],
    ["an IPv6 socket address", "[fd00::5]:8000", "fd00::5"],
    ["an internal address with an IPv6 endpoint", "envoy://connect_originate/[fd00::6]:8000", "fd00::6"],
  ];
  for (const [what, address, ip] of addresses) {
    it(`labels the route's and the LLM call's stats with the pod's IP from ${what}`, async () => {
      const vm = await loadFilter({ config: WAYPOINT });
      call(vm, address);
      call(vm, address);
      assert.equal(llmRequests(vm, ip), 2);
      assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx", pod_ip: ip }), 2);
      assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model: "llama", pod_ip: ip }), 4);
      assert.equal(llmRequests(vm), undefined, "no unlabelled copy");
    });
  }

  it("caps distinct pods per VM: the ones past the cap share pod_ip=\"other\" and count destination_overflow each time", async () => {
    const vm = await loadFilter({ config: WAYPOINT });
    for (const ip of ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.1"]) call(vm, `envoy://connect_originate/${ip}:8000`);
    assert.deepEqual(["10.0.0.1", "10.0.0.2", "other"].map((ip) => llmRequests(vm, ip)), [2, 1, 2]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "destination_overflow" }), 2);
    const ips = new Set(vm.stats.names().flatMap((n) => vm.stats.extract(n).tags.filter(([k]) => k === "pod_ip").map(([, v]) => v)));
    assert.deepEqual([...ips].sort(), ["10.0.0.1", "10.0.0.2", "other"]);
  });

  it("a call no upstream host served (a local reply) keeps the route's own stats", async () => {
    const vm = await loadFilter({ config: WAYPOINT });
    call(vm, undefined, 503);
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "5xx" }), 1);
  });

  it("on a sidecar (the default, 0) reads no upstream address and adds no pod_ip", async () => {
    const vm = await loadFilter({ config: {} });
    const before = vm.hostCallsByName()["env.proxy_get_property"] ?? 0;
    call(vm, "10.1.2.3:8000");
    assert.equal(llmRequests(vm), 1);
    const waypoint = await loadFilter({ config: WAYPOINT });
    const waypointBefore = waypoint.hostCallsByName()["env.proxy_get_property"] ?? 0;
    call(waypoint, "10.1.2.3:8000");
    // The same call on a waypoint costs exactly one more property read: upstream.address.
    assert.equal((waypoint.hostCallsByName()["env.proxy_get_property"] ?? 0) - waypointBefore, (vm.hostCallsByName()["env.proxy_get_property"] ?? 0) - before + 1);
  });

  it("refuses a cap outside 0..1024 and keeps the last good configuration", async () => {
    for (const bad of [-1, 1025, 1.5, "8"]) {
      const vm = await loadFilter({ config: { stats: { maxDestinationPods: bad } } });
      assert.equal(vm.configureAccepted, false, String(bad));
    }
  });
});
