// A remote-write receiver on 127.0.0.1 for the benchmarks: it decompresses each body and counts
// its samples per request path, and answers 204; nothing is stored, so its own memory stays flat.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { uncompressSync } from "snappy";

function varint(b: Uint8Array, pos: { p: number }): number {
  let result = 0;
  let mul = 1;
  for (;;) {
    const x = b[pos.p++]!;
    result += (x & 0x7f) * mul;
    if (x < 0x80) return result;
    mul *= 128;
  }
}

/** Samples in a remote-write 1.0 body (field 1 TimeSeries, its field 2 Sample), skipping everything else (metadata). */
export function countSamples(body: Uint8Array): number {
  let n = 0;
  const pos = { p: 0 };
  const skip = (wire: number): void => {
    if (wire === 0) varint(body, pos);
    else if (wire === 1) pos.p += 8;
    else if (wire === 5) pos.p += 4;
    else if (wire === 2) {
      const len = varint(body, pos); // read first: `pos.p += varint()` would add to the old position
      pos.p += len;
    }
    else throw new Error(`unexpected wire type ${wire}`);
  };
  while (pos.p < body.length) {
    const key = varint(body, pos);
    if (key !== ((1 << 3) | 2)) {
      skip(key & 7);
      continue;
    }
    const end = varint(body, pos) + pos.p;
    while (pos.p < end) {
      const k = varint(body, pos);
      if (k === ((2 << 3) | 2)) n++;
      skip(k & 7);
    }
  }
  return n;
}

/** A remote-write sink counting the samples each path received. */
export async function startSink(): Promise<{ url: string; received: Map<string, number>; close(): Promise<void> }> {
  const received = new Map<string, number>();
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = uncompressSync(Buffer.concat(chunks)) as Buffer;
      received.set(req.url ?? "", (received.get(req.url ?? "") ?? 0) + countSamples(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
