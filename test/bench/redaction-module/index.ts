// The filter's redaction engine (filter/content/redact.ts, pii.ts, byte-writer.ts, sha256.ts) alone, compiled
// with the release target's options (asconfig.json: optimize 3, shrink 1, SIMD, minimal runtime), for the
// redaction throughput benchmark: the shipped module runs it only inside proxy_on_log, behind a
// whole request, so its speed is measured here on the same code and compiler.
import { ByteWriter } from "../../../filter/content/byte-writer";
import { Redactor, REDACTED_COUNT } from "../../../filter/content/redact";
import { HmacKey } from "../../../filter/content/sha256";

// asconfig.json routes aborts here (the filter gets it from the SDK): a bench run that aborts traps.
// @ts-ignore: decorator
@global
export function abort_proc_exit(message: string | null, fileName: string | null, lineNumber: u32, columnNumber: u32): void {
  unreachable();
}

let input = new ArrayBuffer(0);
let placeholders = new Redactor();
let pseudonyms = new Redactor();
pseudonyms.key = new HmacKey(String.UTF8.encode("redaction-benchmark-key-0123456789abcdef"));
const totals = new StaticArray<i32>(REDACTED_COUNT);
let out = new ByteWriter(1 << 16);

/** A buffer of `n` bytes for the host to fill with text; returns its address. */
export function textBuffer(n: i32): usize {
  input = new ArrayBuffer(n);
  return changetype<usize>(input);
}

/**
 * Redacts the text in the buffer in parts of `part` bytes (as the filter redacts one captured
 * part at a time) with placeholders or pseudonyms; returns the bytes written (so nothing is
 * optimised away).
 */
export function redactAll(part: i32, withPseudonyms: bool): i32 {
  const redactor = withPseudonyms ? pseudonyms : placeholders;
  const base = changetype<usize>(input);
  const n = input.byteLength;
  let written = 0;
  for (let at = 0; at < n; at += part) {
    const len = at + part <= n ? part : n - at;
    out.length = 0;
    redactor.reset();
    redactor.redact(out, base + at, len, len, false);
    for (let i = 0; i < REDACTED_COUNT; i++) totals[i] += redactor.counts[i];
    written += out.length;
  }
  return written;
}

/** Values replaced so far, by type (the Pii order), into the host's view of `counts`. */
export function replaced(type: i32): i32 {
  return totals[type];
}

/**
 * Redacts the whole buffer as one part whose window ends at `visibleEnd` (`cut`: the text goes on
 * past it), with placeholders or pseudonyms; returns the length of the JSON string content written
 * at outputAt(). For tests that look at the engine alone.
 */
export function redactOne(visibleEnd: i32, cut: bool, withPseudonyms: bool): i32 {
  const redactor = withPseudonyms ? pseudonyms : placeholders;
  out.length = 0;
  redactor.reset();
  redactor.redact(out, changetype<usize>(input), input.byteLength, visibleEnd, cut);
  return out.length;
}

/** Where the last redactOne wrote. */
export function outputAt(): usize {
  return out.dataStart();
}
