// The header-map pairs format against byte vectors written out by hand from the proxy-wasm spec.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodePairs, encodePairs, PairsFormatError } from "./pairs.js";

// [[":path", "/a"], ["x", "yz"]]: u32 count, (u32 key len, u32 value len) per pair, then NUL-terminated data.
const TWO_PAIRS = Uint8Array.from([
  0x02, 0x00, 0x00, 0x00,
  0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
  0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
  0x3a, 0x70, 0x61, 0x74, 0x68, 0x00, 0x2f, 0x61, 0x00,
  0x78, 0x00, 0x79, 0x7a, 0x00,
]);

test("encodePairs writes count, sizes, then NUL-terminated keys and values, little-endian", () => {
  assert.deepEqual([...encodePairs([[":path", "/a"], ["x", "yz"]])], [...TWO_PAIRS]);
});

test("encodePairs of no pairs is a zero count only", () => {
  assert.deepEqual([...encodePairs([])], [0, 0, 0, 0]);
});

test("encodePairs counts UTF-8 bytes, not characters", () => {
  assert.deepEqual([...encodePairs([["k", "é"]])], [1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0x6b, 0, 0xc3, 0xa9, 0]);
});

test("encodePairs writes the UTF-8 of every string, short or long, ASCII or not, wherever a non-ASCII character falls", () => {
  const strings = ["", "a", "abcé", "é", "x".repeat(64) + "é", "y".repeat(65), "z".repeat(63) + "\u{1f600}", "\u0080", "a\u07ffb"];
  const pairs = strings.map((s, i): [string, string] => [strings[(i + 1) % strings.length]!, s]);
  const want: number[] = [pairs.length, 0, 0, 0];
  for (const [k, v] of pairs) want.push(...new Uint8Array(new Uint32Array([Buffer.byteLength(k), Buffer.byteLength(v)]).buffer));
  for (const [k, v] of pairs) want.push(...Buffer.from(k), 0, ...Buffer.from(v), 0);
  assert.deepEqual([...encodePairs(pairs)], want);
  assert.deepEqual(decodePairs(encodePairs(pairs)), pairs);
});

test("decodePairs reads the hand-built vector back", () => {
  assert.deepEqual(decodePairs(TWO_PAIRS), [[":path", "/a"], ["x", "yz"]]);
});

test("decodePairs of an empty buffer is an empty map, as Envoy reads it", () => {
  assert.deepEqual(decodePairs(new Uint8Array(0)), []);
});

const broken: Array<[string, Uint8Array, RegExp]> = [
  ["a key without its NUL", Uint8Array.from([...TWO_PAIRS.slice(0, 25), 0x41, ...TWO_PAIRS.slice(26)]), /pair 0: key at offset 20 is not followed by NUL/],
  ["a truncated buffer", TWO_PAIRS.slice(0, 32), /pair 1: value of 2 bytes at offset 31 overruns the buffer/],
  ["trailing bytes", Uint8Array.from([...TWO_PAIRS, 0]), /1 trailing bytes after 2 pairs/],
  ["a count with no room for its sizes", Uint8Array.from([3, 0, 0, 0, 0, 0, 0, 0]), /pairs count 3 needs 28 bytes of sizes, buffer has 8/],
  ["a buffer shorter than its count", Uint8Array.from([1, 0]), /shorter than its u32 count/],
  ["more than 1024 pairs", Uint8Array.from([0x01, 0x04, 0, 0]), /pairs count 1025 exceeds Envoy's limit of 1024/],
];
for (const [what, bytes, message] of broken) {
  test(`decodePairs refuses ${what}`, () => {
    assert.throws(() => decodePairs(bytes), (e: unknown) => e instanceof PairsFormatError && message.test(e.message));
  });
}

test("decodePairs refuses a buffer over Envoy's 1 MiB limit", () => {
  assert.throws(() => decodePairs(new Uint8Array(1024 * 1024 + 1)), /exceeds Envoy's limit of 1048576/);
});
