// Control-plane replicas in Kubernetes mode against one emulated kube-apiserver, with no timer of
// their own: periodic work runs through a ManualTicker, leader election and backoffs wait on a
// FakeClock that never advances unless a test says so, and waits are for events (a replica's
// cache learning of an object, a leader's log line), bounded only as a safeguard.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../control-plane/src/config.js";
import { startControlPlane, type RunningControlPlane } from "../../../control-plane/src/main.js";
import type { RateSource } from "../../../control-plane/src/adaptive/rates.js";
import type { WindowSource } from "../../../control-plane/src/adaptive/pipeline-histograms.js";
import { CRD_FILE } from "../../../scripts/manifests.js";
import { REPO, readYaml } from "../../istio/support.js";
import { kubeConfigFor, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { ManualTicker } from "../../support/manual-ticker.js";
import { FakeClock } from "../../support/fake-clock.js";
import { adminToken } from "../helpers.js";

/** One replica: the running control plane, its ticker and what it logged. */
export interface Replica {
  identity: string;
  running: RunningControlPlane;
  ticker: ManualTicker;
  logs: object[];
  /** Where the embedded store would write (Kubernetes mode must not). */
  storeDir: string;
  kube: NonNullable<RunningControlPlane["kubernetes"]>;
}

export const spPath = (ns: string, name = ""): string => `/apis/tokentrace.dev/v1alpha1/namespaces/${ns}/samplingpolicies${name === "" ? "" : `/${name}`}`;

/** A request to the emulated API server. */
export async function kube(emulator: KubeEmulator, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, any> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${emulator.url}${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Registers the generated SamplingPolicy CRD (optionally changed first, as another release's). */
export async function applyCrd(emulator: KubeEmulator, change: (crd: any) => void = () => undefined): Promise<void> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const crd = readYaml(join(REPO, CRD_FILE))[0];
  change(crd);
  const created = await kube(emulator, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  assert.equal(created.status, 201, JSON.stringify(created.json));
}

/** A SamplingPolicy object for kubectl (what `kubectl apply -f` sends). */
export function samplingPolicyObject(name: string, spec: Record<string, unknown>): object {
  return { apiVersion: "tokentrace.dev/v1alpha1", kind: "SamplingPolicy", metadata: { name }, spec };
}

/**
 * Advances `clock` in 500 ms steps (letting real I/O run between them) until `replica` leads, at
 * most 25 s of lease time, and asserts it does.
 */
export async function untilLeader(replica: Replica, clock: FakeClock): Promise<void> {
  for (let i = 0; i < 50 && !replica.kube.isLeader(); i++) {
    await clock.advance(500);
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.equal(replica.kube.isLeader(), true, `${replica.identity} leads`);
}

/** Resolves when `cond` holds, re-checked whenever the replica's cache learns of an object. */
export function whenCached(replica: Replica, what: string, cond: () => boolean): Promise<void> {
  if (cond()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      off();
      reject(new Error(`${replica.identity}: timed out waiting for ${what}`));
    }, 15_000);
    const off = replica.kube.store.onObject(() => {
      if (!cond()) return;
      clearTimeout(guard);
      off();
      resolve();
    });
  });
}

/** Resolves when the replica logs a record matching `match` (or has already). */
function whenLogged(logs: object[], subscribe: (listener: (record: object) => void) => void, match: (record: Record<string, unknown>) => boolean): Promise<void> {
  if (logs.some((r) => match(r as Record<string, unknown>))) return Promise.resolve();
  return new Promise((resolve) => subscribe((record) => (match(record as Record<string, unknown>) ? resolve() : undefined)));
}

/** Starts replicas one after another; the first to start leads (the fake clock never expires its lease). */
export async function startReplicas(
  emulator: KubeEmulator,
  identities: string[],
  options: { env?: Record<string, string>; rates?: RateSource; windows?: WindowSource; clock?: FakeClock; awaitLeader?: boolean } = {},
): Promise<Replica[]> {
  const dir = mkdtempSync(join(tmpdir(), "tt-k8s-replicas-"));
  const kubeconfig = join(dir, "kubeconfig.json");
  writeFileSync(kubeconfig, kubeConfigFor(emulator.url).exportConfig());
  const clock = options.clock ?? new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const replicas: Replica[] = [];
  for (const identity of identities) {
    const loaded = loadConfig([], {
      TOKENTRACE_LISTEN_PORT: "0",
      TOKENTRACE_FILTERS_PORT: "0",
      TOKENTRACE_STORE_MODE: "kubernetes",
      TOKENTRACE_STORE_PATH: join(dir, identity, "policies.json"),
      TOKENTRACE_KUBECONFIG: kubeconfig,
      TOKENTRACE_LEADER_ELECTION_IDENTITY: identity,
      TOKENTRACE_ADAPTIVE_ENABLED: "false",
      TOKENTRACE_API_TOKENS: `admin:${adminToken}`,
      ...options.env,
    });
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
    const logs: object[] = [];
    const listeners = new Set<(record: object) => void>();
    const ticker = new ManualTicker();
    const running = await startControlPlane(loaded.config, {
      log: (r) => {
        logs.push(r);
        for (const l of listeners) l(r);
      },
      auditLine: (line) => logs.push(JSON.parse(line) as object),
      ticker,
      now: () => clock.now(),
      delay: (ms, signal) => clock.sleep(ms, signal),
      ...(options.rates === undefined ? {} : { rates: options.rates }),
      ...(options.windows === undefined ? {} : { windows: options.windows }),
    });
    assert.ok(running.kubernetes !== undefined);
    const replica: Replica = { identity, running, ticker, logs, storeDir: join(dir, identity), kube: running.kubernetes };
    if (replicas.length === 0 && options.awaitLeader !== false) {
      await whenLogged(logs, (l) => listeners.add(l), (r) => r.msg === "became leader" && r.identity === identity);
    }
    // A replica serves once its first list is in.
    if (!replica.kube.store.informer.hasSynced) await new Promise<void>((resolve) => replica.kube.store.onListed(resolve));
    replicas.push(replica);
  }
  return replicas;
}
