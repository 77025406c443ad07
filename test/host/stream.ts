// One HTTP stream as a test drives it: Envoy's events in Envoy's order (StreamLifecycle plays the
// callbacks); calling one Envoy would never make at that point throws, naming why.
import type { LocalResponse, StopRecord, StreamState } from "./context.js";
import { HeaderList, type HeaderMap } from "./header-list.js";
import type { StreamLifecycle } from "./lifecycle.js";

export type { LocalResponse, StopRecord };

/** What FilterStream needs from its VM. */
interface StreamOwner {
  assertAlive(what: string): void;
}

const utf8 = new TextEncoder();
const toBuffer = (chunk: Uint8Array | string): Buffer =>
  typeof chunk === "string" ? Buffer.from(utf8.encode(chunk)) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/** One HTTP stream through the filter, driven in Envoy's callback order. */
export class FilterStream {
  constructor(
    private readonly vm: StreamOwner,
    private readonly s: StreamState,
    private readonly lifecycle: StreamLifecycle,
  ) {}

  get contextId(): number {
    return this.s.id;
  }

  /** What the module returned from its last status callback. */
  get lastStatus(): number | undefined {
    return this.s.lastStatus;
  }

  /** Every callback that did not let the stream go on (or sent a local reply): the filter tests assert this stays empty. */
  get stops(): ReadonlyArray<StopRecord> {
    return this.s.stops;
  }

  /** proxy_continue_stream calls the filter made (stream types). */
  get continueCalls(): ReadonlyArray<number> {
    return this.s.continueCalls;
  }

  /** proxy_close_stream calls the filter made (stream types). */
  get closeCalls(): ReadonlyArray<number> {
    return this.s.closeCalls;
  }

  /** The local reply the filter sent, if any (it has then gone through the filter and ended the stream). */
  get localResponse(): LocalResponse | undefined {
    return this.s.localResponse;
  }

  /** Request headers as the filter left them (what goes upstream). */
  get request(): HeaderMap {
    return this.s.requestHeaders ?? new HeaderList();
  }

  /** Response headers as the filter left them (what goes downstream). */
  get response(): HeaderMap {
    return this.s.responseHeaders ?? new HeaderList();
  }

  /** Request trailers as the filter left them. */
  get requestTrailersMap(): HeaderMap {
    return this.s.requestTrailers ?? new HeaderList();
  }

  /** Response trailers as the filter left them. */
  get responseTrailersMap(): HeaderMap {
    return this.s.responseTrailers ?? new HeaderList();
  }

  /** What went upstream from the last request body callback (empty while the filter holds it). */
  get lastRequestChunk(): Buffer {
    return this.s.lastRequestChunk;
  }

  /** What went downstream from the last response body callback (or the local reply's body). */
  get lastResponseChunk(): Buffer {
    return this.s.lastResponseChunk;
  }

  /** True once the stream is over (end(), a local reply, a close). */
  get ended(): boolean {
    return this.s.ended;
  }

  /** Why the stream is held at this filter, per direction. */
  get paused(): { request?: string; response?: string } {
    return { ...this.s.pausedBy };
  }

  /** Lets a held stream go on, as if the filter had called proxy_continue_stream for both directions. */
  resume(): void {
    this.s.requestHeadersSet = false;
    this.s.requestBody = undefined;
    this.s.requestTrailersSet = false;
    this.lifecycle.resume(this.s, "request");
    this.lifecycle.resume(this.s, "response");
  }

  private expect(what: string, direction: "request" | "response"): void {
    this.vm.assertAlive(what);
    if (this.s.ended) throw new Error(`${what}: the stream has ended${this.s.localResponse ? " (the filter sent a local reply)" : ""}; Envoy calls nothing more`);
    const paused = direction === "request" ? this.s.pausedBy.request : (this.s.pausedBy.request ?? this.s.pausedBy.response);
    if (paused !== undefined) {
      throw new Error(`${what}: the stream is paused because ${paused}; Envoy would not call the filter again until proxy_continue_stream (a test can call stream.resume())`);
    }
  }

  private once(what: string, done: boolean, direction: string): void {
    if (done) throw new Error(`${what} after the ${direction} ended (end_of_stream was set): Envoy never calls it there`);
  }

  /** The request headers arrive (proxy_on_context_create first); returns the filter status Envoy acts on. */
  requestHeaders(headers: Array<[string, string]>, endOfStream = false): number {
    this.expect("requestHeaders", "request");
    if (this.s.requestHeaders !== undefined) throw new Error("requestHeaders twice: Envoy decodes a stream's headers once");
    return this.lifecycle.requestHeaders(this.s, headers, endOfStream);
  }

  /** A request body chunk; while the filter buffers it sees everything held so far. */
  requestBody(chunk: Uint8Array | string, endOfStream: boolean): number {
    this.expect("requestBody", "request");
    if (this.s.requestHeaders === undefined) throw new Error("requestBody before requestHeaders: Envoy decodes headers first");
    this.once("requestBody", this.s.requestDone, "request");
    return this.lifecycle.body(this.s, true, toBuffer(chunk), endOfStream);
  }

  /** The request trailers (they end the request). */
  requestTrailers(trailers: Array<[string, string]>): number {
    this.expect("requestTrailers", "request");
    if (this.s.requestHeaders === undefined) throw new Error("requestTrailers before requestHeaders: Envoy decodes headers first");
    this.once("requestTrailers", this.s.requestDone, "request");
    return this.lifecycle.trailers(this.s, true, trailers);
  }

  /** The upstream's response headers (response.code becomes their :status, as the router sets it). */
  responseHeaders(headers: Array<[string, string]>, endOfStream = false): number {
    this.expect("responseHeaders", "response");
    if (this.s.responseStarted) throw new Error("responseHeaders twice: Envoy encodes a stream's response headers once");
    return this.lifecycle.responseHeaders(this.s, headers, endOfStream);
  }

  /** A response body chunk. */
  responseBody(chunk: Uint8Array | string, endOfStream: boolean): number {
    this.expect("responseBody", "response");
    if (!this.s.responseStarted) throw new Error("responseBody before responseHeaders: Envoy encodes headers first");
    this.once("responseBody", this.s.responseDone, "response");
    return this.lifecycle.body(this.s, false, toBuffer(chunk), endOfStream);
  }

  /** The response trailers (they end the response). */
  responseTrailers(trailers: Array<[string, string]>): number {
    this.expect("responseTrailers", "response");
    if (!this.s.responseStarted) throw new Error("responseTrailers before responseHeaders: Envoy encodes headers first");
    this.once("responseTrailers", this.s.responseDone, "response");
    return this.lifecycle.trailers(this.s, false, trailers);
  }

  /**
   * The stream is over, however it ended (completed, or reset by either side at any point):
   * request.duration, proxy_on_log, proxy_on_done, proxy_on_delete. Idempotent.
   */
  end(): void {
    if (this.s.ended) return;
    this.vm.assertAlive("end");
    this.lifecycle.end(this.s);
  }
}
