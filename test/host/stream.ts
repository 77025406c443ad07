// One HTTP stream context as a test drives it, in Envoy's callback order, and the state the VM keeps for it.
import { FilterDataStatus } from "./abi.js";
import { HeaderList, type HeaderMap } from "./headers.js";
import type { Pairs } from "./pairs.js";
import type { StreamFacts } from "./properties.js";
import type { FilterVm } from "./vm.js";

/** A local response the filter asked for with proxy_send_local_response. */
export interface LocalResponse {
  statusCode: number;
  details: string;
  body: Buffer;
  headers: Pairs;
  grpcStatus: number;
}

/** One non-Continue status a callback returned. */
export interface StopRecord {
  callback: string;
  status: number;
}

export type Phase = "new" | "request" | "response" | "log" | "ended";

/** Internal state of a stream context, shared between FilterVm and FilterStream. */
export interface StreamState extends StreamFacts {
  id: number;
  /** The root context the stream was created under (its parent). */
  rootId: number;
  phase: Phase;
  extra: Record<string, Uint8Array> | undefined;
  setProperties: Map<string, Buffer> | undefined;
  monoStartNs: bigint;
  requestTrailers?: HeaderList;
  requestBody?: Buffer; // the current chunk, inside proxy_on_request_body only
  responseBody?: Buffer;
  inCallback: string | undefined;
  localResponse?: LocalResponse;
  continueCalls: number[];
  closeCalls: number[];
  lastStatus: number | undefined;
  stops: StopRecord[];
  lastRequestChunk: Buffer;
  /** Set when a headers/trailers callback stopped iteration; cleared by proxy_continue_stream or resume(). */
  pausedBy: { request?: string; response?: string };
  localResponseInCall: boolean;
  /** end_of_stream seen per direction (headers, body or trailers): Envoy calls nothing more for it. */
  requestDone?: boolean;
  responseDone?: boolean;
  lastResponseChunk: Buffer;
  /** Body held back by a StopIterationAndBuffer (Envoy's decoding/encoding buffer), per direction. */
  bufferedRequest?: Buffer;
  bufferedResponse?: Buffer;
}


/** How FilterStream reaches into its VM (kept off the public surface). */
export interface StreamDriver {
  call(vm: FilterVm, s: StreamState, callback: string, a: number, b: number, body?: { which: "request" | "response"; chunk: Buffer }): number;
  end(vm: FilterVm, s: StreamState): void;
}

const utf8 = new TextEncoder();
const toBuffer = (chunk: Uint8Array | string): Buffer =>
  typeof chunk === "string" ? Buffer.from(utf8.encode(chunk)) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/** One HTTP stream through the filter, driven in Envoy's callback order. */
export class FilterStream {
  constructor(
    private readonly vm: FilterVm,
    private readonly s: StreamState,
    private readonly driver: StreamDriver,
  ) {}

  get contextId(): number {
    return this.s.id;
  }

  /** The status the last callback returned (0 = Continue). */
  get lastStatus(): number | undefined {
    return this.s.lastStatus;
  }

  /** Every callback that did not return Continue (or sent a local response): the filter tests assert this stays empty. */
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

  /** The local response the filter sent, if any. */
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

  /** The last request body chunk as the filter left it (what goes upstream). */
  get lastRequestChunk(): Buffer {
    return this.s.lastRequestChunk;
  }

  /** The last response body chunk as the filter left it (what goes downstream). */
  get lastResponseChunk(): Buffer {
    return this.s.lastResponseChunk;
  }

  /** True once end() ran. */
  get ended(): boolean {
    return this.s.phase === "ended";
  }

  /** Why the stream is paused (a headers/trailers callback did not continue), per direction. */
  get paused(): { request?: string; response?: string } {
    return { ...this.s.pausedBy };
  }

  /** Continues a paused stream as if the filter had called proxy_continue_stream for both directions. */
  resume(): void {
    this.s.pausedBy = {};
  }

  private expect(phases: Phase[], what: string, direction?: "request" | "response"): void {
    this.vm._assertAlive(what);
    if (!phases.includes(this.s.phase)) throw new Error(`${what} in stream phase "${this.s.phase}": Envoy never calls it there`);
    const p = this.s.pausedBy;
    let paused: string | undefined;
    if (direction === "request") paused = p.request;
    else if (direction === "response") paused = this.s.localResponse === undefined ? (p.request ?? p.response) : p.response;
    if (paused !== undefined) {
      throw new Error(`${what}: the stream is paused because ${paused}; Envoy would not call the filter again until proxy_continue_stream (a test can call stream.resume())`);
    }
  }

