// A real OTLP/HTTP trace receiver (JSON encoding) on 127.0.0.1 for the tests: it stores every
// span it is sent and can be told to answer slowly or with an error status.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { otlpJsonProblems } from "./otlp-json.js";

/** An OTLP/JSON span as the receiver got it. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  events?: Array<{ timeUnixNano: string; name: string }>;
  status?: { code: number };
}

export interface OtlpReceiver {
  url: string;
  spans: OtlpSpan[];
  /** Resource attributes of every request, in order. */
  requests: Array<{ path: string; contentType: string | undefined; service: string | undefined; spans: number }>;
  /** What the opentelemetry-proto definitions did not read back unchanged, per request (otlp-json.ts); tests expect none. */
  problems: string[];
  /** Answer with this status (default 200) after this delay (default 0). */
  respondWith: { status: number; delayMs: number };
  close(): Promise<void>;
}

interface ExportBody {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: OtlpReceiver = {
    url: "",
    spans: [],
    requests: [],
    problems: [],
    respondWith: { status: 200, delayMs: 0 },
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: ExportBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportBody;
      } catch (e) {
        receiver.problems.push(`the body is not JSON: ${(e as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      receiver.problems.push(...otlpJsonProblems(body));
      let count = 0;
      for (const rs of body.resourceSpans) {
        for (const ss of rs.scopeSpans) {
          receiver.spans.push(...ss.spans);
          count += ss.spans.length;
        }
      }
      const service = body.resourceSpans[0]?.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue;
      receiver.requests.push({ path: req.url ?? "", contentType: req.headers["content-type"], service, spans: count });
      const { status, delayMs } = receiver.respondWith;
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end("{}");
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** A span attribute's value as a plain JS value. */
export function attr(span: OtlpSpan, key: string): unknown {
  const a = span.attributes.find((x) => x.key === key);
  if (!a) return undefined;
  const v = a.value as { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values: Array<{ stringValue?: string }> } };
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return v.arrayValue.values.map((x) => x.stringValue);
  return undefined;
}
