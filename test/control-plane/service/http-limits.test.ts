// Every listener times out slow clients and refuses oversized bodies unread: headers that trickle,
// a body that trickles, an idle keep-alive connection, and a declared Content-Length over the
// limit (answered 413 before the body is sent). Real sockets against listenOn's servers.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { listenOn } from "../../../control-plane/src/listen.js";
import { httpSection } from "../../../control-plane/src/http/config.js";
import { adminToken, startTestApp } from "../helpers.js";

const limits = { ...httpSection.defaults, headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300, idleTimeoutMs: 5000 };

/** Sends `chunks` one by one, `gapMs` apart, and resolves with what the server sent once it closes (or after `giveUpMs`). */
function trickle(port: number, chunks: string[], gapMs: number, giveUpMs = 20_000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, "127.0.0.1");
    let text = "";
    let i = 0;
    const timer = setInterval(() => {
      if (i < chunks.length && !socket.destroyed) socket.write(chunks[i++] as string);
    }, gapMs);
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      resolve({ text, closedByServer: false });
    }, giveUpMs);
    socket.on("data", (c: Buffer) => (text += c.toString("latin1")));
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ text, closedByServer: true });
    });
    socket.on("error", () => undefined);
  });
}

describe("HTTP timeouts and limits on every listener", () => {
  it("closes a connection whose headers trickle, whose body trickles, or that idles after a response", async () => {
    const server: Server = await listenOn((_req, res) => res.end("ok"), 0, "127.0.0.1", "test", limits);
    const port = (server.address() as AddressInfo).port;
    try {
      // One header byte every 100 ms: never complete within 300 ms.
      const headers = await trickle(port, "GET / HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n".split(""), 100);
      assert.equal(headers.closedByServer, true);
      assert.match(headers.text, /^HTTP\/1\.1 408 /);
      // Headers at once, then a 1 KiB body one byte every 50 ms: the whole request never completes within 600 ms.
      const body = await trickle(port, ["POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1024\r\n\r\n", ..."x".repeat(1024).split("")], 50);
      assert.equal(body.closedByServer, true);
      // A finished exchange on a keep-alive connection, then nothing: closed after keepAliveTimeoutMs.
      const idle = await trickle(port, ["GET / HTTP/1.1\r\nhost: x\r\n\r\n"], 10);
      assert.equal(idle.closedByServer, true);
      assert.match(idle.text, /^HTTP\/1\.1 200 /);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("the API answers 413 to a declared Content-Length over api.bodyLimitBytes before reading the body, and closes", async () => {
    const app = await startTestApp({ bodyLimitBytes: 16384 });
    try {
      const port = Number(new URL(app.url).port);
      const answer = await trickle(port, [`PUT /v1/policies/chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: Bearer ${adminToken}\r\ncontent-length: 104857600\r\n\r\n`], 10, 10_000);
      assert.equal(answer.closedByServer, true, "answered and closed without the 100 MB body");
      assert.match(answer.text, /^HTTP\/1\.1 413 /);
      assert.match(answer.text, /larger than 16384 bytes/);
    } finally {
      await app.close();
    }
  });
});
