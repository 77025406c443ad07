// Shared set-up for control-plane tests: an app on 127.0.0.1 with a file store in a fresh temp
// directory, a fixed clock, two tokens, captured audit lines, and small fetch helpers.
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp, type ReadinessCheck } from "../../control-plane/src/app.js";
import { applyScopes, parseTokens, type TokenEntry } from "../../control-plane/src/api/auth.js";
import { createMetrics, type ControlPlaneMetrics } from "../../control-plane/src/api/metrics.js";
import type { PolicyCheck } from "../../control-plane/src/policy/admission.js";
import type { AuditRecord } from "../../control-plane/src/policy/audit.js";
import type { RateOverrides } from "../../control-plane/src/policy/effective.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import type { PolicyJournal } from "../../control-plane/src/policy/journal.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import { TraceStore } from "../../control-plane/src/traces/store.js";
import type { SloSource } from "../../control-plane/src/dashboard/slo-route.js";

export const adminToken = "admin-secret-0123456789";
export const ciToken = "ci-secret-abcdefghijkl";
/** A token of scope read (api.scopes viewer=read); adminToken has scope admin, ciToken write. */
export const viewerToken = "viewer-secret-0123456789";

/** A running test app. */
export interface TestApp {
  url: string;
  store: FilePolicyStore;
  /** The store's snapshot file (its journal is beside it). */
  storePath: string;
  metrics: ControlPlaneMetrics;
  audit: AuditRecord[];
  overrides: Map<string, RateOverrides>;
  readiness: Record<string, ReadinessCheck>;
  /** The span receiver's store when `traces` is on. */
  traces?: TraceStore;
  close(): Promise<void>;
}

/** Starts the app; `reads` defaults to public; `storePath` reuses a store (a restart). */
export async function startTestApp(
  options: {
    reads?: "public" | "token";
    storePath?: string;
    bodyLimitBytes?: number;
    policyCheck?: PolicyCheck;
    log?: (record: object) => void;
    journal?: (path: string) => PolicyJournal;
    /** `<id>:<token>` pairs, comma-separated; default admin, ci and viewer below. */
    tokens?: string;
    /** api.scopes; default admin=admin,viewer=read (ci: write). */
    scopes?: string;
    /** Serve the OTLP span receiver (POST /v1/traces, GET /v1/dashboard/traces). */
    traces?: boolean;
    /** The dashboard's SLO figures (GET /v1/dashboard/slo); absent: none configured. */
    slo?: SloSource;
  } = {},
): Promise<TestApp> {
  let tick = 0;
  const audit: AuditRecord[] = [];
  const storePath = options.storePath ?? join(mkdtempSync(join(tmpdir(), "tt-api-")), "policies.json");
  // Each write gets the next whole second, so history timestamps are exact.
  const store = new FilePolicyStore({
    path: storePath,
    now: () => new Date(Date.UTC(2026, 11, 2, 12, 0, tick++)),
    audit: (r) => audit.push(r),
    check: options.policyCheck,
    log: options.log,
    journal: options.journal?.(storePath),
  });
  const metrics = createMetrics();
  const overrides = new Map<string, RateOverrides>();
  const readiness: Record<string, ReadinessCheck> = { store: { ok: true, detail: "loaded" } };
  const traces = options.traces === true ? new TraceStore(100) : undefined;
  const app = createApp({
    store,
    tokens: scoped(options.tokens ?? `admin:${adminToken},ci:${ciToken},viewer:${viewerToken}`, options.scopes ?? (options.tokens === undefined ? "admin=admin,viewer=read" : "")),
    reads: options.reads ?? "public",
    bodyLimitBytes: options.bodyLimitBytes ?? 16384,
    metrics,
    overrides: (name) => overrides.get(name),
    readiness: () => readiness,
    log: () => undefined,
    ...(traces !== undefined ? { traces: { store: traces, linkTemplate: "" } } : {}),
    ...(options.slo !== undefined ? { slo: options.slo } : {}),
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    store,
    storePath,
    metrics,
    audit,
    overrides,
    readiness,
    ...(traces !== undefined ? { traces } : {}),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await store.close();
    },
  };
}

/** Tokens with their scopes granted; throws on a bad item (tests write them). */
export function scoped(tokensText: string, scopes: string): TokenEntry[] {
  const { tokens, errors } = parseTokens(tokensText, "test", /,/);
  errors.push(...applyScopes(tokens, scopes));
  if (errors.length > 0) throw new Error(errors.join("; "));
  return tokens;
}

/** A minimal valid policy. */
export function samplePolicy(name = "chat", overrides: Partial<Policy> = {}): Policy {
  return {
    name,
    target: { namespace: "llm", selector: { matchLabels: { app: "chat" } } },
    pluginConfig: {
      sampling: {
        defaultRate: 0.05,
        routes: [{ routeName: "completions", rate: 0.2 }],
        force: [{ header: "x-debug", value: "1" }],
      },
    },
    ...overrides,
  };
}

/** fetch with JSON body and bearer token; returns status, headers and parsed body. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; headers?: Record<string, string>; rawBody?: string } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(`${base}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text !== "" && (response.headers.get("content-type") ?? "").includes("json")) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed, text };
}
