// What the request path sees of content capture: a sink the JSON and SSE scanners write a
// request's text into, and that writes the span's content attributes at the end. Only an
// abstract class lives here, so the default module (filter/index.ts) carries none of the capture,
// redaction or HMAC code: the content module (filter/index-content.ts) installs the engine that
// makes sinks (filter/capture.ts), and AssemblyScript drops the code no entry reaches.
// Pure declarations: no host calls.

export const enum Channel { System, Input, Output, COUNT }

/** Why a message's captured text was dropped instead of exported (fail closed), by DROPPED_REASONS. */
export const enum Dropped {
  /** The string never ended: the body stopped (size limit, reset, malformed JSON) inside it. */
  Unterminated,
  /** An escape that decodes to no character (a lone surrogate, an escape JSON does not have). */
  BadEscape,
  /** Bytes that are no UTF-8. */
  MalformedUtf8,
  COUNT,
}

/** A request's captured text, on its way into the span's content attributes. */
export abstract class CaptureSink {
  /** A string of `channel`'s text begins, belonging to message number `message`. */
  abstract begin(channel: i32, message: i32): void;
  /** `n` decoded bytes of the string at `p`. */
  abstract append(p: usize, n: i32): void;
  abstract appendByte(b: u8): void;
  /** The string ended (its closing quote was read). */
  abstract end(): void;
  /** The string being read cannot be decoded (`reason`: Dropped): its message is dropped, never exported. */
  abstract fail(reason: i32): void;
  /** Message number `message` has the role whose `n` bytes are at `p`. */
  abstract setRole(message: i32, p: usize, n: i32): void;
  /** A stream event begins: its output text is kept only if the protocol says so at its end. */
  abstract mark(): void;
  /** Drops the output text of the event since `mark`. */
  abstract rollback(): void;
  /** No text was captured. */
  abstract isEmpty(): bool;
  /**
   * Appends the span attributes (OTLP/JSON key-value objects) of what was captured, redacted;
   * `finishReason` is the output message's. Returns whether some text was cut to the window.
   */
  abstract writeAttributes(attrs: Array<string>, finishReason: string): bool;
}
