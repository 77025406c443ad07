// Strict decoding of request bodies, as the Kubernetes API server decodes objects
// (kubernetes-sigs/json @cfa47c3, internal/golang/encoding/json: `DisallowDuplicateFields`
// reports `duplicate field "a.b"`; scanner.go `maxNestingDepth`): a key repeated in one object is
// refused, naming its path, instead of the last one silently winning, and nesting is bounded.
// Kubernetes allows 10,000 levels for arbitrary objects; our deepest valid document (a policy
// envelope down to a route rule) nests 6 containers, so 64 leaves room while every recursive step that
// follows (merge patch, validation, canonical form) stays far from the JS stack limit.
//
// The scan is iterative (no recursion, so no depth can overflow the stack) and accepts exactly
// RFC 8259 JSON; once it passes, JSON.parse builds the value (keys such as "__proto__" become
// ordinary own properties there).

/** Deepest nesting of objects and arrays a body may have. */
export const maxJsonDepth = 64;

/** A decoded body, or where and why it is refused. */
export type StrictJson = { ok: true; value: unknown } | { ok: false; field: string; reason: string };

type Frame = { kind: "object"; keys: Set<string>; key: string | undefined } | { kind: "array"; index: number };

const hexDigit = /^[0-9a-fA-F]$/;

/** `a.b[0].c` from the open containers (the path style of every error the API reports). */
function pathOf(stack: readonly Frame[], last?: string): string {
  let out = "";
  for (const frame of stack) {
    if (frame.kind === "array") out += `[${frame.index}]`;
    else if (frame.key !== undefined) out += out === "" ? frame.key : `.${frame.key}`;
  }
  if (last !== undefined) out += out === "" ? last : `.${last}`;
  return out === "" ? "(body)" : out;
}

/** Decodes `text` as one JSON value: duplicate keys and nesting beyond `maxDepth` are refused. */
export function decodeStrictJson(text: string, maxDepth = maxJsonDepth): StrictJson {
  let i = 0;
  const n = text.length;
  const stack: Frame[] = [];
  const syntax = (what: string): StrictJson => ({ ok: false, field: "(body)", reason: `not valid JSON: ${what} at character ${i + 1}` });
  const unexpected = (): StrictJson => (i >= n ? { ok: false, field: "(body)", reason: "not valid JSON: unexpected end of input" } : syntax(`unexpected ${JSON.stringify(text[i])}`));
  const skipWhitespace = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      i++;
    }
  };
  // Scans the string starting at text[i] === '"'; returns its end (index after the closing quote) or -1.
  const scanString = (): { end: number; escaped: boolean } | undefined => {
    let j = i + 1;
    let escaped = false;
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c === 0x22) return { end: j + 1, escaped };
      if (c < 0x20) return undefined;
      if (c === 0x5c) {
        escaped = true;
        const e = text[j + 1];
        if (e === "u") {
          for (let k = 2; k < 6; k++) if (!hexDigit.test(text[j + k] ?? "")) return undefined;
          j += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) {
          j += 2;
        } else return undefined;
      } else j++;
    }
    return undefined;
  };
  const scanNumber = (): boolean => {
    let j = i;
    if (text[j] === "-") j++;
    if (text[j] === "0") j++;
    else if (text[j] !== undefined && text[j]! >= "1" && text[j]! <= "9") while (text[j] !== undefined && text[j]! >= "0" && text[j]! <= "9") j++;
    else return false;
    if (text[j] === ".") {
      j++;
      const start = j;
      while (text[j] !== undefined && text[j]! >= "0" && text[j]! <= "9") j++;
      if (j === start) return false;
    }
    if (text[j] === "e" || text[j] === "E") {
      j++;
      if (text[j] === "+" || text[j] === "-") j++;
      const start = j;
      while (text[j] !== undefined && text[j]! >= "0" && text[j]! <= "9") j++;
      if (j === start) return false;
    }
    i = j;
    return true;
  };

  // Two states: expecting a value, or having just finished one.
  let expectValue = true;
  skipWhitespace();
  for (;;) {
    if (expectValue) {
      const c = text[i];
      if (c === "{" || c === "[") {
        if (stack.length >= maxDepth) return { ok: false, field: pathOf(stack), reason: `nested deeper than ${maxDepth} levels` };
        i++;
        skipWhitespace();
        if (c === "[") {
          stack.push({ kind: "array", index: 0 });
          if (text[i] === "]") {
            i++;
            stack.pop();
            expectValue = false;
          }
          continue;
        }
        stack.push({ kind: "object", keys: new Set(), key: undefined });
        if (text[i] === "}") {
          i++;
          stack.pop();
          expectValue = false;
          continue;
        }
        const keyed = readKey();
        if (keyed !== undefined) return keyed;
        continue;
      }
      if (c === '"') {
        const s = scanString();
        if (s === undefined) return syntax("invalid string");
        i = s.end;
      } else if (c === "t" || c === "f" || c === "n") {
        const word = c === "t" ? "true" : c === "f" ? "false" : "null";
        if (text.startsWith(word, i)) i += word.length;
        else return unexpected();
      } else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) {
        if (!scanNumber()) return syntax("invalid number");
      } else return unexpected();
      expectValue = false;
      continue;
    }
    skipWhitespace();
    const top = stack[stack.length - 1];
    if (top === undefined) {
      if (i !== n) return unexpected();
      break;
    }
    const c = text[i];
    if (c === ",") {
      i++;
      skipWhitespace();
      if (top.kind === "array") {
        top.index++;
        expectValue = true;
        continue;
      }
      const keyed = readKey();
      if (keyed !== undefined) return keyed;
      continue;
    }
    if ((top.kind === "array" && c === "]") || (top.kind === "object" && c === "}")) {
      i++;
      stack.pop();
      continue;
    }
    return unexpected();
  }

  // Reads `"key" :` inside the object on top of the stack; returns an error, or undefined to go on with the value.
  function readKey(): StrictJson | undefined {
    const frame = stack[stack.length - 1] as Frame & { kind: "object" };
    if (text[i] !== '"') return unexpected();
    const s = scanString();
    if (s === undefined) return syntax("invalid string");
    const key = s.escaped ? (JSON.parse(text.slice(i, s.end)) as string) : text.slice(i + 1, s.end - 1);
    if (frame.keys.has(key)) {
      frame.key = undefined;
      return { ok: false, field: pathOf(stack, key), reason: "duplicate key" };
    }
    frame.keys.add(key);
    frame.key = key;
    i = s.end;
    skipWhitespace();
    if (text[i] !== ":") return unexpected();
    i++;
    skipWhitespace();
    expectValue = true;
    return undefined;
  }

  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    // The scan accepts exactly what JSON.parse accepts; reaching here would be a bug in the scan.
    return { ok: false, field: "(body)", reason: "not valid JSON" };
  }
}
