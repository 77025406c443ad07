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

/**
 * Whether the JSON text in `body` nests objects and arrays deeper than `maxDepth` (brackets inside
 * strings do not count). A byte scan without recursion or allocation: JSON.parse runs only on
 * bodies that pass it, so a body a million levels deep costs one pass, not a tree.
 */
export function jsonDeeperThan(body: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as number;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
