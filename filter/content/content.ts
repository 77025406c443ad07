// Content capture for a sampled LLM call whose policy and route ask for it (spans.content): the
// text of the request's messages and system instructions and of the response, as the protocol
// reader finds it, kept in bounded buffers for this request only. Nothing here ever reaches a
// stat or a log: at the end of the request the text is redacted (redact.ts) and written into the
// span's GenAI content attributes (gen_ai.system_instructions, gen_ai.input.messages,
// gen_ai.output.messages, structured as open-telemetry/semantic-conventions-genai's JSON schemas
// define them), then dropped with the request.
import { ByteWriter } from "./byte-writer";
import { Redactor } from "./redact";

export const enum Channel { System, Input, Output, COUNT }

/** Message roles as the GenAI conventions name them; anything else a request says is a user's. */
export const enum Role { User, System, Assistant, Tool }
const ROLE_NAMES: StaticArray<string> = ["user", "system", "assistant", "tool"];

/**
 * Original text kept past the visible window: a value that begins inside the window and ends past
 * it is still recognised whole and replaced whole (the longest multi-word value, a formatted card
 * or phone number, and the longest e-mail address, 254 bytes, fit).
 */
export const DETECTION_MARGIN: i32 = 320;
/** Parts (message strings) kept per channel; more are dropped and the attribute marked truncated. */
const MAX_PARTS: i32 = 256;

/** The role a message's `role` string (`n` bytes at `p`) names. */
export function roleOf(p: usize, n: i32): Role {
  const s = String.UTF8.decodeUnsafe(p, n);
  if (s == "system" || s == "developer") return Role.System;
  if (s == "assistant" || s == "model") return Role.Assistant;
  if (s == "tool" || s == "function" || s == "ipython") return Role.Tool;
  return Role.User;
}

/** One channel's text: the bytes, and its parts as (message, start, end) triples. */
class ChannelText {
  bytes: ArrayBuffer;
  length: i32 = 0;
  parts: Array<i32> = [];
  /** Text was dropped past the buffer or the part limit. */
  dropped: bool = false;

  constructor(capacity: i32) {
    this.bytes = new ArrayBuffer(capacity);
  }
}

export class ContentCapture {
  private channels: StaticArray<ChannelText | null> = new StaticArray<ChannelText | null>(Channel.COUNT);
  private current: ChannelText | null = null;
  /** Roles by message number (index of the message in its array). */
  private roles: Array<u8> = [];
  /** Original bytes per attribute that may appear in the span. */
  readonly visibleBytes: i32;
  // The output channel as it was when the current stream event began (mark / rollback).
  private markLength: i32 = 0;
  private markParts: i32 = 0;
  private markLastEnd: i32 = 0;

  constructor(visibleBytes: i32) {
    this.visibleBytes = visibleBytes;
  }

  /** A string of `channel`'s text begins, belonging to message number `message`. */
  begin(channel: i32, message: i32): void {
    let c = unchecked(this.channels[channel]);
    if (c === null) {
      c = new ChannelText(this.visibleBytes + DETECTION_MARGIN);
      unchecked((this.channels[channel] = c));
    }
    const parts = c.parts;
    const n = parts.length;
    // A stream's deltas join into one part: one output message, read as one text.
    if (channel == Channel.Output && n > 0 && unchecked(parts[n - 1]) == c.length) {
      this.current = c;
      return;
    }
    if (n >= MAX_PARTS * 3) {
      c.dropped = true;
      this.current = null;
      return;
    }
    parts.push(message);
    parts.push(c.length);
    parts.push(c.length);
    this.current = c;
  }

  append(p: usize, n: i32): void {
    const c = this.current;
    if (c === null || n <= 0) return;
    const room = c.bytes.byteLength - c.length;
    const take = n < room ? n : room;
    if (take < n) c.dropped = true;
    memory.copy(changetype<usize>(c.bytes) + c.length, p, take);
    c.length += take;
    unchecked((c.parts[c.parts.length - 1] = c.length));
  }

