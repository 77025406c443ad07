// What the receiver keeps of a request is bounded and owned: a retained string is a copy of at
// most the characters it may keep, never a slice of a request body (in V8 a slice of 13 or more
// characters is a SlicedString that keeps its whole parent alive: one kept 256-character attribute
// would pin a 1 MiB request), and a body's nesting is measured before any tree is built from it.

/** V8 copies substrings shorter than this (SlicedString::kMinLength), so they pin nothing. */
const minSlicedLength = 13;

/**
 * At most `maxChars` of `s`, in storage of its own. Slicing a concatenation makes V8 flatten it
 * into a new sequential string first, so the result can only keep that copy alive.
 */
export function ownedPrefix(s: string, maxChars: number): string {
  if (s.length <= maxChars) return s;
  const cut = s.slice(0, maxChars);
  return cut.length < minSlicedLength ? cut : (" " + cut).slice(1);
}

/** What {@link boundJsonStrings} found. */
export type BoundedJson = { ok: true; body: Buffer; cutStrings: number } | { ok: false; reason: "too-deep" | "unterminated-string" };

/** The longest raw string (between its quotes, escapes included) the compacted body keeps: room for MAX characters of any escape form. */
export const keptStringBytes = (maxChars: number): number => maxChars * 6 + 8;

/** Where to cut a string's raw bytes at most `at`: never inside an escape sequence. */
function safeCut(body: Uint8Array, start: number, at: number): number {
  let cut = at;
  // An escape is at most 6 bytes (\uXXXX): cut before any backslash in the last 6.
  for (let i = Math.max(start, at - 6); i < at; i++) {
    if (body[i] === 0x5c) {
      cut = i;
      break;
    }
  }
  // A run of backslashes before the cut must be whole pairs (\\ is one character).
  let run = 0;
  for (let i = cut - 1; i >= start && body[i] === 0x5c; i--) run++;
  return run % 2 === 1 ? cut - 1 : cut;
}

/**
 * One pass over a JSON body before it is parsed: refuses nesting deeper than `maxDepth` (brackets
 * inside strings do not count), and returns the body with every string longer than
 * `maxStringBytes` raw bytes cut to that (at an escape boundary), so JSON.parse never builds a
 * string the receiver would not keep whole: a 1 MiB attribute costs a scan with memchr, not a
 * 1 MiB string. The body is copied only when a string was cut. No recursion, no tree.
 */
export function boundJsonStrings(body: Buffer, maxDepth: number, maxStringBytes: number): BoundedJson {
  let depth = 0;
  let pieces: Buffer[] | undefined;
  let copiedUpTo = 0;
  let cutStrings = 0;
  const n = body.length;
  let i = 0;
  while (i < n) {
    const c = body[i] as number;
    if (c === 0x22) {
      const start = i + 1;
      // The closing quote: the next quote not escaped (an odd run of backslashes before it escapes it).
      let end = body.indexOf(0x22, start);
      for (;;) {
        if (end < 0) return { ok: false, reason: "unterminated-string" };
        let run = 0;
        for (let k = end - 1; k >= start && body[k] === 0x5c; k--) run++;
        if (run % 2 === 0) break;
        end = body.indexOf(0x22, end + 1);
      }
      if (end - start > maxStringBytes) {
        const cut = safeCut(body, start, start + maxStringBytes);
        pieces ??= [];
        pieces.push(body.subarray(copiedUpTo, cut));
        copiedUpTo = end;
        cutStrings++;
      }
      i = end + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return { ok: false, reason: "too-deep" };
    } else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  }
  if (pieces === undefined) return { ok: true, body, cutStrings: 0 };
  pieces.push(body.subarray(copiedUpTo));
  return { ok: true, body: Buffer.concat(pieces), cutStrings };
}
