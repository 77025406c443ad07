// Content capture for a sampled LLM call whose policy and route ask for it (spans.content): the
// text of the request's messages and system instructions and of the response, as the protocol
// reader finds it, kept in bounded buffers for this request only. Nothing here ever reaches a
// stat or a log: at the end of the request the text is redacted (redact.ts) and written into the
// span's GenAI content attributes (gen_ai.system_instructions, gen_ai.input.messages,
// gen_ai.output.messages, structured as open-telemetry/semantic-conventions-genai's JSON schemas
// define them), then dropped with the request. It fails closed: a message whose text could not be
// read whole and decoded (the body stopped inside it, an escape that decodes to nothing, bytes that
// are no UTF-8) is dropped and counted, never exported as it is.
import { ByteWriter, utf8SequenceLength } from "./byte-writer";
import { KeyPoller, KeyState } from "./key";
import { Redactor, REDACTED_COUNT } from "./redact";
import { CaptureSink, Channel, Dropped } from "./sink";

/** Message roles as the GenAI conventions name them; anything else a request says is a user's. */
export const enum Role { User, System, Assistant, Tool }
const ROLE_NAMES: StaticArray<string> = ["user", "system", "assistant", "tool"];

/**
 * Original text kept past the visible window: a value that begins inside the window and ends past
 * it is still recognised whole and replaced whole (the longest multi-word value, a formatted card
 * or phone number, and the longest e-mail address, 254 bytes, fit; longer single tokens are masked
 * at the cut, redact.ts).
 */
export const DETECTION_MARGIN: i32 = 320;
/** Parts (message strings) kept per channel; more are dropped and the attribute marked truncated. */
const MAX_PARTS: i32 = 256;
// A part is four i32s: message number, start, end, flags (0, or 1 + the Dropped reason).
const PART: i32 = 4;

/** Why pseudonyms fell back to typed placeholders in a span, by FALLBACK_NAMES. */
export const enum Fallback { NoKey, KeyRefused, KeyUnreachable, COUNT }

// Where each count of a span sits in ContentCapture.counts.
export const DROPPED_BASE: i32 = REDACTED_COUNT;
export const FALLBACK_BASE: i32 = DROPPED_BASE + Dropped.COUNT;
export const COUNT_SLOTS: i32 = FALLBACK_BASE + Fallback.COUNT;

/** The role a message's `role` string (`n` bytes at `p`) names. */
function roleOf(p: usize, n: i32): Role {
  const s = String.UTF8.decodeUnsafe(p, n);
  if (s == "system" || s == "developer") return Role.System;
  if (s == "assistant" || s == "model") return Role.Assistant;
  if (s == "tool" || s == "function" || s == "ipython") return Role.Tool;
  return Role.User;
}

/** One channel's text: the bytes, and its parts as (message, start, end, flags) quadruples. */
class ChannelText {
  bytes: ArrayBuffer;
  length: i32 = 0;
  parts: Array<i32> = [];
  /** Text was cut at the buffer or past the part limit. */
  truncated: bool = false;

  constructor(capacity: i32) {
    this.bytes = new ArrayBuffer(capacity);
  }
}

export class ContentCapture extends CaptureSink {
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
  private markLastFlags: i32 = 0;
  /** The pseudonym key's holder when the policy asks for pseudonyms, else null (typed placeholders). */
  private key: KeyPoller | null;
  private redactor: Redactor;
  /** What writeAttributes did, by slot: values replaced by type, messages dropped by reason, pseudonym fallbacks by reason. */
  counts: StaticArray<i32> = new StaticArray<i32>(COUNT_SLOTS);

  constructor(visibleBytes: i32, key: KeyPoller | null, redactor: Redactor) {
    super();
    this.visibleBytes = visibleBytes;
    this.key = key;
    this.redactor = redactor;
  }

  begin(channel: i32, message: i32): void {
    // A string still open was never read whole (its body stopped inside it): its message is dropped.
    const open = this.current;
    if (open !== null) dropLast(open, Dropped.Unterminated);
    let c = unchecked(this.channels[channel]);
    if (c === null) {
      c = new ChannelText(this.visibleBytes + DETECTION_MARGIN);
      unchecked((this.channels[channel] = c));
    }
    const parts = c.parts;
    const n = parts.length;
    // A stream's deltas join into one part: one output message, read as one text (once dropped, it stays dropped).
    if (channel == Channel.Output && n > 0 && unchecked(parts[n - 2]) == c.length) {
      this.current = unchecked(parts[n - 1]) == 0 ? c : null;
      return;
    }
    if (n >= MAX_PARTS * PART) {
      c.truncated = true;
      this.current = null;
      return;
    }
    parts.push(message);
    parts.push(c.length);
    parts.push(c.length);
    parts.push(0);
    this.current = c;
  }

  append(p: usize, n: i32): void {
    const c = this.current;
    if (c === null || n <= 0) return;
    const room = c.bytes.byteLength - c.length;
    const take = n < room ? n : room;
    if (take < n) c.truncated = true;
    memory.copy(changetype<usize>(c.bytes) + c.length, p, take);
    c.length += take;
    unchecked((c.parts[c.parts.length - 2] = c.length));
  }

