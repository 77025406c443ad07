// A /metrics endpoint on 127.0.0.1 whose body and status the test sets between scrapes.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** An exporter whose body the test sets; status 200 unless told otherwise. */
export interface Exporter { url: string; body: string; status: number; server: Server; close: () => Promise<void> }

/** Starts an exporter serving `body` as Prometheus text. */
export async function exporter(body: string): Promise<Exporter> {
  const e = { url: "", body, status: 200 } as Exporter;
  e.server = createServer((_req, res) => res.writeHead(e.status, { "Content-Type": "text/plain; version=0.0.4" }).end(e.body));
  await new Promise<void>((r) => e.server.listen(0, "127.0.0.1", r));
  e.url = `http://127.0.0.1:${(e.server.address() as AddressInfo).port}/metrics`;
  e.close = () => new Promise<void>((r) => e.server.close(() => r()));
  return e;
}
