// Every value of the trace headers in a request, read from the whole header map in the proxy-wasm
// pairs format (Envoy's Context::getHeaderMapPairs: u32 count; count x (u32 key size, u32 value
// size); then each key and each value, each followed by NUL). Envoy's getHeaderMapValue answers
// with the first value only, so a second traceparent or token id is seen here alone. Pure logic.
import { equalBytes } from "../bytes";
import { TraceStateLines } from "./tracestate";
import { TRACEPARENT, TRACESTATE } from "../host/names";

export class TraceHeaders {
  /** How many traceparent values came, and the first one's bytes. */
  traceParentCount: i32 = 0;
  traceParentPtr: usize = 0;
  traceParentLength: i32 = 0;
  /** How many token trace id values came, and the first one's bytes. */
  tokenIdCount: i32 = 0;
  tokenIdPtr: usize = 0;
  tokenIdLength: i32 = 0;
  /** Every tracestate line; `tooManyLines` when they did not fit. */
  traceState: TraceStateLines = new TraceStateLines();
  tooManyTraceStateLines: bool = false;

  /**
   * Reads the `length`-byte pairs buffer at `p`; false (with nothing recorded) when its layout is
   * inconsistent: every size is checked against the buffer before a byte is read.
   */
  read(p: usize, length: i32, tokenIdHeader: ArrayBuffer): bool {
    this.traceParentCount = 0;
    this.tokenIdCount = 0;
    this.traceState.clear();
    this.tooManyTraceStateLines = false;
    if (length < 4) return length == 0;
    const count = load<u32>(p);
    if (count > <u32>((length - 4) >> 3)) return false;
    let data = 4 + 8 * <i32>count;
    for (let i = 0; i < <i32>count; i++) {
      const keyLength = load<u32>(p + 4 + 8 * i);
      const valueLength = load<u32>(p + 8 + 8 * i);
      if (keyLength > <u32>(length - data) || valueLength > <u32>(length - data - <i32>keyLength) || <i32>(keyLength + valueLength) + 2 > length - data) {
        this.traceParentCount = 0;
        this.tokenIdCount = 0;
        this.traceState.clear();
        return false;
      }
      const key = p + data;
      const value = key + keyLength + 1;
      this.see(key, <i32>keyLength, value, <i32>valueLength, tokenIdHeader);
      data += <i32>(keyLength + valueLength) + 2;
    }
    return true;
  }

  private see(key: usize, keyLength: i32, value: usize, valueLength: i32, tokenIdHeader: ArrayBuffer): void {
    if (equalBytes(key, keyLength, changetype<usize>(TRACEPARENT), TRACEPARENT.byteLength)) {
      if (this.traceParentCount++ == 0) {
        this.traceParentPtr = value;
        this.traceParentLength = valueLength;
      }
    } else if (equalBytes(key, keyLength, changetype<usize>(TRACESTATE), TRACESTATE.byteLength)) {
      if (!this.traceState.add(value, valueLength)) this.tooManyTraceStateLines = true;
    } else if (equalBytes(key, keyLength, changetype<usize>(tokenIdHeader), tokenIdHeader.byteLength)) {
      if (this.tokenIdCount++ == 0) {
        this.tokenIdPtr = value;
        this.tokenIdLength = valueLength;
      }
    }
  }
}