  appendByte(b: u8): void {
    const c = this.current;
    if (c === null) return;
    if (c.length == c.bytes.byteLength) {
      c.truncated = true;
      return;
    }
    store<u8>(changetype<usize>(c.bytes) + c.length, b);
    c.length++;
    unchecked((c.parts[c.parts.length - 2] = c.length));
  }

  end(): void {
    this.current = null;
  }

  fail(reason: i32): void {
    const c = this.current;
    if (c === null) return;
    this.current = null;
    dropLast(c, reason);
  }

  setRole(message: i32, p: usize, n: i32): void {
    if (message < 0 || message >= MAX_PARTS) return;
    while (this.roles.length <= message) this.roles.push(<u8>Role.User);
    unchecked((this.roles[message] = <u8>roleOf(p, n)));
  }

  mark(): void {
    const c = unchecked(this.channels[Channel.Output]);
    if (c === null) {
      this.markParts = -1;
      return;
    }
    this.markLength = c.length;
    this.markParts = c.parts.length;
    this.markLastEnd = this.markParts > 0 ? unchecked(c.parts[this.markParts - 2]) : 0;
    this.markLastFlags = this.markParts > 0 ? unchecked(c.parts[this.markParts - 1]) : 0;
  }

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
    if (this.markParts > 0) {
      unchecked((c.parts[this.markParts - 2] = this.markLastEnd));
      unchecked((c.parts[this.markParts - 1] = this.markLastFlags));
    }
  }

  isEmpty(): bool {
    for (let i = 0; i < Channel.COUNT; i++) {
      const c = unchecked(this.channels[i]);
      if (c !== null && c.length > 0) return false;
    }
    return true;
  }

  writeAttributes(attrs: Array<string>, finishReason: string): bool {
    // A string still open has not been read whole: its message is dropped.
    const open = this.current;
    if (open !== null) {
      this.current = null;
      dropLast(open, Dropped.Unterminated);
    }
    const counts = this.counts;
    for (let i = 0; i < COUNT_SLOTS; i++) unchecked((counts[i] = 0));
    const redactor = this.redactor;
    redactor.key = null;
    const key = this.key;
    if (key !== null) {
      if (key.state == KeyState.Held) redactor.key = key.key;
      else unchecked((counts[FALLBACK_BASE + fallbackOf(key.state)] = 1));
    }
    redactor.reset();
    let truncated = false;
    let dropped = false;
    const out = new ByteWriter(this.visibleBytes * 2 + 256);
    const system = unchecked(this.channels[Channel.System]);
    if (system !== null) {
      dropped = this.validate(system) || dropped;
      if (this.anyText(system, 0, system.parts.length)) {
        // gen_ai.system_instructions: [TextPart, ...]
        beginArray(out, "gen_ai.system_instructions");
        truncated = this.writeRange(out, system, 0, system.parts.length);
        out.ascii(END_ARRAY);
        attrs.push(out.toString());
      }
    }
    const input = unchecked(this.channels[Channel.Input]);
    if (input !== null) {
      dropped = this.validate(input) || dropped;
      if (this.anyText(input, 0, input.parts.length)) {
        // gen_ai.input.messages: [{role, parts: [TextPart, ...]}, ...], one per message number, in order
        out.length = 0;
        beginArray(out, "gen_ai.input.messages");
        const parts = input.parts;
        let first = true;
        for (let i = 0; i < parts.length; ) {
          const message = unchecked(parts[i]);
          let j = i;
          while (j < parts.length && unchecked(parts[j]) == message) j += PART;
          if (this.anyText(input, i, j)) {
            if (!first) out.byte(0x2c);
            first = false;
            const role = message < this.roles.length ? <i32>unchecked(this.roles[message]) : <i32>Role.User;
            truncated = this.writeMessage(out, unchecked(ROLE_NAMES[role]), input, i, j, null) || truncated;
          }
          i = j;
        }
        out.ascii(END_ARRAY);
        attrs.push(out.toString());
      }
    }
    const output = unchecked(this.channels[Channel.Output]);
    if (output !== null) {
      dropped = this.validate(output) || dropped;
      if (this.anyText(output, 0, output.parts.length)) {
        // gen_ai.output.messages: [{role: "assistant", parts: [TextPart], finish_reason}]
        out.length = 0;
        beginArray(out, "gen_ai.output.messages");
        truncated = this.writeMessage(out, "assistant", output, 0, output.parts.length, outputFinishReason(finishReason)) || truncated;
        out.ascii(END_ARRAY);
        attrs.push(out.toString());
      }
    }
    for (let i = 0; i < REDACTED_COUNT; i++) unchecked((counts[i] = unchecked(redactor.counts[i])));
    if (dropped) attrs.push("{\"key\":\"tokentrace.content.dropped\",\"value\":{\"boolValue\":true}}");
    // Which key made the pseudonyms in this span (rotation: spans name the version they were keyed with).
    if (redactor.pseudonymsWritten > 0) attrs.push("{\"key\":\"tokentrace.content.key_version\",\"value\":{\"stringValue\":\"" + key!.version + "\"}}");
    return truncated;
  }

  /**
   * Drops (and counts) each part whose bytes are no UTF-8 (a sequence cut by the buffer's end
   * excepted: that text lies past the window); returns whether some part of the channel is dropped.
   */
  private validate(c: ChannelText): bool {
    const parts = c.parts;
    const base = changetype<usize>(c.bytes);
    const capacity = c.bytes.byteLength;
    let any = false;
    for (let i = 0; i < parts.length; i += PART) {
      if (unchecked(parts[i + 3]) == 0) {
        const start = unchecked(parts[i + 1]);
        const end = unchecked(parts[i + 2]);
        if (!validUtf8(base + start, end - start, end == capacity)) unchecked((parts[i + 3] = 1 + Dropped.MalformedUtf8));
      }
      const flags = unchecked(parts[i + 3]);
      if (flags != 0) {
        any = true;
        const slot = DROPPED_BASE + flags - 1;
        unchecked((this.counts[slot] += 1));
      }
    }
    return any;
  }

  private writeMessage(out: ByteWriter, role: string, c: ChannelText, from: i32, to: i32, finishReason: string | null): bool {
    out.ascii(BEGIN_KVLIST);
    stringPair(out, "role", role);
    out.byte(0x2c);
    beginArray(out, "parts");
    const truncated = this.writeRange(out, c, from, to);
    out.ascii(END_ARRAY);
    if (finishReason !== null) {
      out.byte(0x2c);
      stringPair(out, "finish_reason", finishReason);
    }
    out.ascii(END_KVLIST);
    return truncated;
  }

  /** Some part among quadruples [from, to), not dropped, has text inside the visible window. */
  private anyText(c: ChannelText, from: i32, to: i32): bool {
    for (let i = from; i < to; i += PART) {
      const start = unchecked(c.parts[i + 1]);
      if (start < this.visibleBytes && unchecked(c.parts[i + 2]) > start && unchecked(c.parts[i + 3]) == 0) return true;
    }
    return false;
  }

  /** Writes the text parts of quadruples [from, to) as GenAI TextParts; returns whether the window cut some. */
  private writeRange(out: ByteWriter, c: ChannelText, from: i32, to: i32): bool {
    const base = changetype<usize>(c.bytes);
    const window = this.visibleBytes;
    const capacity = c.bytes.byteLength;
    let truncated = c.truncated;
    let first = true;
    for (let i = from; i < to; i += PART) {
      const start = unchecked(c.parts[i + 1]);
      const end = unchecked(c.parts[i + 2]);
      if (end <= start || unchecked(c.parts[i + 3]) != 0) continue;
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
      // Values are found in the whole part (the margin past the window included); text is shown up to
      // the window. The text was cut there when it goes on past it, or filled the buffer.
      const cut = end > window || (c.truncated && end == capacity);
      const visibleEnd = end < window ? end - start : window - start;
      if (cut) truncated = true;
      this.redactor.redact(out, base + start, end - start, visibleEnd, cut);
      out.ascii(END_STRING);
      out.ascii(END_KVLIST);
    }
    return truncated;
  }
}

