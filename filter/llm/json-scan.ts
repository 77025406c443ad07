// An incremental JSON scanner over raw bytes, fed chunk by chunk as a body passes. It keeps only
// the few fields the filter measures (model, stream, usage, finish reason, request parameters);
// which value is which is the protocol reader's call (filter/protocols/). Text is kept only
// when the request's span captures content (a sink is set), and then only into that sink, which
// redacts it before it leaves (content.ts); otherwise only whether it was non-empty. Kept strings
// are decoded (escapes, \uXXXX with surrogate pairs, into UTF-8) as they are read. Pure logic: no host calls.
import { CaptureSink, Channel, Dropped } from "../content/sink";
import { EventTemplate } from "./event-template";
import { findStringStop, isNumberByte, isNumberStart } from "./json-bytes";
import { hexValue } from "../config/json";
import { Field, JsonPath, Key, keyOf, MAX_DEPTH, MAX_KEY, Param } from "../protocols/json-path";
import { fieldOf, Protocol } from "../protocols";

const enum State { Value, ArrayStart, Key, Colon, AfterValue, String, Number, Literal, Done, Error }

/** Longest model / finish_reason value kept (bytes); longer values are cut. */
export const MAX_CAPTURE: i32 = 128;
/** A token count has at most 15 digits; a longer number is no count (2^64 would add 18 quintillion). */
const MAX_COUNT_BEFORE_DIGIT: i64 = 99_999_999_999_999;
const REPLACEMENT_CHARACTER: u32 = 0xfffd;

/** What an SSE event's own type says (Responses API, Anthropic). */
export const enum EventKind { Other, TextDelta, Final }

const TEXT_DELTA_EVENT = "response.output_text.delta";
// Events after which a stream has ended whole (the Responses API's terminal events; Anthropic's message_stop).
const FINAL_EVENTS: StaticArray<string> = ["response.completed", "response.incomplete", "response.failed", "message_stop"];

// @ts-ignore: decorator
@inline
function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09;
}

/** Scans one JSON document; `reset` makes it ready for the next (e.g. the next SSE event). */
export class JsonScanner extends JsonPath {
  private state: State = State.Value;
  /** Which protocol's fields are read. */
  protocol: Protocol = Protocol.OpenAi;
  /** Where text goes when the request's span captures content; null: text is never kept. */
  sink: CaptureSink | null = null;
  // The string or scalar being read.
  private inKey: bool = false;
  /** Whether the string being read is kept (a key, the model, a finish reason). */
  private capturing: bool = false;
  /** The sink channel the string being read goes to, or -1. */
  private sinkChannel: i32 = -1;
  /** 0: none; 1: after a backslash; 2..5: reading the four hex digits of a \u escape. */
  private escape: u8 = 0;
  private escapeCode: u32 = 0;
  /** A \u high surrogate waiting for its low half (0: none). */
  private highSurrogate: u32 = 0;
  private field: Field = Field.None;
  private length: i32 = 0;
  private number: i64 = 0;
  private numberValid: bool = true;
  private numberOverflow: bool = false;
  private keyBytes: StaticArray<u8> = new StaticArray<u8>(MAX_KEY);
  private captureBytes: StaticArray<u8> = new StaticArray<u8>(MAX_CAPTURE);

  // What was found. -1 means absent.
  model: string = "";
  /** The response's `id` (gen_ai.response.id). */
  id: string = "";
  /** usage.prompt_tokens_details.cached_tokens and usage.completion_tokens_details.reasoning_tokens (and synonyms). */
  cachedTokens: i64 = -1;
  reasoningTokens: i64 = -1;
  /** Anthropic's cache_creation_input_tokens. */
  cacheCreationTokens: i64 = -1;
  /** KServe's num_output_tokens: output tokens of this document alone. */
  outputTokenDelta: i64 = -1;
  /** Request parameters by Param, as valid JSON text (a number, or a string's decoded value); null: absent. */
  params: StaticArray<string | null> | null = null;
  finishReason: string = "";
  /** The Responses API's status and incomplete_details.reason. */
  status: string = "";
  incompleteReason: string = "";
  stream: i8 = -1;
  includeUsage: i8 = -1;
  hasStreamOptions: bool = false;
  promptTokens: i64 = -1;
  completionTokens: i64 = -1;
  /** usage token counts that were no count (negative, fractional, more than 15 digits): dropped. */
  usageInvalid: i32 = 0;
  /** Some content string (choices[].delta.content, a text delta, a token's text, ...) was non-empty. */
  sawContent: bool = false;
  /** Content strings begun (TGI: one per token event). */
  contentStrings: i32 = 0;
  /** choices[].index of a stream event (-1: none); TGI's token.special; the event's own type. */
  choiceIndex: i64 = -1;
  tokenSpecial: bool = false;
  eventKind: EventKind = EventKind.Other;
  /** Some value the protocol reader knows was found: a body of another shape is counted, never read wrong. */
  recognized: bool = false;
  /** Bytes fed since the last reset. */
  bytes: i64 = 0;
  /** Whether to keep the model string (a stream needs it from its first event only). */
  captureModel: bool = true;
  /**
   * SSE data lines: stop before a CR or LF (which JSON can only hold as whitespace or as an error)
   * instead of consuming it, so the event scanner reads each byte once.
   */
  lineMode: bool = false;
  /**
   * Where the values a next stream event may change lie (SseScanner keeps the last event's): set by
   * the event scanner when no content is captured, recorded as one line is scanned in one feed.
   */
  template: EventTemplate | null = null;
  /** Where the value being read started, in the feed that started it. */
  private valueAt: i32 = 0;

