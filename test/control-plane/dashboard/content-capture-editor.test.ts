// The policy editor's content capture fields in a real browser (headless Debian Chromium,
// playwright-core) against the real control plane on 127.0.0.1: the fields show a policy's
// spans.content, write it into the policy (pseudonyms on without any key material, their settings
// kept), and the REST API (validating pluginConfig with filter/config.schema.json) stores it or
// refuses a bad value naming the field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../../support/chromium.js";
import { adminToken, call, samplePolicy, startTestApp } from "../helpers.js";


interface Content {
  enabled?: boolean;
  maxBytes?: number;
  routes?: unknown[];
  pseudonyms?: { refreshIntervalMs?: number; salt?: string };
}
interface PolicyBody {
  policy: { pluginConfig: { spans?: { cluster: string; content?: Content } } };
}

type Doc = { getElementById(id: string): { value?: string; textContent: string | null; className: string } | null };

test("policy editor: content capture fields read, write and save spans.content through the API (real Chromium, real control plane)", { timeout: 60_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  const app = await startTestApp();
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const read = async (): Promise<Content | undefined> => ((await call(app.url, "GET", "/v1/policies/chat")).body as PolicyBody).policy.pluginConfig.spans!.content;
  try {
    const policy = samplePolicy("chat");
    policy.pluginConfig = { ...policy.pluginConfig, spans: { cluster: "otel", content: { maxBytes: 1024, routes: [{ routeName: "billing", enabled: false }] } } };
    assert.equal((await call(app.url, "POST", "/v1/policies", { token: adminToken, body: policy })).status, 201);

    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${app.url}/dashboard`);
    await page.fill("#token", adminToken);
    await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.getElementById("content-max-bytes")?.value === "1024");
    assert.equal(await page.isChecked("#content-enabled"), false, "off unless the policy says on");
    assert.equal(await page.isChecked("#content-pseudonyms"), false);

    const saved = async (): Promise<void> => {
      await page.click("#save");
      await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.getElementById("policy-result")?.textContent?.startsWith("saved") === true);
    };
    await page.check("#content-enabled");
    await page.fill("#content-max-bytes", "2048");
    await page.check("#content-pseudonyms");
    await page.click("#content-apply");
    await saved();
    const first = await read();
    assert.equal(first?.enabled, true);
    assert.equal(first?.maxBytes, 2048);
    assert.deepEqual(first?.routes, [{ routeName: "billing", enabled: false }], "route rules stay as they were");
    assert.deepEqual(first?.pseudonyms, {}, "pseudonyms on, with no key material: the key lives with the control plane");

    // Applying again keeps the pseudonym settings the policy has; unchecking drops them.
    const withRefresh = ((await call(app.url, "GET", "/v1/policies/chat")).body as PolicyBody).policy;
    withRefresh.pluginConfig.spans!.content!.pseudonyms = { refreshIntervalMs: 30000 };
    assert.equal((await call(app.url, "PUT", "/v1/policies/chat", { token: adminToken, body: withRefresh })).status, 200);
    await page.click("#reload");
    await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.getElementById("policy-editor")?.value?.includes("refreshIntervalMs") === true);
    await page.fill("#content-max-bytes", "");
    await page.click("#content-apply");
    await saved();
    const second = await read();
    assert.deepEqual(second?.pseudonyms, { refreshIntervalMs: 30000 });
    assert.equal(second?.maxBytes, undefined);
    await page.uncheck("#content-pseudonyms");
    await page.click("#content-apply");
    await saved();
    assert.equal((await read())?.pseudonyms, undefined);

    // A size the schema refuses: the API answers 400 naming the field, and nothing changes.
    await page.fill("#content-max-bytes", "100");
    await page.click("#content-apply");
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.getElementById("policy-result")?.className === "error");
    const fields = await page.locator("#policy-errors li").evaluateAll((items) => items.map((li) => (li as unknown as { dataset: { field?: string } }).dataset.field));
    assert.ok(fields.some((f) => f?.includes("content") && f.includes("maxBytes")), JSON.stringify(fields));
    assert.equal((await read())?.maxBytes, undefined);
  } finally {
    await context.close();
    await app.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
});
