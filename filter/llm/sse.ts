// A Server-Sent Events scanner over raw bytes, fed chunk by chunk as a streamed response passes:
// events may be split anywhere, including inside a line ending. Each event's `data` is scanned
// as JSON (the protocol's stream events) and folded into totals; `data: [DONE]` ends the
// stream. Nothing is buffered beyond the scanner state, the last event (event-template.ts) and,
// when the span captures content, the bounded text its sink keeps. Pure logic: no host calls.
import { CaptureSink } from "../content/sink";
import { EventTemplate } from "./event-template";
import { EventKind, JsonScanner } from "./json-scan";
import { Protocol } from "../protocols";

const enum Line { Start, Field, DataSpace, Data, Skip }

/** "data" as the field-name bytes must read. */
const DATA: u32 = 0x61746164; // "data" little-endian
const EVEN: u32 = 0x6e657665; // "even"
const T_COLON: u16 = 0x3a74; // "t:"
const DONE_LENGTH: i32 = 6; // "[DONE]"

export class SseScanner {
  private line: Line = Line.Start;
  private lastWasCr: bool = false;
  private fieldLength: i32 = 0;
  private fieldBytes: u32 = 0;
  private json: JsonScanner;
  private protocol: Protocol;
  private sink: CaptureSink | null;

  /**
   * The scanner of the last one-line well-formed event, left as that event left it, with the event
   * kept (its template): an event that matches it is not scanned again. Null until one came, and
   * always when content is captured (the sink needs every string's text).
   */
  private last: JsonScanner | null = null;
  /** The event's data line matched `last`: its findings are last's. */
  private matched: bool = false;
  private matchedBytes: i32 = 0;
  private dataLines: i32 = 0;
  /** `json` was reset for this event (lazily: an event that matches the last one never touches it). */
  private started: bool = false;
  /**
   * What the last event adds to the totals when it found no value (the common token event): a
   * JSON event, and perhaps a content chunk and a token event. An event that matches it adds the same.
   */
  private lastPlain: bool = false;
  private lastContent: bool = false;
  private lastTokenEvent: bool = false;
  /** The stream's model or id is not known yet: events keep them (JsonScanner.captureModel). */
  private keepsModel: bool = true;

  constructor(protocol: Protocol, sink: CaptureSink | null) {
    this.protocol = protocol;
    this.sink = sink;
    this.json = eventScanner(protocol, sink);
  }
  private eventHasData: bool = false;
  /** The first bytes of the event's data, to recognise [DONE]. */
  private dataPrefix: u64 = 0;
  private dataLength: i32 = 0;

  // Totals over the stream.
  events: i32 = 0;
  contentChunks: i32 = 0;
  malformedEvents: i32 = 0;
  sawDone: bool = false;
  model: string = "";
  id: string = "";
  finishReason: string = "";
  cachedTokens: i64 = -1;
  reasoningTokens: i64 = -1;
  promptTokens: i64 = -1;
  completionTokens: i64 = -1;
  cacheCreationTokens: i64 = -1;
  /** KServe's per-event num_output_tokens, summed (-1: none came). */
  outputTokenSum: i64 = -1;
  /** Events that carried a token (TGI: one per generated token). */
  tokenEvents: i32 = 0;
  status: string = "";
  incompleteReason: string = "";
  /** Events whose data was a whole JSON document, and whether some had a shape the protocol reader knows. */
  jsonEvents: i32 = 0;
  recognized: bool = false;
  usageInvalid: i32 = 0;

  feed(p: usize, n: i32): void {
    let i = 0;
    while (i < n) {
      if (this.line == Line.Start && !this.eventHasData && !this.lastWasCr && this.last !== null) {
        const whole = this.wholeMatchedEvent(p + i, n - i);
        if (whole > 0) {
          i += whole;
          continue;
        }
      }
      const c = <u32>load<u8>(p + i);
      if (this.lastWasCr) {
        this.lastWasCr = false;
        if (c == 0x0a) {
          i++; // the LF of a CRLF pair: the line already ended at the CR
          continue;
        }
      }
      if (c == 0x0d || c == 0x0a) {
        this.endLine();
        this.lastWasCr = c == 0x0d;
        i++;
        continue;
      }
      const line = this.line;
      if (line == Line.Start && n - i >= 6) {
        // "data:" and "event:" whole at a line's start (nearly every line of a stream), read at once
        if (isDataField(p + i)) {
          this.line = Line.DataSpace;
          i += 5;
          continue;
        }
        if (isEventField(p + i)) {
          this.line = Line.Skip;
          i += 6;
          continue;
        }
      }
      switch (line) {
        case Line.Start:
        case Line.Field: {
          if (c == 0x3a) {
            // "data:" starts the data; other fields and comments (":...") are skipped
            this.line = this.fieldLength == 4 && this.fieldBytes == DATA ? Line.DataSpace : Line.Skip;
          } else {
            if (this.fieldLength < 4) this.fieldBytes |= c << (8 * this.fieldLength);
            this.fieldLength++;
            this.line = Line.Field;
          }
          i++;
          break;
        }
        case Line.DataSpace: {
          this.line = Line.Data;
          this.beginDataLine();
          if (c == 0x20) i++; // one space after the colon is not part of the data
          break;
        }
        case Line.Data: {
          // The JSON scanner reads the rest of the line itself and stops at its end.
          i += this.data(p + i, n - i);
          break;
        }
        default:
          i = lineEnd(p, i, n); // Skip: other fields (event names, ids) and comments
      }
    }
  }