  reset(): void {
    this.state = State.Value;
    this.depth = 0;
    this.element2 = -1;
    this.model = "";
    this.id = "";
    this.cachedTokens = -1;
    this.reasoningTokens = -1;
    this.cacheCreationTokens = -1;
    this.outputTokenDelta = -1;
    this.finishReason = "";
    this.status = "";
    this.incompleteReason = "";
    this.stream = -1;
    this.includeUsage = -1;
    this.hasStreamOptions = false;
    this.promptTokens = -1;
    this.completionTokens = -1;
    this.sawContent = false;
    this.contentStrings = 0;
    this.choiceIndex = -1;
    this.tokenSpecial = false;
    this.eventKind = EventKind.Other;
    this.recognized = false;
    this.usageInvalid = 0;
    this.bytes = 0;
    this.sinkChannel = -1;
    const template = this.template;
    if (template !== null) template.clear();
  }

  /**
   * No value the event scanner folds into its totals was found (model, id, counts, reasons,
   * status, a final event, an invalid count): the common token event, which adds only itself.
   */
  get foundNoValue(): bool {
    return this.usageInvalid == 0 && this.eventKind != EventKind.Final && this.model.length == 0 && this.id.length == 0 &&
      this.cachedTokens < 0 && this.reasoningTokens < 0 && this.cacheCreationTokens < 0 && this.outputTokenDelta < 0 &&
      this.promptTokens < 0 && this.completionTokens < 0 && this.finishReason.length == 0 && this.status.length == 0 && this.incompleteReason.length == 0;
  }

  /** The document is complete and well-formed so far. */
  get done(): bool {
    return this.state == State.Done;
  }

  get failed(): bool {
    return this.state == State.Error;
  }

  /**
   * Consumes up to `n` bytes at `p` and returns how many it consumed: all of them, or (lineMode)
   * those before the first CR or LF. Malformed input leaves it failed; the rest is skipped.
   */
  feed(p: usize, n: i32): i32 {
    const consumed = this.scan(p, n);
    this.bytes += consumed;
    return consumed;
  }

