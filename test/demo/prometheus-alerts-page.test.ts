// The alerts page the demo prints is one that answers: on Debian's Prometheus (no React UI) the
// classic page, on a Prometheus with its UI `/alerts`, and the API when neither page answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PrometheusInstance } from "../support/prometheus.js";
import { alertsPageUrl } from "./prometheus-alerts-page.js";

async function serving(pages: readonly string[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    res.writeHead(pages.includes(req.url ?? "") ? 200 : 404).end("alerts");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test("alertsPageUrl on the installed (Debian) Prometheus: a page that answers 200 with the alerts", { timeout: 60_000 }, async () => {
  assert.equal(spawnSync("prometheus", ["--version"], { stdio: "ignore" }).status, 0, "prometheus is missing: run `make test-deps`");
  const prometheus = await PrometheusInstance.start({ rules: "groups:\n- name: g\n  rules:\n  - alert: DemoAlertsPage\n    expr: vector(1)\n" });
  try {
    const page = await alertsPageUrl(prometheus.url);
    const response = await fetch(page);
    assert.equal(response.status, 200, page);
    assert.notEqual(page, `${prometheus.url}/api/v1/alerts`, "a page a person reads, not the API");
    assert.match(await response.text(), /DemoAlertsPage/);
  } finally {
    await prometheus.stop();
  }
});

test("alertsPageUrl: /alerts when the React UI serves it, /classic/alerts when only it answers, the API when neither does", async () => {
  for (const [pages, expected] of [
    [["/alerts", "/classic/alerts"], "/alerts"],
    [["/classic/alerts"], "/classic/alerts"],
    [[], "/api/v1/alerts"],
  ] as const) {
    const { server, url } = await serving(pages);
    try {
      assert.equal(await alertsPageUrl(url), `${url}${expected}`);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
});