  /**
   * A whole event at `q` (at most `m` bytes) of the commonest shape: an optional `event:` line,
   * one data line that matches the last event, then a blank line, each ended by LF. It is counted
   * as the byte-by-byte reading would count it, and its length returned; 0 (nothing changed) for
   * any other shape, which is read byte by byte.
   */
  private wholeMatchedEvent(q: usize, m: i32): i32 {
    let j = 0;
    if (m >= 6 && isEventField(q)) {
      j = lineEnd(q, 6, m);
      if (j == m || load<u8>(q + j) != 0x0a) return 0;
      j++;
    }
    if (m - j < 6 || !isDataField(q + j)) return 0;
    j += 5;
    if (j < m && load<u8>(q + j) == 0x20) j++;
    if (j == m) return 0;
    const length = this.matchLast(q + j, m - j);
    if (length < 0) return 0;
    j += length;
    if (m - j < 2 || load<u16>(q + j) != 0x0a0a) return 0;
    this.eventHasData = true;
    this.dataLines = 1;
    this.started = false;
    this.matched = true;
    this.dispatch();
    return j + 2;
  }

  /** The stream ended: an event not yet terminated by a blank line still counts. */
  finish(): void {
    if (this.line != Line.Start) this.endLine();
    this.dispatch();
  }

  private beginDataLine(): void {
    if (!this.eventHasData) {
      this.eventHasData = true;
      this.matched = false;
      this.dataLines = 1;
      this.started = false;
      const sink = this.sink;
      if (sink !== null) sink.mark();
      this.dataPrefix = 0;
      this.dataLength = 0;
    } else {
      this.dataLines++;
      // The first line matched the last event: the scan goes on from where that event's ended.
      if (this.matched) this.takeLast();
      // Several data lines of one event join with a newline (JSON whitespace).
      const nl = memory.data(1);
      store<u8>(nl, 0x0a);
      this.json.lineMode = false;
      this.data(nl, 1);
      this.json.lineMode = true;
    }
  }

  /** Feeds data bytes up to the end of the line; returns how many were consumed. */
  private data(p: usize, n: i32): i32 {
    const json = this.json;
    let first = false;
    if (!this.started) {
      if (this.dataLines == 1) {
        const matched = this.matchLast(p, n);
        if (matched >= 0) {
          this.matched = true;
          this.matchedBytes = matched;
          return matched;
        }
      }
      this.start();
      first = this.dataLines == 1;
    }
    const used = json.feed(p, n);
    for (let k = 0; k < used && this.dataLength < 8; k++) {
      this.dataPrefix |= (<u64>load<u8>(p + k)) << (8 * <u64>this.dataLength);
      this.dataLength++;
    }
    // The whole line in one feed, ended here, one document: kept while its bytes are at hand.
    const template = json.template;
    if (template !== null && first && used < n && json.done) template.keep(p, used);
    return used;
  }

  /** Readies `json` for this event's document. */
  private start(): void {
    this.started = true;
    const json = this.json;
    json.reset();
    json.captureModel = this.keepsModel;
  }

  /** The length of the data line at `p` when it matches the last event (its template, under the same model capture), else -1. */
  private matchLast(p: usize, n: i32): i32 {
    const last = this.last;
    if (last === null || last.captureModel != this.keepsModel) return -1;
    return last.template!.match(p, n);
  }

  /** The event goes on past a line that matched the last one: the last event's scanner, as that line left it, reads on. */
  private takeLast(): void {
    const last = this.last!;
    this.last = null;
    this.matched = false;
    last.bytes = this.matchedBytes;
    this.json = last;
    this.started = true;
  }

  private endLine(): void {
    if (this.line == Line.Start) {
      this.dispatch(); // a blank line ends the event
    } else if (this.line == Line.DataSpace) {
      this.beginDataLine(); // "data:" with nothing after it
    }
    this.line = Line.Start;
    this.fieldLength = 0;
    this.fieldBytes = 0;
  }

