import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { rejectionReason, REJECTION_TEXT_BYTES } from "../../../control-plane/src/remote-write/rejection.js";
import { HttpTransport } from "../../../control-plane/src/remote-write/transport.js";

describe("a receiver's 400 read into a bounded reason", () => {
  // Texts as Prometheus's handler writes them (http.Error with the storage error's text, newline
  // added) and as Mimir names its errors.
  const table: [string, string][] = [
    ["out of order sample\n", "out_of_order"],
    ["out of bounds\n", "out_of_bounds"],
    ["too old sample\n", "too_old"],
    ["duplicate sample for timestamp\n", "duplicate_sample"],
    ["Duplicate Sample For Timestamp; overrides not allowed\n", "duplicate_sample"],
    ["failed pushing to ingester: user=t: the sample has been rejected because another sample with a more recent timestamp has already been ingested and out-of-order samples are not allowed (err-mimir-sample-out-of-order)", "out_of_order"],
    ["received a sample whose timestamp is too far in the past (err-mimir-sample-timestamp-too-old)", "too_old"],
    ["received a series with an invalid label (err-mimir-label-invalid)", "invalid_labels"],
    ["proto: wrong wireType = 0 for field Timeseries\n", "http_400"],
    ["", "http_400"],
  ];
  for (const [text, reason] of table) {
    it(`${JSON.stringify(text.slice(0, 48))} -> ${reason}`, () => assert.equal(rejectionReason(text), reason));
  }

  it(`reads only the first ${REJECTION_TEXT_BYTES} bytes of the text`, () => {
    assert.equal(rejectionReason(" ".repeat(REJECTION_TEXT_BYTES - 19) + "out of order sample"), "out_of_order");
    assert.equal(rejectionReason(" ".repeat(REJECTION_TEXT_BYTES - 18) + "out of order sample"), "http_400");
  });
});

describe("the HTTP transport on a 400 from a receiver on 127.0.0.1", () => {
  async function receiver(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; close: () => Promise<void> }> {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => handler(req, res));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/write`, close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }) };
  }

  it("takes the reason from the first bytes of a long body", async () => {
    const rx = await receiver((_req, res) => {
      res.writeHead(400, { "Content-Type": "text/plain" }).end("out of order sample\n" + "x".repeat(1 << 20));
    });
    const t = new HttpTransport({ url: rx.url, timeoutMs: 5000 });
    assert.deepEqual(await t.send(Uint8Array.of(0), "1.0"), { kind: "failed", reason: "out_of_order", status: 400 });
    assert.deepEqual(await t.send(Uint8Array.of(0), "1.0"), { kind: "failed", reason: "out_of_order", status: 400 });
    await rx.close();
  });

  it("keeps a 2.0 receiver's samples-written count on a 400 (a partial write)", async () => {
    const rx = await receiver((_req, res) => {
      res.writeHead(400, { "X-Prometheus-Remote-Write-Samples-Written": "7" }).end("out of order sample\n");
    });
    const t = new HttpTransport({ url: rx.url, timeoutMs: 5000 });
    assert.deepEqual(await t.send(Uint8Array.of(0), "2.0"), { kind: "failed", reason: "out_of_order", status: 400, samplesWritten: 7 });
    await rx.close();
  });
});
