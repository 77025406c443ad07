// An emulated vLLM OpenAI server on 127.0.0.1, only the two routes the control plane reads, as
// vllm-project/vllm serves them: GET /metrics (prometheus_client's text format) and GET /v1/models
// (vllm/entrypoints/openai/api_server.py show_available_models: the ModelList as JSON, 200). Any
// other path is 404 and any other method on these 405, as FastAPI answers; each request is counted.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What the emulated server answers; change the fields between requests. */
export interface VllmServerState {
  metrics: string;
  /** The /v1/models body, or a status to answer with instead (a failing server). */
  models: string | { status: number };
}

/** A running emulated server. */
export interface VllmServer {
  url: string;
  state: VllmServerState;
  /** Requests per path. */
  requests: Map<string, number>;
  close(): Promise<void>;
}

/** Starts one. */
export async function startVllmServer(state: VllmServerState): Promise<VllmServer> {
  const requests = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]!;
    requests.set(path, (requests.get(path) ?? 0) + 1);
    if (path !== "/metrics" && path !== "/v1/models") return void res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
    if (req.method !== "GET") return void res.writeHead(405, { "content-type": "application/json" }).end('{"detail":"Method Not Allowed"}');
    if (path === "/metrics") return void res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(state.metrics);
    const m = state.models;
    if (typeof m !== "string") return void res.writeHead(m.status, { "content-type": "application/json" }).end('{"object":"error","message":"failed","type":"InternalServerError","param":null,"code":500}');
    res.writeHead(200, { "content-type": "application/json" }).end(m);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
