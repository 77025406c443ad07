// A stream's events repeat one another: vLLM's chat chunks differ only in the token's text, the
// Responses API's in the text and a sequence number, TGI's in the text, the token id and its
// logprob. The last well-formed one-line event is kept with where those values lie (slots); a
// next event that equals it byte for byte outside its slots, each slot holding a value of the same
// kind, drives the JSON scanner through the same states and so finds what it found (the caller
// reuses that scan instead of scanning again). A slot is only a value whose bytes the scanner does
// not keep: a string it reads for emptiness at most, a number it ignores. Pure logic: no host calls.
import { findStringStop, isNumberByte, isNumberStart } from "./json-bytes";

const enum Slot {
  /** A string whose text is ignored: any bytes but a quote, a backslash or a line end. */
  Text,
  /** A content string: as Text, and empty exactly when the kept event's was (its emptiness counts). */
  EmptyText,
  NonEmptyText,
  /** A number whose value is ignored: the scanner's number bytes, a digit or '-' first. */
  Number,
}

/** Slots kept per event; values past them stay literal bytes (an event then matches less often). */
const MAX_SLOTS: i32 = 8;
/** The longest event kept (bytes): stream chunks are a few hundred; a longer event is scanned each time. */
const MAX_TEMPLATE_BYTES: i32 = 1024;

export class EventTemplate {
  private bytes: StaticArray<u8> = new StaticArray<u8>(0);
  private length: i32 = 0;
  private slots: i32 = 0;
  /** Per slot its start, its end and its kind, side by side (one cache line for all). */
  private slotTable: StaticArray<i32> = new StaticArray<i32>(3 * MAX_SLOTS);
  /** The bytes of the scanned line are kept, with its slots: the scanner's findings may be reused. */
  ready: bool = false;

  clear(): void {
    this.slots = 0;
    this.length = 0;
    this.ready = false;
  }

  /** A string value at [start, end) of the line (offsets of its first byte and of its closing quote). */
  text(start: i32, end: i32, content: bool): void {
    this.add(start, end, !content ? Slot.Text : end > start ? Slot.NonEmptyText : Slot.EmptyText);
  }

  /** A number value at [start, end) of the line. */
  number(start: i32, end: i32): void {
    this.add(start, end, Slot.Number);
  }

  private add(start: i32, end: i32, kind: Slot): void {
    const k = this.slots;
    if (k == MAX_SLOTS) return;
    const table = this.slotTable;
    unchecked((table[3 * k] = start));
    unchecked((table[3 * k + 1] = end));
    unchecked((table[3 * k + 2] = <i32>kind));
    this.slots = k + 1;
  }

  /** Keeps the `n` bytes of the line at `p` (the slots were recorded as it was scanned), unless it is too long. */
  keep(p: usize, n: i32): void {
    this.ready = false;
    if (n > MAX_TEMPLATE_BYTES) return;
    if (this.bytes.length < n) this.bytes = new StaticArray<u8>(n < 256 ? 256 : n);
    memory.copy(changetype<usize>(this.bytes), p, n);
    this.length = n;
    this.ready = true;
  }

  /**
   * The length of the line at `p` (up to `n` bytes), when it matches: the kept bytes outside the
   * slots, a value of each slot's kind in it, then a CR or LF ending the line. Otherwise -1 (also
   * when the chunk ends first: the line may go on). The bytes are compared eight at a time, and a
   * value is read only where they differ, which must be inside one of the kept event's slots.
   */
  match(p: usize, n: i32): i32 {
    const kept = changetype<usize>(this.bytes);
    const length = this.length;
    const table = this.slotTable;
    let i = 0;
    let at = 0;
    let k = 0;
    while (true) {
      const room = n - i;
      const same = commonPrefix(p + i, kept + at, length - at < room ? length - at : room);
      i += same;
      at += same;
      if (at == length) break;
      if (i == n) return -1;
      // They differ at `at`: inside a slot's value, or at the byte that ends it.
      while (k < this.slots && unchecked(table[3 * k + 1]) < at) k++;
      if (k == this.slots) return -1;
      const start = unchecked(table[3 * k]);
      if (at < start) return -1;
      // Every byte from the value's start to here was the same: the new value starts as far back.
      i -= at - start;
      const kind = <Slot>unchecked(table[3 * k + 2]);
      let end = i;
      if (kind == Slot.Number) {
        if (end < n && isNumberStart(<u32>load<u8>(p + end))) {
          end++;
          while (end < n && isNumberByte(<u32>load<u8>(p + end))) end++;
        }
        if (end == i) return -1;
      } else {
        // Up to a quote, a backslash or a line end: the next kept byte, the closing quote, must be there.
        end = findStringStop(p, i, n, true);
        if (kind == Slot.EmptyText ? end != i : kind == Slot.NonEmptyText && end == i) return -1;
      }
      i = end;
      at = unchecked(table[3 * k + 1]);
      k++;
    }
    if (i == n) return -1;
    const c = load<u8>(p + i);
    return c == 0x0a || c == 0x0d ? i : -1;
  }
}

/** How many of the first `n` bytes at `a` and at `b` are the same, eight at a time. */
function commonPrefix(a: usize, b: usize, n: i32): i32 {
  let i = 0;
  while (i + 8 <= n) {
    const x = load<u64>(a + i) ^ load<u64>(b + i);
    if (x != 0) return i + <i32>(ctz(x) >> 3);
    i += 8;
  }
  while (i < n && load<u8>(a + i) == load<u8>(b + i)) i++;
  return i;
}