  private scan(p: usize, n: i32): i32 {
    const lineMode = this.lineMode;
    let i = 0;
    while (i < n) {
      const state = this.state;
      if (state == State.String) {
        i = this.string(p, i, n);
        if (this.state == State.String && i < n) return i; // stopped at a line end inside the string
        continue;
      }
      const c = <u32>load<u8>(p + i);
      if (lineMode && (c == 0x0a || c == 0x0d)) return i;
      switch (state) {
        case State.Number: {
          if (this.field >= Field.ParamBase) {
            i = this.rawNumber(p, i, n);
            if (i == n) return n;
            this.endNumber();
            continue;
          }
          let number = this.number;
          let d = c;
          while (d - 0x30 < 10) {
            if (number > MAX_COUNT_BEFORE_DIGIT) this.numberOverflow = true;
            else number = number * 10 + <i64>(d - 0x30);
            if (++i == n) break;
            d = <u32>load<u8>(p + i);
          }
          this.number = number;
          if (i == n) return n;
          if (isNumberByte(d)) {
            this.numberValid = false; // not a token count
            i++;
            continue;
          }
          const template = this.template;
          if (template !== null && this.field == Field.None) template.number(this.valueAt, i);
          this.endNumber();
          continue; // this byte belongs to what follows
        }
        case State.Literal: {
          let d = c;
          while (d - 0x61 < 26) {
            if (++i == n) return n;
            d = <u32>load<u8>(p + i);
          }
          this.endValue();
          continue;
        }
        case State.Value:
        case State.ArrayStart: {
          if (isSpace(c)) break;
          if (state == State.ArrayStart && c == 0x5d) {
            this.close(true);
            break;
          }
          this.valueAt = i;
          this.value(c);
          break;
        }
        case State.Key: {
          if (isSpace(c)) break;
          if (c == 0x22) {
            this.inKey = true;
            this.capturing = false;
            this.escape = 0;
            this.highSurrogate = 0;
            this.length = 0;
            this.state = State.String;
          } else if (c == 0x7d) {
            this.close(false);
          } else {
            this.state = State.Error;
          }
          break;
        }
        case State.Colon: {
          if (isSpace(c)) break;
          this.state = c == 0x3a ? State.Value : State.Error;
          break;
        }
        case State.AfterValue: {
          if (isSpace(c)) break;
          if (c == 0x2c) {
            this.state = unchecked(this.isArray[this.depth]) ? State.Value : State.Key;
          } else if (c == 0x7d) {
            this.close(false);
          } else if (c == 0x5d) {
            this.close(true);
          } else {
            this.state = State.Error;
          }
          break;
        }
        case State.Done: {
          if (!isSpace(c)) this.state = State.Error;
          break;
        }
        default: {
          // Error: nothing more is read; in lineMode the line is still consumed up to its end.
          if (!lineMode) return n;
          while (i < n) {
            const d = load<u8>(p + i);
            if (d == 0x0a || d == 0x0d) return i;
            i++;
          }
          return n;
        }
      }
      i++;
    }
    return n;
  }

  /** Ends the document at end of input: a pending top-level scalar completes it. */
  finish(): void {
    if (this.state == State.Number) this.endNumber();
    else if (this.state == State.Literal) this.endValue();
  }

  private value(c: u32): void {
    const depth = this.depth;
    if (depth == 2 && unchecked(this.isArray[2])) this.element2++;
    const field = this.fieldHere();
    if (c == 0x7b || c == 0x5b) {
      if (depth == MAX_DEPTH) {
        this.state = State.Error;
        return;
      }
      this.depth = depth + 1;
      const isArray = c == 0x5b;
      if (isArray && depth == 1) this.element2 = -1;
      unchecked((this.isArray[depth + 1] = isArray));
      unchecked((this.keyAt[depth + 1] = <u8>Key.Other));
      this.state = isArray ? State.ArrayStart : State.Key;
    } else if (c == 0x22) {
      this.inKey = false;
      this.escape = 0;
      this.highSurrogate = 0;
      this.length = 0;
      this.field = field;
      this.capturing =
        ((field == Field.Model || field == Field.Id) && this.captureModel) || field == Field.FinishReason || field >= Field.Role;
      let channel = -1;
      if (field == Field.Content) {
        this.contentStrings++;
        channel = Channel.Output;
      } else if (field == Field.InputText) {
        channel = Channel.Input;
      } else if (field == Field.SystemText) {
        channel = Channel.System;
      }
      const sink = this.sink;
      if (channel >= 0 && sink !== null) {
        sink.begin(channel, channel == Channel.Output || depth < 2 ? 0 : this.element2);
        this.sinkChannel = channel;
      }
      this.state = State.String;
    } else if (isNumberStart(c)) {
      this.field = field;
      this.number = c == 0x2d ? 0 : <i64>(c - 0x30);
      this.numberValid = c != 0x2d;
      this.numberOverflow = false;
      this.length = 1;
      unchecked((this.captureBytes[0] = <u8>c));
      this.state = State.Number;
    } else if (c == 0x74 || c == 0x66 || c == 0x6e) {
      // true / false / null: the first letter decides
      if (field == Field.Stream) this.stream = c == 0x74 ? 1 : 0;
      else if (field == Field.IncludeUsage) this.includeUsage = c == 0x74 ? 1 : 0;
      else if (field == Field.TokenSpecial) this.tokenSpecial = c == 0x74;
      this.state = State.Literal;
    } else {
      this.state = State.Error;
    }
  }

