// The policy editor's tail-keep fields in a real browser (headless Debian Chromium, playwright-core)
// against the real control plane on 127.0.0.1: the fields show a policy's spans.keep, write it into
// the policy, and the REST API (validating pluginConfig with filter/config.schema.json) stores it
// or refuses a bad value naming the field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../../support/chromium.js";
import { adminToken, call, samplePolicy, startTestApp } from "../helpers.js";


interface PolicyBody {
  policy: { pluginConfig: { spans?: { cluster: string; keep?: Record<string, unknown> } } };
}

test("policy editor: tail keep fields read, write and save spans.keep through the API (real Chromium, real control plane)", { timeout: 60_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  const app = await startTestApp();
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const policy = samplePolicy("chat");
    policy.pluginConfig = { ...policy.pluginConfig, spans: { cluster: "otel", keep: { slowerThanMs: 5000, routes: [{ routeName: "chat", slowerThanMs: 800 }] } } };
    assert.equal((await call(app.url, "POST", "/v1/policies", { token: adminToken, body: policy })).status, 201);

    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${app.url}/dashboard`);
    await page.fill("#token", adminToken);
    await page.waitForFunction(() => (globalThis as unknown as { document: { getElementById(id: string): { value: string } | null } }).document.getElementById("keep-slower-ms")?.value === "5000");
    assert.equal(await page.isChecked("#keep-errors"), false);

    await page.check("#keep-errors");
    await page.fill("#keep-slower-ms", "2000");
    await page.click("#keep-apply");
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null } | null } }).document.getElementById("policy-result")?.textContent?.startsWith("saved") === true);
    const saved = (await call(app.url, "GET", "/v1/policies/chat")).body as PolicyBody;
    assert.deepEqual(saved.policy.pluginConfig.spans!.keep, { errors: true, slowerThanMs: 2000, routes: [{ routeName: "chat", slowerThanMs: 800 }] });

    // A value the schema refuses: the API answers 400 naming the field, and nothing changes.
    await page.fill("#keep-slower-ms", "0");
    await page.click("#keep-apply");
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as { document: { getElementById(id: string): { className: string } | null } }).document.getElementById("policy-result")?.className === "error");
    const fields = await page.locator("#policy-errors li").evaluateAll((items) => items.map((li) => (li as unknown as { dataset: { field?: string } }).dataset.field));
    assert.ok(fields.some((f) => f?.includes("keep") && f.includes("slowerThanMs")), JSON.stringify(fields));
    assert.equal(((await call(app.url, "GET", "/v1/policies/chat")).body as PolicyBody).policy.pluginConfig.spans!.keep!.slowerThanMs, 2000);
  } finally {
    await context.close();
    await app.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
});
