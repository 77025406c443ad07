// A Server-Sent Events scanner over raw bytes, fed chunk by chunk as a streamed response passes:
// events may be split anywhere, including inside a line ending. Each event's `data` is scanned
// as JSON (the protocol's stream events) and folded into totals; `data: [DONE]` ends the
// stream. Nothing is buffered beyond the scanner state (and, when the span captures content,
// the bounded text its sink keeps). Pure logic: no host calls.
import { CaptureSink } from "../content/sink";
import { EventKind, JsonScanner } from "./json-scan";
import { Protocol } from "../protocols";

const enum Line { Start, Field, DataSpace, Data, Skip }

/** "data" as the field-name bytes must read. */
const DATA: u32 = 0x61746164; // "data" little-endian
const DONE_LENGTH: i32 = 6; // "[DONE]"

export class SseScanner {
  private line: Line = Line.Start;
  private lastWasCr: bool = false;
  private fieldLength: i32 = 0;
  private fieldBytes: u32 = 0;
  private json: JsonScanner;
  private protocol: Protocol;
  private sink: CaptureSink | null;

  constructor(protocol: Protocol, sink: CaptureSink | null) {
    const json = new JsonScanner();
    json.lineMode = true;
    json.events = true;
    json.protocol = protocol;
    json.sink = sink;
    this.json = json;
    this.protocol = protocol;
    this.sink = sink;
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
      switch (this.line) {
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
          i++; // Skip
      }
    }
  }

  /** The stream ended: an event not yet terminated by a blank line still counts. */
  finish(): void {
    if (this.line != Line.Start) this.endLine();
    this.dispatch();
  }

  private beginDataLine(): void {
    if (!this.eventHasData) {
      this.eventHasData = true;
      this.json.reset();
      this.json.captureModel = this.model.length == 0 || this.id.length == 0;
      const sink = this.sink;
      if (sink !== null) sink.mark();
      this.dataPrefix = 0;
      this.dataLength = 0;
    } else {
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
    const used = this.json.feed(p, n);
    for (let k = 0; k < used && this.dataLength < 8; k++) {
      this.dataPrefix |= (<u64>load<u8>(p + k)) << (8 * <u64>this.dataLength);
      this.dataLength++;
    }
    return used;
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
    if (this.json.bytes == DONE_LENGTH && this.dataPrefix == 0x5d454e4f445b) { // "[DONE]"
      this.sawDone = true;
      return;
    }
    const json = this.json;
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
    if (protocol == Protocol.Responses) {
      kept = json.eventKind == EventKind.TextDelta; // other deltas are tool arguments, reasoning, refusals
      content = content && kept;
    } else if (protocol == Protocol.Tgi) {
      if (json.contentStrings > 0) this.tokenEvents++;
      kept = !json.tokenSpecial; // special tokens are no text (TGI Token.special)
      content = content && kept;
    } else if (protocol == Protocol.OpenAi) {
      kept = json.choiceIndex <= 0; // one output message: the first choice's
    }
    if (!kept && sink !== null) sink.rollback();
    if (json.eventKind == EventKind.Final) this.sawDone = true;
    if (content) this.contentChunks++;
    if (this.model.length == 0 && json.model.length > 0) this.model = json.model;
    if (this.id.length == 0 && json.id.length > 0) this.id = json.id;
    if (json.cachedTokens >= 0) this.cachedTokens = json.cachedTokens;
    if (json.reasoningTokens >= 0) this.reasoningTokens = json.reasoningTokens;
    if (json.finishReason.length > 0) this.finishReason = json.finishReason;
    if (json.promptTokens >= 0) this.promptTokens = json.promptTokens;
    if (json.completionTokens >= 0) this.completionTokens = json.completionTokens;
    if (json.cacheCreationTokens >= 0) this.cacheCreationTokens = json.cacheCreationTokens;
    if (json.outputTokenDelta >= 0) this.outputTokenSum = (this.outputTokenSum < 0 ? 0 : this.outputTokenSum) + json.outputTokenDelta;
    if (json.status.length > 0) this.status = json.status;
    if (json.incompleteReason.length > 0) this.incompleteReason = json.incompleteReason;
  }
}