  /** Reads string bytes from index i; returns the index after what it consumed. */
  private string(p: usize, i: i32, n: i32): i32 {
    const inKey = this.inKey;
    let length = this.length;
    if (this.escape == 0 && this.highSurrogate == 0) {
      // Fast path: up to the next quote or backslash, copying only what is kept (keys, model,
      // finish reason, and text bound for a content sink).
      const j = findStringStop(p, i, n, this.lineMode);
      const run = j - i;
      if (inKey) {
        if (length == 0 && j < n && load<u8>(p + j) == 0x22) {
          // The whole key is in this chunk: intern it where it lies.
          this.endKey(run <= MAX_KEY ? keyOf(p + i, run) : Key.Other);
          return j + 1;
        }
        this.keep(changetype<usize>(this.keyBytes), MAX_KEY, length, p + i, run);
      } else {
        if (this.capturing) this.keep(changetype<usize>(this.captureBytes), MAX_CAPTURE, length, p + i, run);
        if (this.sinkChannel >= 0) this.sink!.append(p + i, run);
        // A whole string with no escape whose text only counts as empty or not: a template slot.
        const template = this.template;
        const field = this.field;
        if (template !== null && length == 0 && j < n && load<u8>(p + j) == 0x22 && !this.capturing && this.sinkChannel < 0 && (field == Field.None || field == Field.Content)) {
          template.text(i, j, field == Field.Content);
        }
      }
      length += run;
      i = j;
    }
    while (i < n) {
      const c = <u32>load<u8>(p + i);
      if (this.lineMode && (c == 0x0a || c == 0x0d)) break; // the line ends inside the string
      i++;
      const escape = this.escape;
      if (escape == 0) {
        if (c == 0x5c) {
          this.escape = 1;
        } else if (c == 0x22) {
          if (this.highSurrogate != 0) length = this.loneSurrogate(length);
          this.length = length;
          this.endString();
          return i;
        } else {
          if (this.highSurrogate != 0) length = this.loneSurrogate(length);
          length = this.put(c, length);
        }
      } else if (escape == 1) {
        this.escape = 0;
        const decoded = unescaped(c);
        if (decoded < 0) {
          this.state = State.Error; // RFC 8259 allows no other escape
          this.sinkFailed(Dropped.BadEscape);
          return i;
        }
        if (decoded == 0x75) {
          this.escape = 2;
          this.escapeCode = 0;
        } else {
          length = this.putCodePoint(<u32>decoded, length);
        }
      } else {
        const h = hexValue(<i32>c);
        if (h < 0) {
          this.state = State.Error;
          this.sinkFailed(Dropped.BadEscape);
          return i;
        }
        this.escapeCode = (this.escapeCode << 4) | <u32>h;
        if (escape == 5) {
          this.escape = 0;
          length = this.putCodePoint(this.escapeCode, length);
        } else {
          this.escape = escape + 1;
        }
      }
    }
    this.length = length;
    return i;
  }

  /** Adds one decoded byte to what is kept; returns the new length (counted even past the buffer). */
  private put(b: u32, length: i32): i32 {
    if (this.inKey) {
      if (length < MAX_KEY) unchecked((this.keyBytes[length] = <u8>b));
    } else {
      if (this.capturing && length < MAX_CAPTURE) unchecked((this.captureBytes[length] = <u8>b));
      if (this.sinkChannel >= 0) this.sink!.appendByte(<u8>b);
    }
    return length + 1;
  }

  /**
   * Adds a code point from an escape as UTF-8, pairing \u surrogates; a lone surrogate becomes
   * U+FFFD, except in text bound for a content sink, whose message is then dropped (it cannot be
   * decoded, so what it hides cannot be looked for).
   */
  private putCodePoint(cp: u32, length: i32): i32 {
    const high = this.highSurrogate;
    if (cp - 0xd800 < 0x400) {
      if (high != 0) length = this.loneSurrogate(length);
      this.highSurrogate = cp;
      return length;
    }
    if (high != 0) {
      if (cp - 0xdc00 < 0x400) {
        this.highSurrogate = 0;
        cp = 0x10000 + ((high - 0xd800) << 10) + (cp - 0xdc00);
      } else {
        length = this.loneSurrogate(length);
      }
    } else if (cp - 0xdc00 < 0x400) {
      this.sinkFailed(Dropped.BadEscape);
      cp = REPLACEMENT_CHARACTER;
    }
    if (cp < 0x80) return this.put(cp, length);
    if (cp < 0x800) {
      length = this.put(0xc0 | (cp >> 6), length);
    } else {
      if (cp < 0x10000) {
        length = this.put(0xe0 | (cp >> 12), length);
      } else {
        length = this.put(0xf0 | (cp >> 18), length);
        length = this.put(0x80 | ((cp >> 12) & 0x3f), length);
      }
      length = this.put(0x80 | ((cp >> 6) & 0x3f), length);
    }
    return this.put(0x80 | (cp & 0x3f), length);
  }

