// Reading a request body within a byte limit without reading past it. A declared Content-Length
// over the limit is refused before a byte of the body is read; a body without one (chunked) is
// refused as soon as it passes the limit. Either way the answer carries `Connection: close` and the
// connection is closed once it is sent, so the rest of the body is never read. kube-apiserver
// stops reading one byte past its limit (kubernetes/kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go limitedReadBody, an io.LimitedReader
// of limit+1) and Go's net/http closes a connection whose body was not read to its end; body-parser,
// which express uses, reads a too-large body to its end before answering.
import type { IncomingMessage, ServerResponse } from "node:http";

/** The body, or why there is none. */
export type LimitedBody = { ok: true; body: Buffer } | { ok: false; reason: "too-large" | "aborted" };

/** The declared length, or undefined (none, or not a plain decimal). */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers["content-length"];
  return header !== undefined && /^[0-9]{1,15}$/.test(header) ? Number(header) : undefined;
}

/** Reads at most `limit` bytes of body; stops reading (and pauses the request) past it. */
export function readLimitedBody(req: IncomingMessage, limit: number): Promise<LimitedBody> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) return Promise.resolve({ ok: false, reason: "too-large" });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: LimitedBody): void => {
      if (done) return;
      done = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
      if (!result.ok) req.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) finish({ ok: false, reason: "too-large" });
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(size > limit ? { ok: false, reason: "too-large" } : { ok: true, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) });
    const onError = (): void => finish({ ok: false, reason: "aborted" });
    const onAborted = (): void => finish({ ok: false, reason: "aborted" });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

/** After an answer that did not read the whole body: close the connection once the answer is out. */
export function closeAfterResponse(res: ServerResponse): void {
  res.setHeader("connection", "close");
  res.once("finish", () => res.socket?.destroySoon());
}