  appendByte(b: u8): void {
    const c = this.current;
    if (c === null) return;
    if (c.length == c.bytes.byteLength) {
      c.dropped = true;
      return;
    }
    store<u8>(changetype<usize>(c.bytes) + c.length, b);
    c.length++;
    unchecked((c.parts[c.parts.length - 1] = c.length));
  }

  /** The string ended. */
  end(): void {
    this.current = null;
  }

  setRole(message: i32, role: Role): void {
    if (message < 0 || message >= MAX_PARTS) return;
    while (this.roles.length <= message) this.roles.push(<u8>Role.User);
    unchecked((this.roles[message] = <u8>role));
  }

  /** A stream event begins: its output text is kept only if the protocol says so at its end. */
  mark(): void {
    const c = unchecked(this.channels[Channel.Output]);
    if (c === null) {
      this.markParts = -1;
      return;
    }
    this.markLength = c.length;
    this.markParts = c.parts.length;
    this.markLastEnd = this.markParts > 0 ? unchecked(c.parts[this.markParts - 1]) : 0;
  }

  /** Drops the output text of the event since `mark`. */
  rollback(): void {
    this.current = null;
    const c = unchecked(this.channels[Channel.Output]);
    if (c === null) return;
    if (this.markParts < 0) {
      c.length = 0;
      c.parts.length = 0;
      return;
    }
    c.length = this.markLength;
    c.parts.length = this.markParts;
    if (this.markParts > 0) unchecked((c.parts[this.markParts - 1] = this.markLastEnd));
  }

  /** Some text was captured at all. */
  get isEmpty(): bool {
    for (let i = 0; i < Channel.COUNT; i++) {
      const c = unchecked(this.channels[i]);
      if (c !== null && c.length > 0) return false;
    }
    return true;
  }

  /**
   * Appends the span attributes (OTLP/JSON key-value objects, structured AnyValues) of what was
   * captured, redacted by `redactor`; `finishReason` is the output message's (GenAI output
   * messages require one). Returns whether some text was cut to the visible window.
   */
  writeAttributes(attrs: Array<string>, redactor: Redactor, finishReason: string): bool {
    let truncated = false;
    const out = new ByteWriter(this.visibleBytes * 2 + 256);
    const system = unchecked(this.channels[Channel.System]);
    if (system !== null && this.anyText(system, 0, system.parts.length)) {
      // gen_ai.system_instructions: [TextPart, ...]
      beginArray(out, "gen_ai.system_instructions");
      truncated = this.writeRange(out, system, 0, system.parts.length, redactor);
      out.ascii(END_ARRAY);
      attrs.push(out.toString());
    }
    const input = unchecked(this.channels[Channel.Input]);
    if (input !== null && this.anyText(input, 0, input.parts.length)) {
      // gen_ai.input.messages: [{role, parts: [TextPart, ...]}, ...], one per message number, in order
      out.length = 0;
      beginArray(out, "gen_ai.input.messages");
      const parts = input.parts;
      let first = true;
      for (let i = 0; i < parts.length; ) {
        const message = unchecked(parts[i]);
        let j = i;
        while (j < parts.length && unchecked(parts[j]) == message) j += 3;
        if (this.anyText(input, i, j)) {
          if (!first) out.byte(0x2c);
          first = false;
          const role = message < this.roles.length ? <i32>unchecked(this.roles[message]) : <i32>Role.User;
          truncated = this.writeMessage(out, unchecked(ROLE_NAMES[role]), input, i, j, redactor, null) || truncated;
        }
        i = j;
      }
      out.ascii(END_ARRAY);
      attrs.push(out.toString());
    }
    const output = unchecked(this.channels[Channel.Output]);
    if (output !== null && this.anyText(output, 0, output.parts.length)) {
      // gen_ai.output.messages: [{role: "assistant", parts: [TextPart], finish_reason}]
      out.length = 0;
      beginArray(out, "gen_ai.output.messages");
      truncated = this.writeMessage(out, "assistant", output, 0, output.parts.length, redactor, outputFinishReason(finishReason)) || truncated;
      out.ascii(END_ARRAY);
      attrs.push(out.toString());
    }
    return truncated;
  }