/** Marks the channel's last part dropped for `reason` (Dropped), unless it already is. */
function dropLast(c: ChannelText, reason: i32): void {
  const n = c.parts.length;
  if (n > 0 && unchecked(c.parts[n - 1]) == 0) unchecked((c.parts[n - 1] = 1 + reason));
}

function fallbackOf(state: KeyState): i32 {
  if (state == KeyState.Refused) return Fallback.KeyRefused;
  if (state == KeyState.Unreachable) return Fallback.KeyUnreachable;
  return Fallback.NoKey;
}

/** `n` bytes at `p` are UTF-8 (RFC 3629); with `cutTail`, a sequence the end cuts short is allowed. */
function validUtf8(p: usize, n: i32, cutTail: bool): bool {
  let i = 0;
  while (i < n) {
    // ASCII sixteen bytes at a time: most text is.
    if (i + 16 <= n && v128.any_true(v128.and(v128.load(p + i), i8x16.splat(<i8>0x80))) == false) {
      i += 16;
      continue;
    }
    const c = load<u8>(p + i);
    if (c < 0x80) {
      i++;
      continue;
    }
    const size = utf8SequenceLength(p + i, n - i);
    if (size == 0) return cutTail && n - i < 4 && isCutSequence(p + i, n - i);
    i += size;
  }
  return true;
}

/** The `n` (< 4) bytes at `p` are the beginning of a valid sequence. */
function isCutSequence(p: usize, n: i32): bool {
  const c = <u32>load<u8>(p);
  const size = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (size == 0 || n >= size) return false;
  for (let k = 1; k < n; k++) if ((<u32>load<u8>(p + k) & 0xc0) != 0x80) return false;
  return true;
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
