// Starts a real Prometheus (Debian's `prometheus`, installed by install-system-deps.sh) on
// 127.0.0.1 as a remote-write receiver with a temporary TSDB, and queries it back over HTTP.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A free TCP port on 127.0.0.1 (bound then released; Prometheus takes a port, not a socket). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** One query result vector/matrix element as the HTTP API returns it. */
export interface PromResult {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

/** A running Prometheus; `restart` keeps the port and the data directory. */
export class PrometheusInstance {
  private proc: ChildProcess | undefined;
  private stderr = "";
  readonly url: string;
  readonly writeUrl: string;

  private constructor(readonly port: number, readonly dataDir: string, private readonly configPath: string, private readonly ownsDir: boolean) {
    this.url = `http://127.0.0.1:${port}`;
    this.writeUrl = `${this.url}/api/v1/write`;
  }

  /** Starts Prometheus and waits until /-/ready answers 200; `rules` is a rule file's text (groups) it evaluates every `evaluationInterval` (1m). */
  static async start(opts: { dataDir?: string; rules?: string; evaluationInterval?: string } = {}): Promise<PrometheusInstance> {
    const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "tokentrace-prom-"));
    const configPath = join(dir, "prometheus.yml");
    let rulesLine = "";
    if (opts.rules !== undefined) {
      writeFileSync(join(dir, "rules.yml"), opts.rules);
      rulesLine = `rule_files:\n  - ${JSON.stringify(join(dir, "rules.yml"))}\n`;
    }
    // No scrape jobs: this instance only receives remote write (and evaluates rules over it).
    writeFileSync(configPath, `global:\n  scrape_interval: 1m\n  evaluation_interval: ${opts.evaluationInterval ?? "1m"}\n${rulesLine}`);
    const p = new PrometheusInstance(await freePort(), dir, configPath, opts.dataDir === undefined);
    await p.launch();
    return p;
  }

  private async launch(): Promise<void> {
    this.stderr = "";
    const proc = spawn(
      "prometheus",
      [
        `--config.file=${this.configPath}`,
        `--storage.tsdb.path=${join(this.dataDir, "tsdb")}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
        "--web.enable-remote-write-receiver",
        "--log.level=warn",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    proc.stderr!.on("data", (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000);
    });
    this.proc = proc;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`prometheus exited with ${proc.exitCode}: ${this.stderr}`);
      try {
        const res = await fetch(`${this.url}/-/ready`);
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`prometheus not ready after 30 s: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops the process (SIGTERM, so the TSDB head is written cleanly) and waits for it to exit. */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }

  /** Starts it again on the same port and data directory. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** Stops it and removes the data directory it created. */
  async destroy(): Promise<void> {
    await this.stop();
    if (this.ownsDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async api(path: string, params: Record<string, string>): Promise<PromResult[]> {
    const res = await fetch(`${this.url}${path}?${new URLSearchParams(params).toString()}`);
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== "success") throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    if (path.endsWith("/series")) return (body.data as Record<string, string>[]).map((metric) => ({ metric }));
    return (body.data as { result: PromResult[] }).result;
  }

  /** Instant query at `timeSec` (seconds since the epoch). */
  query(promql: string, timeSec: number): Promise<PromResult[]> {
    return this.api("/api/v1/query", { query: promql, time: String(timeSec) });
  }

  /** Range query; step in seconds. */
  queryRange(promql: string, startSec: number, endSec: number, stepSec: number): Promise<PromResult[]> {
    return this.api("/api/v1/query_range", { query: promql, start: String(startSec), end: String(endSec), step: String(stepSec) });
  }

  /** Series matching a selector in a time range (seconds). */
  series(match: string, startSec: number, endSec: number): Promise<PromResult[]> {
    return this.api("/api/v1/series", { "match[]": match, start: String(startSec), end: String(endSec) });
  }

  /** Recent stderr (warnings and errors), for assertion messages. */
  get log(): string {
    return this.stderr;
  }
}
