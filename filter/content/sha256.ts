// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) over bytes in linear memory, for the keyed
// hashes of linkable pseudonyms (redact.ts). The key's padded blocks are hashed once per
// configuration, so a value costs two or three compressions. Pure logic: no host calls.

const IV: StaticArray<u32> = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const BLOCK: usize = memory.data(64);
const DIGEST: usize = memory.data(32);

/** One SHA-256 compression of the 64-byte block at `block` into `h`, unrolled (FIPS 180-4 6.2.2; a 16-word rolling schedule). */
function compress(state: StaticArray<u32>, block: usize): void {
  let a = unchecked(state[0]);
  let b = unchecked(state[1]);
  let c = unchecked(state[2]);
  let d = unchecked(state[3]);
  let e = unchecked(state[4]);
  let f = unchecked(state[5]);
  let g = unchecked(state[6]);
  let h = unchecked(state[7]);
  let w0 = bswap<u32>(load<u32>(block, 0));
  let w1 = bswap<u32>(load<u32>(block, 4));
  let w2 = bswap<u32>(load<u32>(block, 8));
  let w3 = bswap<u32>(load<u32>(block, 12));
  let w4 = bswap<u32>(load<u32>(block, 16));
  let w5 = bswap<u32>(load<u32>(block, 20));
  let w6 = bswap<u32>(load<u32>(block, 24));
  let w7 = bswap<u32>(load<u32>(block, 28));
  let w8 = bswap<u32>(load<u32>(block, 32));
  let w9 = bswap<u32>(load<u32>(block, 36));
  let w10 = bswap<u32>(load<u32>(block, 40));
  let w11 = bswap<u32>(load<u32>(block, 44));
  let w12 = bswap<u32>(load<u32>(block, 48));
  let w13 = bswap<u32>(load<u32>(block, 52));
  let w14 = bswap<u32>(load<u32>(block, 56));
  let w15 = bswap<u32>(load<u32>(block, 60));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0x428a2f98 + w0;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0x71374491 + w1;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0xb5c0fbcf + w2;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0xe9b5dba5 + w3;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x3956c25b + w4;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0x59f111f1 + w5;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x923f82a4 + w6;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0xab1c5ed5 + w7;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0xd807aa98 + w8;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0x12835b01 + w9;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0x243185be + w10;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0x550c7dc3 + w11;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x72be5d74 + w12;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0x80deb1fe + w13;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x9bdc06a7 + w14;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0xc19bf174 + w15;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0xe49b69c1 + w0;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0xefbe4786 + w1;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0x0fc19dc6 + w2;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0x240ca1cc + w3;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x2de92c6f + w4;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0x4a7484aa + w5;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x5cb0a9dc + w6;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0x76f988da + w7;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0x983e5152 + w8;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0xa831c66d + w9;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0xb00327c8 + w10;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0xbf597fc7 + w11;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0xc6e00bf3 + w12;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0xd5a79147 + w13;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x06ca6351 + w14;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0x14292967 + w15;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0x27b70a85 + w0;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0x2e1b2138 + w1;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0x4d2c6dfc + w2;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0x53380d13 + w3;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x650a7354 + w4;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0x766a0abb + w5;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x81c2c92e + w6;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0x92722c85 + w7;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0xa2bfe8a1 + w8;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0xa81a664b + w9;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0xc24b8b70 + w10;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0xc76c51a3 + w11;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0xd192e819 + w12;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0xd6990624 + w13;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0xf40e3585 + w14;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0x106aa070 + w15;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0x19a4c116 + w0;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0x1e376c08 + w1;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0x2748774c + w2;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0x34b0bcb5 + w3;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x391c0cb3 + w4;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0x4ed8aa4a + w5;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0x5b9cca4f + w6;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0x682e6ff3 + w7;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + ((e & f) ^ (~e & g)) + 0x748f82ee + w8;
  d += h;
  h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + ((d & e) ^ (~d & f)) + 0x78a5636f + w9;
  c += g;
  g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) ^ (h & b) ^ (a & b));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + ((c & d) ^ (~c & e)) + 0x84c87814 + w10;
  b += f;
  f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) ^ (g & a) ^ (h & a));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + ((b & c) ^ (~b & d)) + 0x8cc70208 + w11;
  a += e;
  e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) ^ (f & h) ^ (g & h));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + ((a & b) ^ (~a & c)) + 0x90befffa + w12;
  h += d;
  d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) ^ (e & g) ^ (f & g));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + ((h & a) ^ (~h & b)) + 0xa4506ceb + w13;
  g += c;
  c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) ^ (d & f) ^ (e & f));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + ((g & h) ^ (~g & a)) + 0xbef9a3f7 + w14;
  f += b;
  b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) ^ (c & e) ^ (d & e));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + ((f & g) ^ (~f & h)) + 0xc67178f2 + w15;
  e += a;
  a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) ^ (b & d) ^ (c & d));
  unchecked((state[0] += a));
  unchecked((state[1] += b));
  unchecked((state[2] += c));
  unchecked((state[3] += d));
  unchecked((state[4] += e));
  unchecked((state[5] += f));
  unchecked((state[6] += g));
  unchecked((state[7] += h));
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