  /** A \u high surrogate without its low half: U+FFFD (and a sink's message is dropped). */
  private loneSurrogate(length: i32): i32 {
    this.highSurrogate = 0;
    this.sinkFailed(Dropped.BadEscape);
    return this.putCodePoint(REPLACEMENT_CHARACTER, length);
  }

  /** The string bound for the sink cannot be decoded: the sink drops its message, and is told nothing more of it. */
  private sinkFailed(reason: Dropped): void {
    if (this.sinkChannel < 0 || this.inKey) return;
    this.sink!.fail(reason);
    this.sinkChannel = -1;
  }

  /** Copies what fits of `run` bytes at `src` into a bounded buffer already holding `length`. */
  private keep(buffer: usize, capacity: i32, length: i32, src: usize, run: i32): void {
    if (length >= capacity) return;
    const room = capacity - length;
    memory.copy(buffer + length, src, run < room ? run : room);
  }

  private endKey(key: Key): void {
    unchecked((this.keyAt[this.depth] = <u8>key));
    if (this.depth == 1 && key == Key.StreamOptions) this.hasStreamOptions = true;
    this.state = State.Colon;
  }

  private endString(): void {
    if (this.inKey) {
      this.endKey(this.length <= MAX_KEY ? keyOf(changetype<usize>(this.keyBytes), this.length) : Key.Other);
      return;
    }
    const field = this.field;
    if (this.sinkChannel >= 0) {
      this.sink!.end();
      this.sinkChannel = -1;
    }
    if (this.capturing) {
      // Only what was kept is decoded: a stream's later events repeat id and model, uncaptured.
      const n = this.length < MAX_CAPTURE ? this.length : MAX_CAPTURE;
      const raw = changetype<usize>(this.captureBytes);
      if (field == Field.Role) {
        const sink = this.sink;
        if (sink !== null) sink.setRole(this.element2, raw, n);
      } else if (field == Field.EventType) {
        this.eventKind = eventKindOf(raw, n);
      } else {
        const value = String.UTF8.decodeUnsafe(raw, n);
        if (field == Field.FinishReason) this.finishReason = value;
        else if (field == Field.Model) this.model = value;
        else if (field == Field.Id) this.id = value;
        else if (field == Field.Status) this.status = value;
        else if (field == Field.IncompleteReason) this.incompleteReason = value;
        else if (field >= Field.ParamBase && isTextParam(<Param>(field - Field.ParamBase)) && this.length <= MAX_CAPTURE) this.setParam(<Param>(field - Field.ParamBase), value);
      }
    } else if (field == Field.Content && this.length > 0) {
      this.sawContent = true;
    }
    this.endValue();
  }

  private endNumber(): void {
    const field = this.field;
    if (field >= Field.PromptTokens && field <= Field.OutputTokenDelta) {
      if (!this.numberValid || this.numberOverflow) this.usageInvalid++;
      else if (field == Field.PromptTokens) this.promptTokens = this.number;
      else if (field == Field.CompletionTokens) this.completionTokens = this.number;
      else if (field == Field.CachedTokens) this.cachedTokens = this.number;
      else if (field == Field.ReasoningTokens) this.reasoningTokens = this.number;
      else if (field == Field.CacheCreationTokens) this.cacheCreationTokens = this.number;
      else this.outputTokenDelta = this.number;
    } else if (field == Field.ChoiceIndex) {
      if (this.numberValid && !this.numberOverflow) this.choiceIndex = this.number;
    } else if (field >= Field.ParamBase) {
      const param = <Param>(field - Field.ParamBase);
      const n = this.length;
      const raw = changetype<usize>(this.captureBytes);
      // Kept only as valid JSON of the attribute's type: the text goes into the span as it is.
      if (!isTextParam(param) && n <= MAX_NUMBER_TEXT && (isIntegerParam(param) ? isJsonInteger(raw, n) : isJsonNumber(raw, n))) {
        this.setParam(param, String.UTF8.decodeUnsafe(raw, n));
      }
    }
    this.endValue();
  }

