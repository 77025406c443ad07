// The pseudonym key, fetched from the control plane as the key contract fixes it: GET
// /v1/filters/{namespace}.{name}/content-key on its filter-facing listener, answered 200
// {"version","key"} (key in lower-case hex, ETag the version, Cache-Control: no-store), 304 when
// ?version= names the version in force, 403 when the caller may not read that namespace's key,
// 404 when there is none. The key lives only here, in linear memory, as the HMAC states it keys
// (the hex and the bytes it came in are wiped once absorbed); it never reaches a log, a stat or a
// span, which carry its version at most. A new version replaces the old one at once, without a
// restart; until a key is held, or when a fetch fails, spans fall back to typed placeholders.
import * as host from "../host/host";
import { ACCEPT, AUTHORITY, GET, JSON_TYPE, METHOD, PATH, STATUS } from "../host/names";
import { HmacKey } from "./sha256";
import { decimal } from "../decimal";
import { sameBytes } from "../bytes";

/** Where the key stands. Anything but Held means typed placeholders. */
export const enum KeyState { None, Held, Missing, Refused, Unreachable }

/** Outcome of one HTTP call response. */
export const enum KeyOutcome { NotOurs, Unchanged, Updated, Failed }

/** An answer bigger than this is no key answer (a 512-byte key is 1,024 hex characters). */
const MAX_RESPONSE_BYTES: u32 = 4096;
/** The contract's key is 32 random bytes or more; more than 512 is no key. */
const MIN_KEY_BYTES: i32 = 32;
const MAX_KEY_BYTES: i32 = 512;
/** A version names a file: [a-z0-9-]{1,32}. */
const MAX_VERSION_LENGTH: i32 = 32;
/** After a failure the fetch is tried again after 1 s, doubling up to the refresh interval. */
const RETRY_MIN_MS: i32 = 1000;
const NS_PER_MS: u64 = 1_000_000;

const AUTHORIZATION = String.UTF8.encode("authorization");
const BEARER = String.UTF8.encode("Bearer ");

export class KeyPoller {
  state: KeyState = KeyState.None;
  key: HmacKey | null = null;
  /** The version of the key held ("" when none). */
  version: string = "";
  /** Why the last fetch failed (a status or a shape, never key material), for the log. */
  failure: string = "";
  private inFlightToken: i64 = -1;
  private nextFetchNs: u64 = 0;
  private retryMs: i32 = 0;
  /** The source the key came from: a different one starts over. */
  private sourceId: string = "";
  private path: string = "";
  private token: ArrayBuffer | null = null;

  /** Drops the key and forgets the source (pseudonyms off, or the content module's policy changed). */
  clear(): void {
    this.dropKey(KeyState.None);
    this.sourceId = "";
    this.inFlightToken = -1;
    this.nextFetchNs = 0;
    this.retryMs = 0;
    this.wipeToken();
  }

  /**
   * Fetches the key from `workload`'s path on `cluster` when one is due and none is in flight.
   * `tokenEnv` names the VM environment variable holding a bearer token ("" for none).
   */
  maybeFetch(cluster: ArrayBuffer, authority: ArrayBuffer, workload: string, tokenEnv: string, timeoutMs: i32, refreshMs: i32): void {
    const id = String.UTF8.decode(cluster) + "\n" + String.UTF8.decode(authority) + "\n" + workload + "\n" + tokenEnv;
    if (id != this.sourceId) {
      this.clear();
      this.sourceId = id;
      this.path = "/v1/filters/" + workload + "/content-key";
      if (tokenEnv.length > 0) this.token = host.readEnv(tokenEnv);
    }
    if (this.inFlightToken >= 0) return;
    const now = host.nowNs();
    if (now < this.nextFetchNs) return;
    // The next fetch waits a refresh interval, or (set on failure) less.
    this.nextFetchNs = now + <u64>refreshMs * NS_PER_MS;
    const path = this.version.length > 0 ? this.path + "?version=" + this.version : this.path;
    const names: Array<ArrayBuffer> = [METHOD, PATH, AUTHORITY, ACCEPT];
    const values: Array<ArrayBuffer> = [GET, String.UTF8.encode(path), authority, JSON_TYPE];
    const token = this.token;
    let bearer: ArrayBuffer | null = null;
    if (token !== null) {
      bearer = new ArrayBuffer(BEARER.byteLength + token.byteLength);
      const b = changetype<usize>(bearer);
      memory.copy(b, changetype<usize>(BEARER), BEARER.byteLength);
      memory.copy(b + BEARER.byteLength, changetype<usize>(token), token.byteLength);
      names.push(AUTHORIZATION);
      values.push(bearer);
    }
    const headers = host.encodePairs(names, values);
    const call = host.httpCall(cluster, headers, new ArrayBuffer(0), <u32>timeoutMs);
    // The token's copies are wiped once the host has copied the call.
    if (bearer !== null) {
      memory.fill(changetype<usize>(bearer), 0, bearer.byteLength);
      memory.fill(changetype<usize>(headers), 0, headers.byteLength);
    }
    if (call >= 0) {
      this.inFlightToken = call;
    } else {
      this.failed(KeyState.Unreachable, "the host refused the call (is the cluster defined?)", refreshMs);
    }
  }