  private dispatch(): void {
    if (!this.eventHasData) return;
    this.eventHasData = false;
    this.events++;
    const matched = this.matched;
    this.matched = false;
    if (!matched && !this.started) this.start(); // only empty data lines came
    if (!matched && this.json.bytes == DONE_LENGTH && this.dataPrefix == 0x5d454e4f445b) { // "[DONE]"
      this.sawDone = true;
      return;
    }
    if (matched && this.lastPlain) {
      this.jsonEvents++;
      if (this.lastContent) this.contentChunks++;
      if (this.lastTokenEvent) this.tokenEvents++;
      return;
    }
    const json = matched ? this.last! : this.json;
    json.finish();
    this.usageInvalid += json.usageInvalid;
    const sink = this.sink;
    if (!json.done) {
      this.malformedEvents++;
      if (sink !== null) sink.rollback();
      return;
    }
    this.jsonEvents++;
    if (json.recognized) this.recognized = true;
    // Which events' text is the output: the protocol's rule.
    const protocol = this.protocol;
    let content = json.sawContent;
    let kept = true;
    let tokenEvent = false;
    if (protocol == Protocol.Responses) {
      kept = json.eventKind == EventKind.TextDelta; // other deltas are tool arguments, reasoning, refusals
      content = content && kept;
    } else if (protocol == Protocol.Tgi) {
      tokenEvent = json.contentStrings > 0;
      if (tokenEvent) this.tokenEvents++;
      kept = !json.tokenSpecial; // special tokens are no text (TGI Token.special)
      content = content && kept;
    } else if (protocol == Protocol.OpenAi) {
      kept = json.choiceIndex <= 0; // one output message: the first choice's
    }
    if (!kept && sink !== null) sink.rollback();
    if (json.eventKind == EventKind.Final) this.sawDone = true;
    if (content) this.contentChunks++;
    if (this.keepsModel) {
      if (this.model.length == 0 && json.model.length > 0) this.model = json.model;
      if (this.id.length == 0 && json.id.length > 0) this.id = json.id;
      this.keepsModel = this.model.length == 0 || this.id.length == 0;
    }
    if (json.cachedTokens >= 0) this.cachedTokens = json.cachedTokens;
    if (json.reasoningTokens >= 0) this.reasoningTokens = json.reasoningTokens;
    if (json.finishReason.length > 0) this.finishReason = json.finishReason;
    if (json.promptTokens >= 0) this.promptTokens = json.promptTokens;
    if (json.completionTokens >= 0) this.completionTokens = json.completionTokens;
    if (json.cacheCreationTokens >= 0) this.cacheCreationTokens = json.cacheCreationTokens;
    if (json.outputTokenDelta >= 0) this.outputTokenSum = (this.outputTokenSum < 0 ? 0 : this.outputTokenSum) + json.outputTokenDelta;
    if (json.status.length > 0) this.status = json.status;
    if (json.incompleteReason.length > 0) this.incompleteReason = json.incompleteReason;
    const template = json.template;
    if (!matched && template !== null && template.ready && this.dataLines == 1) {
      // This event is the one the next is matched against; the scanner it replaces scans the next.
      const last = this.last;
      this.last = json;
      this.json = last !== null ? last : eventScanner(this.protocol, this.sink);
      this.lastContent = content;
      this.lastTokenEvent = tokenEvent;
      this.lastPlain = json.recognized && json.foundNoValue;
    }
  }
}

/** "data:" at `p` (five bytes readable). */
// @ts-ignore: decorator
@inline
function isDataField(p: usize): bool {
  return load<u32>(p) == DATA && load<u8>(p + 4) == 0x3a;
}

/** "event:" at `p` (six bytes readable). */
// @ts-ignore: decorator
@inline
function isEventField(p: usize): bool {
  return load<u32>(p) == EVEN && load<u16>(p + 4) == T_COLON;
}

/** A scanner for one event's data at a time; it records a template when no content is captured. */
function eventScanner(protocol: Protocol, sink: CaptureSink | null): JsonScanner {
  const json = new JsonScanner();
  json.lineMode = true;
  json.events = true;
  json.protocol = protocol;
  json.sink = sink;
  if (sink === null) json.template = new EventTemplate();
  return json;
}

/** The first index in [i, n) holding a CR or LF, else n: sixteen bytes at a time (wasm SIMD, as json-scan's strings). */
function lineEnd(p: usize, i: i32, n: i32): i32 {
  const lf = i8x16.splat(0x0a);
  const cr = i8x16.splat(0x0d);
  while (i + 16 <= n) {
    const v = v128.load(p + i);
    const bits = i8x16.bitmask(v128.or(i8x16.eq(v, lf), i8x16.eq(v, cr)));
    if (bits != 0) return i + <i32>ctz(bits);
    i += 16;
  }
  while (i < n) {
    const c = load<u8>(p + i);
    if (c == 0x0a || c == 0x0d) return i;
    i++;
  }
  return n;
}