  private writeMessage(out: ByteWriter, role: string, c: ChannelText, from: i32, to: i32, redactor: Redactor, finishReason: string | null): bool {
    out.ascii(BEGIN_KVLIST);
    stringPair(out, "role", role);
    out.byte(0x2c);
    beginArray(out, "parts");
    const truncated = this.writeRange(out, c, from, to, redactor);
    out.ascii(END_ARRAY);
    if (finishReason !== null) {
      out.byte(0x2c);
      stringPair(out, "finish_reason", finishReason);
    }
    out.ascii(END_KVLIST);
    return truncated;
  }

  /** Some part among triples [from, to) has text inside the visible window. */
  private anyText(c: ChannelText, from: i32, to: i32): bool {
    for (let i = from; i < to; i += 3) {
      const start = unchecked(c.parts[i + 1]);
      if (start < this.visibleBytes && unchecked(c.parts[i + 2]) > start) return true;
    }
    return false;
  }

  /** Writes the text parts of triples [from, to) as GenAI TextParts; returns whether the window cut some. */
  private writeRange(out: ByteWriter, c: ChannelText, from: i32, to: i32, redactor: Redactor): bool {
    const base = changetype<usize>(c.bytes);
    const window = this.visibleBytes;
    let truncated = c.dropped;
    let first = true;
    for (let i = from; i < to; i += 3) {
      const start = unchecked(c.parts[i + 1]);
      const end = unchecked(c.parts[i + 2]);
      if (end <= start) continue;
      if (start >= window) {
        truncated = true;
        continue;
      }
      if (!first) out.byte(0x2c);
      first = false;
      // TextPart {type: "text", content}
      out.ascii(BEGIN_KVLIST);
      stringPair(out, "type", "text");
      out.byte(0x2c);
      beginKey(out, "content");
      out.ascii(STRING_VALUE);
      // Values are found in the whole part (the margin past the window included); text is shown up to the window.
      const visibleEnd = end < window ? end - start : window - start;
      if (end > window) truncated = true;
      redactor.redact(out, base + start, end - start, visibleEnd);
      out.ascii(END_STRING);
      out.ascii(END_KVLIST);
    }
    return truncated;
  }
}

// OTLP/JSON AnyValue pieces.
const BEGIN_KVLIST = "{\"kvlistValue\":{\"values\":[";
const END_KVLIST = "]}}";
const STRING_VALUE = "\"stringValue\":\"";
const END_STRING = "\"}}";
/** Closes an array value and its key-value object. */
const END_ARRAY = "]}}}";

/** `{"key":"<key>","value":{` */
function beginKey(out: ByteWriter, key: string): void {
  out.ascii("{\"key\":\"");
  out.ascii(key);
  out.ascii("\",\"value\":{");
}

function beginArray(out: ByteWriter, key: string): void {
  beginKey(out, key);
  out.ascii("\"arrayValue\":{\"values\":[");
}

/** A key and an ASCII string value that needs no escape. */
function stringPair(out: ByteWriter, key: string, value: string): void {
  beginKey(out, key);
  out.ascii(STRING_VALUE);
  out.ascii(value);
  out.ascii(END_STRING);
}

/** An output message's finish_reason in the GenAI conventions' words (their schema's enum where one applies). */
function outputFinishReason(reason: string): string {
  if (reason.length == 0) return "error"; // expected but not received: the generation ended abnormally
  if (reason == "tool_calls" || reason == "function_call") return "tool_call";
  // Only the known words go out as they are: a finish reason is server text, so anything else is "other".
  return reason == "stop" || reason == "length" || reason == "content_filter" || reason == "error" ? reason : "other";
}