  private endOf(direction: "request" | "response", what: string, endOfStream: boolean): void {
    const key = direction === "request" ? "requestDone" : "responseDone";
    if (this.s[key]) throw new Error(`${what} after the ${direction} ended (end_of_stream was set): Envoy never calls it there`);
    this.s[key] = endOfStream;
  }

  /** proxy_on_request_headers; returns the status. */
  requestHeaders(headers: Array<[string, string]>, endOfStream = false): number {
    this.expect(["new"], "requestHeaders");
    this.s.requestHeaders = new HeaderList(headers);
    this.s.phase = "request";
    this.s.requestDone = endOfStream;
    return this.driver.call(this.vm, this.s, "proxy_on_request_headers", this.s.requestHeaders.size, endOfStream ? 1 : 0);
  }

  /** proxy_on_request_body with this chunk as the current body buffer. */
  requestBody(chunk: Uint8Array | string, endOfStream: boolean): number {
    this.expect(["request", "response"], "requestBody", "request");
    this.endOf("request", "requestBody", endOfStream);
    return this.body("request", toBuffer(chunk), endOfStream);
  }

  /** proxy_on_request_trailers. */
  requestTrailers(trailers: Array<[string, string]>): number {
    this.expect(["request", "response"], "requestTrailers", "request");
    this.endOf("request", "requestTrailers", true);
    this.s.requestTrailers = new HeaderList(trailers);
    return this.driver.call(this.vm, this.s, "proxy_on_request_trailers", this.s.requestTrailers.size, 0);
  }

  /** proxy_on_response_headers; response.code comes from :status. */
  responseHeaders(headers: Array<[string, string]>, endOfStream = false): number {
    this.expect(["new", "request"], "responseHeaders", "response");
    this.s.responseHeaders = new HeaderList(headers);
    this.s.responseDone = endOfStream;
    const code = Number(this.s.responseHeaders.get(":status"));
    this.s.responseCode = Number.isInteger(code) ? code : undefined;
    this.s.phase = "response";
    return this.driver.call(this.vm, this.s, "proxy_on_response_headers", this.s.responseHeaders.size, endOfStream ? 1 : 0);
  }

  /** proxy_on_response_body with this chunk as the current body buffer. */
  responseBody(chunk: Uint8Array | string, endOfStream: boolean): number {
    this.expect(["response"], "responseBody", "response");
    this.endOf("response", "responseBody", endOfStream);
    return this.body("response", toBuffer(chunk), endOfStream);
  }

  /**
   * One body callback. Envoy keeps what a StopIterationAndBuffer held and shows it again with the
   * next chunk; nothing goes on until the filter continues.
   */
  private body(which: "request" | "response", chunk: Buffer, endOfStream: boolean): number {
    const s = this.s;
    const request = which === "request";
    const held = request ? s.bufferedRequest : s.bufferedResponse;
    const b = held === undefined || held.length === 0 ? chunk : Buffer.concat([held, chunk]);
    const callback = request ? "proxy_on_request_body" : "proxy_on_response_body";
    const status = this.driver.call(this.vm, s, callback, b.length, endOfStream ? 1 : 0, { which, chunk: b });
    const keep = status === FilterDataStatus.StopIterationAndBuffer && !endOfStream;
    if (request) {
      s.bufferedRequest = keep ? s.lastRequestChunk : undefined;
      if (keep) s.lastRequestChunk = EMPTY_CHUNK;
    } else {
      s.bufferedResponse = keep ? s.lastResponseChunk : undefined;
      if (keep) s.lastResponseChunk = EMPTY_CHUNK;
    }
    return status;
  }

  /** proxy_on_response_trailers. */
  responseTrailers(trailers: Array<[string, string]>): number {
    this.expect(["response"], "responseTrailers", "response");
    this.endOf("response", "responseTrailers", true);
    this.s.responseTrailers = new HeaderList(trailers);
    return this.driver.call(this.vm, this.s, "proxy_on_response_trailers", this.s.responseTrailers.size, 0);
  }

  /** request.duration from the clock, then proxy_on_log, proxy_on_done, proxy_on_delete (Envoy's order). Idempotent. */
  end(): void {
    if (this.s.phase === "ended") return;
    this.vm._assertAlive("end");
    this.driver.end(this.vm, this.s);
  }
}

const EMPTY_CHUNK = Buffer.alloc(0);
