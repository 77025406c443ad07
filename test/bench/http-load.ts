// A load generator in its own process (fork with IPC), so the server under test has its process
// to itself and its CPU time is its own. It runs one batch of requests per message over
// keep-alive connections, at most `concurrency` in flight, and answers with the wall time and
// the count of each status.
import { Agent, request } from "node:http";

/** One request to send. */
export interface LoadRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** A binary body (e.g. protobuf), base64 in the job message. */
  bodyBase64?: string;
}

/** A batch: the requests (or one request `count` times) and how many may be in flight. */
export interface LoadJob {
  url: string;
  requests?: LoadRequest[];
  repeat?: { request: LoadRequest; count: number };
  /** With `requests`: send this many, cycling through them (one message carries few large bodies). */
  count?: number;
  concurrency: number;
}

/** What the batch took. */
export interface LoadResult {
  wallMs: number;
  statuses: Record<string, number>;
}

function send(agent: Agent, base: URL, r: LoadRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = r.bodyBase64 !== undefined ? Buffer.from(r.bodyBase64, "base64") : r.body === undefined ? undefined : Buffer.from(r.body);
    const headers = { ...r.headers, ...(body === undefined ? {} : { "content-length": String(body.length) }) };
    const req = request({ agent, host: base.hostname, port: base.port, method: r.method, path: r.path, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function run(job: LoadJob): Promise<LoadResult> {
  const base = new URL(job.url);
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const total = job.count ?? job.requests?.length ?? job.repeat?.count ?? 0;
  const at = (i: number): LoadRequest => (job.requests !== undefined ? job.requests[i % job.requests.length] : job.repeat?.request) as LoadRequest;
  const statuses: Record<string, number> = Object.create(null) as Record<string, number>;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(job.concurrency, total) }, async () => {
      while (next < total) {
        const status = await send(agent, base, at(next++));
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  const wallMs = performance.now() - started;
  agent.destroy();
  return { wallMs, statuses: { ...statuses } };
}

process.on("message", (job: LoadJob) => {
  run(job).then(
    (result) => process.send?.(result),
    (error: unknown) => process.send?.({ error: String(error) }),
  );
});
process.on("disconnect", () => process.exit(0));
