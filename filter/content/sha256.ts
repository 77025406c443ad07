// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) over bytes in linear memory, for the keyed
// hashes of linkable pseudonyms (redact.ts). The key's padded blocks are hashed once per
// configuration, so a value costs two or three compressions. Pure logic: no host calls.

const K: StaticArray<u32> = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];
const IV: StaticArray<u32> = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const W: StaticArray<u32> = new StaticArray<u32>(64);
const BLOCK: usize = memory.data(64);
const DIGEST: usize = memory.data(32);

function compress(h: StaticArray<u32>, block: usize): void {
  for (let t = 0; t < 16; t++) unchecked((W[t] = bswap<u32>(load<u32>(block + (<usize>t << 2)))));
  for (let t = 16; t < 64; t++) {
    const w15 = unchecked(W[t - 15]);
    const w2 = unchecked(W[t - 2]);
    const s0 = rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10);
    unchecked((W[t] = unchecked(W[t - 16]) + s0 + unchecked(W[t - 7]) + s1));
  }
  let a = unchecked(h[0]), b = unchecked(h[1]), c = unchecked(h[2]), d = unchecked(h[3]);
  let e = unchecked(h[4]), f = unchecked(h[5]), g = unchecked(h[6]), hh = unchecked(h[7]);
  for (let t = 0; t < 64; t++) {
    const t1 = hh + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + unchecked(K[t]) + unchecked(W[t]);
    const t2 = (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  unchecked((h[0] += a));
  unchecked((h[1] += b));
  unchecked((h[2] += c));
  unchecked((h[3] += d));
  unchecked((h[4] += e));
  unchecked((h[5] += f));
  unchecked((h[6] += g));
  unchecked((h[7] += hh));
}

/**
 * Hashes `n` more bytes at `p` into `h`, which has already absorbed `before` bytes (whole blocks),
 * pads, and writes the 32-byte digest at `out`.
 */
function finish(h: StaticArray<u32>, p: usize, n: i32, before: i32, out: usize): void {
  let i = 0;
  for (; i + 64 <= n; i += 64) compress(h, p + i);
  const rest = n - i;
  memory.fill(BLOCK, 0, 64);
  memory.copy(BLOCK, p + i, rest);
  store<u8>(BLOCK + rest, 0x80);
  if (rest >= 56) {
    compress(h, BLOCK);
    memory.fill(BLOCK, 0, 64);
  }
  store<u64>(BLOCK + 56, bswap<u64>(<u64>(before + n) << 3));
  compress(h, BLOCK);
  for (let k = 0; k < 8; k++) store<u32>(out + (<usize>k << 2), bswap<u32>(unchecked(h[k])));
}

function fillW(value: u32): void {
  for (let t = 0; t < 64; t++) unchecked((W[t] = value));
}

/** SHA-256 of `n` bytes at `p`, written (32 bytes) at `out`. */
export function sha256(p: usize, n: i32, out: usize): void {
  const h = new StaticArray<u32>(8);
  for (let k = 0; k < 8; k++) unchecked((h[k] = unchecked(IV[k])));
  finish(h, p, n, 0, out);
}

/** An HMAC-SHA-256 key, its inner and outer padded blocks already absorbed. */
export class HmacKey {
  private inner: StaticArray<u32> = new StaticArray<u32>(8);
  private outer: StaticArray<u32> = new StaticArray<u32>(8);
  private state: StaticArray<u32> = new StaticArray<u32>(8);

  constructor(key: ArrayBuffer) {
    // K0: the key, hashed when longer than a block, zero-padded to 64 bytes (RFC 2104).
    const k0 = new ArrayBuffer(64);
    const k = changetype<usize>(k0);
    if (key.byteLength > 64) sha256(changetype<usize>(key), key.byteLength, k);
    else memory.copy(k, changetype<usize>(key), key.byteLength);
    this.absorb(this.inner, k, 0x36);
    this.absorb(this.outer, k, 0x5c);
    // The key's copies are wiped: only the absorbed states remain.
    memory.fill(k, 0, 64);
    memory.fill(BLOCK, 0, 64);
    fillW(0);
  }

  /** Wipes the states: this key can no longer be used, and its material is gone from memory. */
  wipe(): void {
    for (let i = 0; i < 8; i++) {
      unchecked((this.inner[i] = 0));
      unchecked((this.outer[i] = 0));
      unchecked((this.state[i] = 0));
    }
  }

  private absorb(h: StaticArray<u32>, k0: usize, pad: u8): void {
    for (let i = 0; i < 64; i++) store<u8>(BLOCK + i, load<u8>(k0 + i) ^ pad);
    for (let i = 0; i < 8; i++) unchecked((h[i] = unchecked(IV[i])));
    compress(h, BLOCK);
  }

  /** HMAC-SHA-256 of `n` bytes at `p`, written (32 bytes) at `out`. */
  mac(p: usize, n: i32, out: usize): void {
    const h = this.state;
    for (let i = 0; i < 8; i++) unchecked((h[i] = unchecked(this.inner[i])));
    finish(h, p, n, 64, DIGEST);
    for (let i = 0; i < 8; i++) unchecked((h[i] = unchecked(this.outer[i])));
    finish(h, DIGEST, 32, 64, out);
  }
}