  /** Handles an HTTP call response; Updated means a new version is in force. */
  onResponse(token: u32, headerCount: u32, bodySize: u32, refreshMs: i32): KeyOutcome {
    if (<i64>token != this.inFlightToken) return KeyOutcome.NotOurs;
    this.inFlightToken = -1;
    const status = host.HTTP_CALL_STATUS;
    const code = headerCount != 0 && host.readHttpCallResponseHeader(STATUS, status) ? String.UTF8.decodeUnsafe(status.ptr, status.length) : "";
    if (code == "304" && this.state == KeyState.Held) {
      this.retryMs = 0;
      return KeyOutcome.Unchanged;
    }
    if (code == "404") return this.failed(KeyState.Missing, "the control plane has no key for this workload (404)", refreshMs);
    if (code == "403") return this.failed(KeyState.Refused, "the control plane refused this workload the key (403)", refreshMs);
    if (code != "200") return this.failed(KeyState.Unreachable, "the control plane answered " + (code.length > 0 ? code : "nothing (timeout or reset)"), refreshMs);
    if (bodySize > MAX_RESPONSE_BYTES) return this.failed(KeyState.Unreachable, "the key answer is larger than " + decimal(MAX_RESPONSE_BYTES) + " bytes", refreshMs);
    const body = host.getHttpCallResponseBody(bodySize);
    if (body === null) return this.failed(KeyState.Unreachable, "could not read the key answer", refreshMs);
    const parsed = parseKeyAnswer(changetype<usize>(body), body.byteLength);
    memory.fill(changetype<usize>(body), 0, body.byteLength);
    if (parsed === null) return this.failed(KeyState.Unreachable, "the key answer is not {\"version\", \"key\"} with a [a-z0-9-] version and 32 to 512 bytes of lower-case hex", refreshMs);
    const old = this.key;
    this.key = parsed.key;
    if (old !== null) old.wipe();
    const updated = parsed.version != this.version || this.state != KeyState.Held;
    this.version = parsed.version;
    this.state = KeyState.Held;
    this.retryMs = 0;
    return updated ? KeyOutcome.Updated : KeyOutcome.Unchanged;
  }

  private failed(state: KeyState, why: string, refreshMs: i32): KeyOutcome {
    this.dropKey(state);
    this.failure = why;
    // Retried sooner than a refresh: 1 s, doubling, up to the refresh interval.
    this.retryMs = this.retryMs == 0 ? RETRY_MIN_MS : this.retryMs * 2;
    if (this.retryMs > refreshMs) this.retryMs = refreshMs;
    this.nextFetchNs = host.nowNs() + <u64>this.retryMs * NS_PER_MS;
    return KeyOutcome.Failed;
  }

  /** A fetch that fails leaves no key in force: typed placeholders until one is fetched again. */
  private dropKey(state: KeyState): void {
    const key = this.key;
    if (key !== null) key.wipe();
    this.key = null;
    this.version = "";
    this.state = state;
  }

  private wipeToken(): void {
    const token = this.token;
    if (token !== null) memory.fill(changetype<usize>(token), 0, token.byteLength);
    this.token = null;
  }
}

class KeyAnswer {
  version: string = "";
  key: HmacKey | null = null;
}