  /** Reads the bytes of a parameter's number, keeping them; returns where the number ends (or n). */
  private rawNumber(p: usize, i: i32, n: i32): i32 {
    let length = this.length;
    while (i < n) {
      const c = <u32>load<u8>(p + i);
      if (!isNumberByte(c)) break;
      if (length < MAX_CAPTURE) unchecked((this.captureBytes[length] = <u8>c));
      length++;
      i++;
    }
    this.length = length;
    return i;
  }

  private setParam(param: Param, value: string): void {
    let params = this.params;
    if (params === null) {
      params = new StaticArray<string | null>(Param.COUNT);
      this.params = params;
    }
    unchecked((params[param] = value));
  }

  private endValue(): void {
    this.field = Field.None;
    this.state = this.depth == 0 ? State.Done : State.AfterValue;
  }

  private close(isArray: bool): void {
    if (this.depth == 0 || unchecked(this.isArray[this.depth]) != isArray) {
      this.state = State.Error;
      return;
    }
    this.depth--;
    this.endValue();
  }

  /** Which measured field a value starting here is: the protocol reader's answer. */
  private fieldHere(): Field {
    const d = this.depth;
    if (d == 0 || d > 5) return Field.None;
    const field = fieldOf(this.protocol, this);
    if (field != Field.None) this.recognized = true;
    return field;
  }
}

/** What an SSE event's `type` says, from its bytes. */
function eventKindOf(p: usize, n: i32): EventKind {
  if (equalsString(p, n, TEXT_DELTA_EVENT)) return EventKind.TextDelta;
  for (let i = 0; i < FINAL_EVENTS.length; i++) if (equalsString(p, n, unchecked(FINAL_EVENTS[i]))) return EventKind.Final;
  return EventKind.Other;
}

/** `n` bytes at `p` equal the ASCII string `s`. */
function equalsString(p: usize, n: i32, s: string): bool {
  if (n != s.length) return false;
  for (let i = 0; i < n; i++) if (<u32>load<u8>(p + i) != <u32>s.charCodeAt(i)) return false;
  return true;
}

/** The byte a one-character escape stands for, 0x75 for "u" (four hex digits follow), -1 for none (RFC 8259). */
function unescaped(c: u32): i32 {
  switch (c) {
    case 0x22: case 0x5c: case 0x2f: return <i32>c;
    case 0x62: return 0x08;
    case 0x66: return 0x0c;
    case 0x6e: return 0x0a;
    case 0x72: return 0x0d;
    case 0x74: return 0x09;
    case 0x75: return 0x75;
    default: return -1;
  }
}

/** Longest parameter number kept: more is no setting a person wrote. */
const MAX_NUMBER_TEXT: i32 = 24;

function isTextParam(param: Param): bool {
  return param == Param.EncodingFormat || param == Param.OutputType;
}

function isIntegerParam(param: Param): bool {
  return param == Param.MaxTokens || param == Param.TopK || param == Param.Seed || param == Param.ChoiceCount || param == Param.Dimensions;
}

/** -?(0|[1-9][0-9]{0,17}): an integer that fits int64, in JSON. */
function isJsonInteger(p: usize, n: i32): bool {
  let i = n > 0 && load<u8>(p) == 0x2d ? 1 : 0;
  const digits = n - i;
  if (digits < 1 || digits > 18 || (digits > 1 && load<u8>(p + i) == 0x30)) return false;
  for (; i < n; i++) if (<u32>load<u8>(p + i) - 0x30 >= 10) return false;
  return true;
}

/** RFC 8259 number, exponent of at most two digits (so every double holds it). */
function isJsonNumber(p: usize, n: i32): bool {
  let i = n > 0 && load<u8>(p) == 0x2d ? 1 : 0;
  const intStart = i;
  while (i < n && <u32>load<u8>(p + i) - 0x30 < 10) i++;
  if (i == intStart || (i - intStart > 1 && load<u8>(p + intStart) == 0x30)) return false;
  if (i < n && load<u8>(p + i) == 0x2e) {
    const fracStart = ++i;
    while (i < n && <u32>load<u8>(p + i) - 0x30 < 10) i++;
    if (i == fracStart) return false;
  }
  if (i < n && (load<u8>(p + i) | 0x20) == 0x65) {
    i++;
    if (i < n && (load<u8>(p + i) == 0x2b || load<u8>(p + i) == 0x2d)) i++;
    const expStart = i;
    while (i < n && <u32>load<u8>(p + i) - 0x30 < 10) i++;
    if (i == expStart || i - expStart > 2) return false;
  }
  return i == n;
}
