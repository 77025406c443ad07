// A small strict JSON reader for the plugin configuration. AssemblyScript has no JSON in its
// standard library and cannot catch exceptions, so parse failures come back as a message, never
// as a throw (a throw would abort the VM: REFERENCE section 1).
import { decimal } from "../decimal";

export const enum JsonKind { Null, Bool, Number, String, Array, Object }

/** One JSON value; only the fields of its kind are meaningful. */
export class JsonValue {
  kind: JsonKind = JsonKind.Null;
  bool: bool = false;
  num: f64 = 0;
  str: string = "";
  items: Array<JsonValue> = [];
  keys: Array<string> = [];
  values: Array<JsonValue> = [];

  /** The member named `key` of an object, or null. */
  get(key: string): JsonValue | null {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.values[i];
    }
    return null;
  }
}

/** Deeper documents are rejected: the configuration needs four levels. */
const MAX_DEPTH: i32 = 32;

export class JsonParser {
  private text: string;
  private pos: i32 = 0;
  /** Empty when the last parse succeeded. */
  error: string = "";

  constructor(text: string) {
    this.text = text;
  }

  /** Parses the whole text; null (with `error` set) when it is not exactly one JSON value. */
  parse(): JsonValue | null {
    this.skipSpace();
    const value = this.value(0);
    if (value === null) return null;
    this.skipSpace();
    if (this.pos < this.text.length) return this.fail("unexpected text after the JSON value");
    return value;
  }

  private fail(message: string): JsonValue | null {
    if (this.error.length == 0) this.error = "invalid JSON at offset " + decimal(this.pos) + ": " + message;
    return null;
  }

  private skipSpace(): void {
    while (this.pos < this.text.length) {
      const c = this.text.charCodeAt(this.pos);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.pos++;
    }
  }

  private value(depth: i32): JsonValue | null {
    if (depth > MAX_DEPTH) return this.fail("nested deeper than " + decimal(MAX_DEPTH));
    if (this.pos >= this.text.length) return this.fail("unexpected end");
    const c = this.text.charCodeAt(this.pos);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const s = this.string();
      if (s === null) return null;
      const v = new JsonValue();
      v.kind = JsonKind.String;
      v.str = s;
      return v;
    }
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (this.literal("true")) return boolValue(true);
    if (this.literal("false")) return boolValue(false);
    if (this.literal("null")) return new JsonValue();
    return this.fail("unexpected character");
  }

  private literal(word: string): bool {
    if (this.text.length - this.pos < word.length) return false;
    for (let i = 0; i < word.length; i++) {
      if (this.text.charCodeAt(this.pos + i) != word.charCodeAt(i)) return false;
    }
    this.pos += word.length;
    return true;
  }

  private object(depth: i32): JsonValue | null {
    const v = new JsonValue();
    v.kind = JsonKind.Object;
    this.pos++;
    this.skipSpace();
    if (this.peek() == 0x7d) {
      this.pos++;
      return v;
    }
    while (true) {
      this.skipSpace();
      if (this.peek() != 0x22) return this.fail("expected a string key");
      const key = this.string();
      if (key === null) return null;
      this.skipSpace();
      if (this.peek() != 0x3a) return this.fail("expected ':'");
      this.pos++;
      this.skipSpace();
      const member = this.value(depth + 1);
      if (member === null) return null;
      // A repeated key: the last value wins, as in JSON.parse (ECMA-262), which is what the control
      // plane's schema validation sees, so filter and schema judge the same document.
      const at = v.keys.indexOf(key);
      if (at >= 0) {
        v.values[at] = member;
      } else {
        v.keys.push(key);
        v.values.push(member);
      }
      this.skipSpace();
      const c = this.peek();
      this.pos++;
      if (c == 0x7d) return v;
      if (c != 0x2c) return this.fail("expected ',' or '}'");
    }
  }

  private array(depth: i32): JsonValue | null {
    const v = new JsonValue();
    v.kind = JsonKind.Array;
    this.pos++;
    this.skipSpace();
    if (this.peek() == 0x5d) {
      this.pos++;
      return v;
    }
    while (true) {
      this.skipSpace();
      const item = this.value(depth + 1);
      if (item === null) return null;
      v.items.push(item);
      this.skipSpace();
      const c = this.peek();
      this.pos++;
      if (c == 0x5d) return v;
      if (c != 0x2c) return this.fail("expected ',' or ']'");
    }
  }

  private peek(): i32 {
    return this.pos < this.text.length ? this.text.charCodeAt(this.pos) : -1;
  }

  private string(): string | null {
    this.pos++; // opening quote
    let out = "";
    let runStart = this.pos;
    while (this.pos < this.text.length) {
      const c = this.text.charCodeAt(this.pos);
      if (c == 0x22) {
        out += this.text.substring(runStart, this.pos);
        this.pos++;
        return out;
      }
      if (c < 0x20) {
        this.fail("control character in string");
        return null;
      }
      if (c == 0x5c) {
        out += this.text.substring(runStart, this.pos);
        this.pos++;
        const e = this.peek();
        this.pos++;
        if (e == 0x22) out += "\"";
        else if (e == 0x5c) out += "\\";
        else if (e == 0x2f) out += "/";
        else if (e == 0x62) out += "\b";
        else if (e == 0x66) out += "\f";
        else if (e == 0x6e) out += "\n";
        else if (e == 0x72) out += "\r";
        else if (e == 0x74) out += "\t";
        else if (e == 0x75) {
          let code: i32 = 0;
          for (let i = 0; i < 4; i++) {
            const h = hexValue(this.peek());
            if (h < 0) {
              this.fail("bad \\u escape");
              return null;
            }
            code = (code << 4) | h;
            this.pos++;
          }
          out += String.fromCharCode(code);
        } else {
          this.fail("bad escape");
          return null;
        }
        runStart = this.pos;
        continue;
      }
      this.pos++;
    }
    this.fail("unterminated string");
    return null;
  }

  private number(): JsonValue | null {
    const start = this.pos;
    if (this.peek() == 0x2d) this.pos++;
    const first = this.peek();
    if (first == 0x30) {
      this.pos++;
    } else if (first >= 0x31 && first <= 0x39) {
      while (isDigit(this.peek())) this.pos++;
    } else {
      return this.fail("bad number");
    }
    if (this.peek() == 0x2e) {
      this.pos++;
      if (!isDigit(this.peek())) return this.fail("bad number");
      while (isDigit(this.peek())) this.pos++;
    }
    const e = this.peek();
    if (e == 0x65 || e == 0x45) {
      this.pos++;
      const sign = this.peek();
      if (sign == 0x2b || sign == 0x2d) this.pos++;
      if (!isDigit(this.peek())) return this.fail("bad number");
      while (isDigit(this.peek())) this.pos++;
    }
    const v = new JsonValue();
    v.kind = JsonKind.Number;
    v.num = parseFloat(this.text.substring(start, this.pos));
    return v;
  }
}

function boolValue(b: bool): JsonValue {
  const v = new JsonValue();
  v.kind = JsonKind.Bool;
  v.bool = b;
  return v;
}

function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

/** The value of one hex digit (either case), or -1. */
export function hexValue(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}