/**
 * Reads `{"version": "<[a-z0-9-]{1,32}>", "key": "<hex>"}` (members in any order, JSON whitespace
 * around tokens, nothing else) from `n` bytes at `p`; the key bytes are absorbed into an HMAC key
 * and wiped. Null when the answer is anything else.
 */
function parseKeyAnswer(p: usize, n: i32): KeyAnswer | null {
  let i = skipSpace(p, 0, n);
  if (i >= n || load<u8>(p + i) != 0x7b) return null;
  i++;
  let versionStart = -1;
  let versionEnd = -1;
  let keyStart = -1;
  let keyEnd = -1;
  for (let member = 0; member < 2; member++) {
    i = skipSpace(p, i, n);
    const nameStart = i + 1;
    i = stringEnd(p, i, n);
    if (i < 0) return null;
    const nameLength = i - 1 - nameStart;
    i = skipSpace(p, i, n);
    if (i >= n || load<u8>(p + i) != 0x3a) return null;
    i = skipSpace(p, i + 1, n);
    const valueStart = i + 1;
    i = stringEnd(p, i, n);
    if (i < 0) return null;
    const valueEnd = i - 1;
    if (nameLength == 7 && sameBytes(p + nameStart, changetype<usize>(VERSION_NAME), 7) && versionStart < 0) {
      versionStart = valueStart;
      versionEnd = valueEnd;
    } else if (nameLength == 3 && sameBytes(p + nameStart, changetype<usize>(KEY_NAME), 3) && keyStart < 0) {
      keyStart = valueStart;
      keyEnd = valueEnd;
    } else {
      return null;
    }
    i = skipSpace(p, i, n);
    if (i >= n) return null;
    const c = load<u8>(p + i);
    i++;
    if (c == 0x7d) break;
    if (c != 0x2c) return null;
  }
  if (versionStart < 0 || keyStart < 0 || skipSpace(p, i, n) != n || load<u8>(p + i - 1) != 0x7d) return null;
  const versionLength = versionEnd - versionStart;
  if (versionLength < 1 || versionLength > MAX_VERSION_LENGTH) return null;
  for (let k = versionStart; k < versionEnd; k++) {
    const c = <u32>load<u8>(p + k);
    if (!(c - 0x61 < 26 || c - 0x30 < 10 || c == 0x2d)) return null;
  }
  const hexLength = keyEnd - keyStart;
  if ((hexLength & 1) != 0 || hexLength < MIN_KEY_BYTES * 2 || hexLength > MAX_KEY_BYTES * 2) return null;
  const bytes = new ArrayBuffer(hexLength >> 1);
  const b = changetype<usize>(bytes);
  let ok = true;
  for (let k = 0; k < hexLength >> 1; k++) {
    const high = lowerHexValue(load<u8>(p + keyStart + 2 * k));
    const low = lowerHexValue(load<u8>(p + keyStart + 2 * k + 1));
    if (high < 0 || low < 0) {
      ok = false;
      break;
    }
    store<u8>(b + k, <u8>((high << 4) | low));
  }
  let answer: KeyAnswer | null = null;
  if (ok) {
    answer = new KeyAnswer();
    answer.version = String.UTF8.decodeUnsafe(p + versionStart, versionLength);
    answer.key = new HmacKey(bytes);
  }
  memory.fill(b, 0, bytes.byteLength);
  return answer;
}

const VERSION_NAME = String.UTF8.encode("version");
const KEY_NAME = String.UTF8.encode("key");

function skipSpace(p: usize, i: i32, n: i32): i32 {
  while (i < n) {
    const c = load<u8>(p + i);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    i++;
  }
  return i;
}

/** The index after a string without escapes that starts at `i`, or -1. */
function stringEnd(p: usize, i: i32, n: i32): i32 {
  if (i >= n || load<u8>(p + i) != 0x22) return -1;
  i++;
  while (i < n) {
    const c = load<u8>(p + i);
    if (c == 0x22) return i + 1;
    if (c == 0x5c || c < 0x20) return -1; // no name or value of the answer needs an escape
    i++;
  }
  return -1;
}

function lowerHexValue(c: u8): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>c - 0x30;
  if (c >= 0x61 && c <= 0x66) return <i32>c - 0x61 + 10;
  return -1;
}
