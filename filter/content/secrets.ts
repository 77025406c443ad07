// Detectors of secrets and identifiers that begin a word: vendor token formats, JSON Web Tokens,
// PEM private keys, credentials in URLs, Authorization and bearer credentials, any value assigned to
// a secret's name (env, shell, INI, YAML, JSON, XML, query strings), IBANs, UK National Insurance
// numbers and Spanish NIEs. Pure logic. Formats, read as facts from:
// - vendor formats: gitleaks/gitleaks config/gitleaks.toml at b58d3f1 (its per-vendor rules:
//   prefixes, body alphabets and lengths);
// - secret names: Yelp/detect-secrets detect_secrets/plugins/keyword.py at 5e14193 (the denylist:
//   api_?key, auth_?key, account_?key, priv_?key, client_?key, db_?pass, password, passwd, pwd,
//   secret, ...; the =, :, :=, == forms) and gitleaks' generic-api-key rule (access, auth, api,
//   credential, creds, key, passw(or)?d, secret, token), whatever the value looks like;
// - PEM: RFC 7468 (-----BEGIN <label>-----, the label ending PRIVATE KEY; OpenPGP's PRIVATE KEY BLOCK);
// - URLs: RFC 3986 3.2.1 (userinfo before "@" in the authority);
// - Authorization: RFC 9110 11.6.2 (credentials = auth-scheme [ 1*SP ... ]), RFC 6750 2.1 (Bearer
//   b64token), RFC 7617 2 (Basic: base64 of user-id ":" password);
// - IBAN: ISO 13616 (country, two check digits, the country's BBAN length; mod 97 = 1), lengths as
//   microsoft/presidio presidio-analyzer/.../generic/iban_patterns.py at 0aa9f8e lists them;
// - UK NINO: two prefix letters (not D, F, I, Q, U, V; the second not O; not BG, GB, KN, NK, NT, TN,
//   ZZ), six digits, A-D (presidio country_specific/uk/uk_nino_recognizer.py at 0aa9f8e).
import { ALPHA, boundary, byteAt, classOf, cls, DIGIT, HEX, IDENT, isSpaceByte, KEY_BODY, runEnd, span, startsWithCase, startsWithWord, TOKEN68, upperAlnum, WORD } from "./chars";
import { dniAt } from "./numbers";

/** What a word starting at `s` is, when a secret or identifier: Credential, Iban or NationalId as pii.ts numbers them. */
export const enum WordKind { None = -1, Credential = 0, Iban = 1, NationalId = 2 }

// ---- vendor token formats ----

// Prefixes (case-sensitive), the shortest body after each, and whether the body may hold ".+/=~"
// (else letters, digits, "_", "-"). gitleaks.toml rule ids in comments.
const PREFIXES: StaticArray<string> = [
  "sk-", "sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "whsec_", // openai/anthropic, stripe
  "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", // github-*
  "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glcbt-", "glffct-", "GR1348941", // gitlab-*
  "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xoxe.", "xapp-", // slack-*
  "hf_", "api_org_", "npm_", "pypi-", "ya29.", "AKCp", "cmVmd", "SG.", "xkeysib-", // huggingface, npm, pypi, gcp oauth, artifactory, sendgrid, sendinblue
  "shpat_", "shpca_", "shppa_", "shpss_", "dop_v1_", "doo_v1_", "dor_v1_", "dp.pt.", "lin_api_", "pplx-", "pnu_", "pul-", // shopify, digitalocean, doppler, linear, perplexity, prefect, pulumi
  "rubygems_", "sntrys_", "sntryu_", "glc_", "glsa_", "hvs.", "hvb.", "AGE-SECRET-KEY-1", "PMAK-", "ntn_", "sq0atp-", "sq0csp-", // rubygems, sentry, grafana, vault, age, postman, notion, square
  "EAAA", "EAAC", "EAAM", "LTAI", "ABSK", "dt0c01.", "EZAK", "EZTK", "FLWSECK_TEST-", "FLWSECK-", "rdme_", "ico-", // square, facebook, alibaba, bedrock, dynatrace, easypost, flutterwave, readme, infracost
  "sm_pat_", "sm_aat_", "sm_sat_", "shippo_live_", "shippo_test_", "HRKU-AA", "ops_eyJ", "sha256~", "pscale_tkn_", "pscale_oauth_", "pscale_pw_", // settlemint, shippo, heroku, 1password, openshift, planetscale
  "duffel_test_", "duffel_live_", "fio-u-", "tk-us-", "CLOJARS_", "gsk_", "xai-", "r8_", // duffel, frameio, scalingo, clojars; groq, xai, replicate keys
];
const MIN_BODY: StaticArray<u8> = [
  20, 10, 10, 10, 10, 10, 10, 20,
  36, 36, 36, 36, 36, 22,
  20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
  10, 10, 10, 10, 10, 10, 10, 10, 10,
  30, 30, 36, 50, 20, 60, 59, 60, 64,
  32, 32, 32, 32, 64, 64, 64, 40, 40, 48, 36, 40,
  48, 40, 64, 32, 32, 90, 100, 58, 50, 40, 22, 22,
  60, 100, 100, 20, 100, 24, 54, 54, 12, 12, 70, 32,
  16, 16, 16, 40, 40, 58, 100, 43, 32, 32, 32,
  40, 40, 60, 48, 60, 40, 40, 30,
];
/** Prefixes whose body may hold "." "+" "/" "=" "~" (base64, dotted parts). */
const WIDE_BODY: StaticArray<u8> = [
  0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 1, 0, 0, 1, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1,
  1, 1, 1, 0, 0, 0, 0, 0,
];
/** The shortest prefix and body ("xoxb-" and 10). */
const MIN_PREFIXED: i32 = 15;

/** The value a vendor prefix at `s` starts, or false. */
function vendorAt(p: usize, s: i32, n: i32, c: u32): bool {
  for (let i = 0; i < PREFIXES.length; i++) {
    const prefix = unchecked(PREFIXES[i]);
    if (<u32>prefix.charCodeAt(0) != c || !startsWithCase(p, s, n, prefix)) continue;
    const from = s + prefix.length;
    const end = runEnd(p, from, n, unchecked(WIDE_BODY[i]) != 0 ? TOKEN68 : KEY_BODY);
    if (end - from >= <i32>unchecked(MIN_BODY[i])) return span(s, end);
  }
  return false;
}

/** `count` hex digits from `s`, then a boundary. */
function hexRun(p: usize, s: i32, n: i32, count: i32): bool {
  if (s + count > n) return false;
  for (let k = 0; k < count; k++) if ((cls(p, s + k) & HEX) == 0) return false;
  return boundary(p, s + count, n);
}

/** Fixed-shape vendor keys: AWS access key ids, Google API keys, Twilio, Mailgun and Databricks keys, Azure AD client secrets. */
function fixedShapeAt(p: usize, s: i32, n: i32, c: u32): bool {
  if (c == 0x41) {
    // AWS: AKIA/ASIA/ABIA/ACCA and 16 more (gitleaks aws-access-token); Google: AIza and 35 (gcp-api-key)
    if ((startsWithCase(p, s, n, "AKIA") || startsWithCase(p, s, n, "ASIA") || startsWithCase(p, s, n, "ABIA") || startsWithCase(p, s, n, "ACCA")) &&
        s + 20 <= n && upperAlnum(p, s + 4, 16) && boundary(p, s + 20, n)) return span(s, s + 20);
    if (startsWithCase(p, s, n, "AIza") && runEnd(p, s + 4, n, KEY_BODY) - s == 39) return span(s, s + 39);
  }
  if (c == 0x53 && startsWithCase(p, s, n, "SK") && hexRun(p, s + 2, n, 32)) return span(s, s + 34); // twilio-api-key
  if (c == 0x6b && startsWithCase(p, s, n, "key-") && hexRun(p, s + 4, n, 32)) return span(s, s + 36); // mailgun-private-api-token
  if (c == 0x64 && startsWithCase(p, s, n, "dapi") && hexRun(p, s + 4, n, 32)) return span(s, s + 36); // databricks-api-token
  // azure-ad-client-secret: three characters, a digit, "Q~", 31 to 34 more
  if (s + 37 <= n && (cls(p, s + 3) & DIGIT) != 0 && load<u8>(p + s + 4) == 0x51 && load<u8>(p + s + 5) == 0x7e) {
    let k = s + 6;
    while (k < n && ((cls(p, k) & KEY_BODY) != 0 || load<u8>(p + k) == 0x7e || load<u8>(p + k) == 0x2e)) k++;
    if (k - s - 6 >= 31) return span(s, k);
  }
  return false;
}

/** A JSON Web Token from its header alone: "eyJ" (base64url of '{"') and 10 more, with the parts after it. */
function jwtAt(p: usize, s: i32, n: i32): bool {
  if (!startsWithCase(p, s, n, "eyJ")) return false;
  let k = runEnd(p, s, n, KEY_BODY);
  if (k - s < 13) return false;
  // A JWS has three parts, a JWE five; a cut one fewer (the whole run goes).
  for (let dots = 0; dots < 4 && k < n && load<u8>(p + k) == 0x2e && is64url(p, k + 1, n); dots++) k = runEnd(p, k + 1, n, KEY_BODY);
  while (k < n && load<u8>(p + k) == 0x3d) k++; // padding some encoders leave
  return span(s, k);
}

function is64url(p: usize, i: i32, n: i32): bool {
  return i < n && (cls(p, i) & KEY_BODY) != 0;
}

// ---- PEM private keys ----

/** A PEM private key block (RFC 7468) beginning at `s` ("-----BEGIN"): replaced to its END line, or to the end of the text. */
export function pemAt(p: usize, s: i32, n: i32): bool {
  if (!startsWithCase(p, s, n, "-----BEGIN ")) return false;
  let k = s + 11;
  const labelStart = k;
  while (k < n && k - labelStart < 64 && load<u8>(p + k) != 0x2d && load<u8>(p + k) != 0x0a) k++;
  if (!startsWithCase(p, k, n, "-----")) return false;
  const label = k - labelStart;
  const privateKey = (label >= 11 && startsWithCase(p, k - 11, n, "PRIVATE KEY")) || (label >= 17 && startsWithCase(p, k - 17, n, "PRIVATE KEY BLOCK"));
  if (!privateKey) return false;
  // To the end of the matching END line; an unterminated block (cut by the buffer) goes to the end.
  k += 5;
  while (k < n) {
    if (load<u8>(p + k) == 0x2d && startsWithCase(p, k, n, "-----END ")) {
      let e = k + 9;
      while (e < n && e - k < 80 && load<u8>(p + e) != 0x0a) {
        if (startsWithCase(p, e, n, "-----") && e > k + 9) return span(s, e + 5);
        e++;
      }
    }
    k++;
  }
  return span(s, n);
}

// ---- URLs ----

/** Credentials in a URL whose scheme begins at `s` (scheme://user:pass@host), or a webhook URL's secret path. */
function urlAt(p: usize, s: i32, n: i32): bool {
  let e = s;
  while (e < n && e - s < 32) {
    const c = load<u8>(p + e);
    if ((classOf(c) & WORD) == 0 && c != 0x2b && c != 0x2e && c != 0x2d) break;
    e++;
  }
  if (e + 3 > n || load<u8>(p + e) != 0x3a || load<u8>(p + e + 1) != 0x2f || load<u8>(p + e + 2) != 0x2f) return false;
  const u = e + 3;
  let k = u;
  let lastAt = -1;
  while (k < n) {
    const c = load<u8>(p + k);
    if (c == 0x2f || c == 0x3f || c == 0x23 || c <= 0x20 || c == 0x22 || c == 0x27 || c == 0x3c || c == 0x3e || c == 0x60 || c == 0x5c) break;
    if (c == 0x40) lastAt = k;
    k++;
  }
  // The last "@" ends the userinfo: an unencoded "@" in a password belongs to it.
  if (lastAt > u && lastAt + 1 < n && (cls(p, lastAt + 1) & WORD) != 0) return span(u, lastAt);
  // Webhooks whose path is the secret (gitleaks slack-webhook-url; Discord's webhooks likewise).
  if (lastAt < 0 && k < n && load<u8>(p + k) == 0x2f) {
    const host = k - u;
    if ((host == 15 && startsWithWord(p, u, n, "hooks.slack.com")) || (host == 11 && startsWithWord(p, u, n, "discord.com")) || (host == 14 && startsWithWord(p, u, n, "discordapp.com"))) {
      let end = k;
      while (end < n && load<u8>(p + end) > 0x20 && load<u8>(p + end) != 0x22 && load<u8>(p + end) != 0x27 && load<u8>(p + end) != 0x3e) end++;
      if (end - k > 20) return span(k, end);
    }
  }
  return false;
}

// ---- Authorization, Bearer, Basic ----

/**
 * The credentials of an Authorization value starting at `k` (after "Authorization:" and spaces):
 * the scheme kept, the rest of the line replaced. `open` is the quote the value opened with
 * ("Authorization": "Bearer ..."): it ends at the first of it not escaped. `outer` is the quote
 * the whole header sits in (curl -H 'Authorization: ...'): it ends at the last of it on the line.
 */
function authorizationValue(p: usize, k: i32, n: i32, open: u32, outer: u32): bool {
  const schemeStart = k;
  while (k < n && (cls(p, k) & (WORD | TOKEN68)) != 0) k++;
  const schemeEnd = k;
  if (schemeEnd == schemeStart) return false;
  let start = schemeStart;
  if (k < n && isSpaceByte(load<u8>(p + k))) {
    // "<scheme> <credentials>": any whitespace between them
    while (k < n && isSpaceByte(load<u8>(p + k))) k++;
    start = k;
  }
  // The line ends at a line break, or at "\n" written out (JSON within the text).
  let lineEnd = start;
  while (lineEnd < n) {
    const b = <u32>load<u8>(p + lineEnd);
    if (b == 0x0a || b == 0x0d || (b == 0x5c && byteAt(p, lineEnd + 1, n) == 0x6e)) break;
    lineEnd++;
  }
  let end = lineEnd;
  if (open != 0) {
    for (let i = start; i < lineEnd; i++) {
      const b = <u32>load<u8>(p + i);
      if (b == 0x5c) {
        i++; // an escaped character belongs to the value
        continue;
      }
      if (b == open) {
        end = i;
        break;
      }
    }
  } else if (outer != 0) {
    for (let i = lineEnd - 1; i >= start; i--) {
      if (<u32>load<u8>(p + i) == outer) {
        end = i;
        break;
      }
    }
  }
  while (end > start && (load<u8>(p + end - 1) == 0x20 || load<u8>(p + end - 1) == 0x09)) end--;
  return end > start && span(start, end);
}

/** "Bearer <token>" with any whitespace between (RFC 6750 b64token): a token of 8 or more that is no plain word. */
function bearerAt(p: usize, s: i32, n: i32): bool {
  let k = s + 6;
  const spaceStart = k;
  while (k < n && k - spaceStart < 8 && isSpaceByte(load<u8>(p + k))) k++;
  if (k == spaceStart) return false;
  const start = k;
  let lower = false;
  let upper = false;
  let other = false;
  while (k < n && (cls(p, k) & TOKEN68) != 0) {
    const c = <u32>load<u8>(p + k);
    if (c - 0x61 < 26) lower = true;
    else if (c - 0x41 < 26) upper = true;
    else other = true; // a digit or one of -._~+/=
    k++;
  }
  const size = k - start;
  return size >= 8 && (other || (lower && upper) || size >= 20) && span(start, k);
}

/** "Basic <base64 of user:password>" (RFC 7617): the value must decode to text holding ":". */
function basicAt(p: usize, s: i32, n: i32): bool {
  let k = s + 5;
  const spaceStart = k;
  while (k < n && k - spaceStart < 8 && isSpaceByte(load<u8>(p + k))) k++;
  if (k == spaceStart) return false;
  const start = k;
  while (k < n && (cls(p, k) & TOKEN68) != 0) k++;
  if (k - start < 8 || !base64HasColon(p, start, k)) return false;
  return span(start, k);
}

function base64Value(c: u32): i32 {
  if (c - 0x41 < 26) return <i32>(c - 0x41);
  if (c - 0x61 < 26) return <i32>(c - 0x61) + 26;
  if (c - 0x30 < 10) return <i32>(c - 0x30) + 52;
  if (c == 0x2b) return 62;
  if (c == 0x2f) return 63;
  return -1;
}

/** Base64 from `s` to `e` decodes (its first 96 characters are looked at) to bytes holding ":". */
function base64HasColon(p: usize, s: i32, e: i32): bool {
  let bits: u32 = 0;
  let count = 0;
  const end = e - s > 96 ? s + 96 : e;
  for (let k = s; k < end; k++) {
    const v = base64Value(<u32>load<u8>(p + k));
    if (v < 0) return false;
    bits = (bits << 6) | <u32>v;
    count += 6;
    if (count >= 8) {
      count -= 8;
      if (((bits >> <u32>count) & 0xff) == 0x3a) return true;
    }
  }
  return false;
}

/** The quote right before `s` (the one a header or a name is inside of), or 0. */
function outerQuote(p: usize, s: i32, n: i32): u32 {
  const c = byteAt(p, s - 1, n);
  return c == 0x22 || c == 0x27 || c == 0x60 ? c : 0;
}

// ---- values assigned to a secret's name ----

const NAME: usize = memory.data(64);
const MAX_NAME: i32 = 64;
// Names whose value is a secret whatever it is (normalised: lower case, without "_", "-", ".").
const STRONG_NAMES: StaticArray<string> = [
  "passw", "passphrase", "secret", "pwd", "credential", "creds", "contrasen", "motdepasse", "privatekey", "apikey",
  "accesskey", "accountkey", "cookie", "sessionid", "authorization", "clientkey", "signingkey", "encryptionkey",
];
// Names ending so hold a secret unless the value is a flag or a small count (max_tokens is no secret's name: "tokens").
const WEAK_ENDINGS: StaticArray<string> = ["key", "token", "pass", "auth", "sig", "signature", "jwt", "bearer", "pw"];

/** 0: no secret's name; 1: a weak one (key, token, ...); 2: a strong one (password, secret, ...). */
function secretName(p: usize, s: i32, e: i32): i32 {
  let m = 0;
  for (let k = s; k < e; k++) {
    let c = <u32>load<u8>(p + k);
    if (c == 0x5f || c == 0x2d || c == 0x2e) continue;
    if (c - 0x41 < 26) c += 0x20;
    store<u8>(NAME + m++, <u8>c);
  }
  if (m < 2) return 0;
  for (let i = 0; i < STRONG_NAMES.length; i++) if (containsAscii(NAME, m, unchecked(STRONG_NAMES[i]))) return 2;
  for (let i = 0; i < WEAK_ENDINGS.length; i++) {
    const w = unchecked(WEAK_ENDINGS[i]);
    if (m >= w.length && equalsAscii(NAME + m - w.length, w)) return 1;
  }
  return 0;
}

function equalsAscii(at: usize, s: string): bool {
  for (let i = 0; i < s.length; i++) if (<u32>load<u8>(at + i) != <u32>s.charCodeAt(i)) return false;
  return true;
}

function containsAscii(at: usize, m: i32, s: string): bool {
  const w = s.length;
  const first = <u32>s.charCodeAt(0);
  for (let i = 0; i + w <= m; i++) if (<u32>load<u8>(at + i) == first && equalsAscii(at + i, s)) return true;
  return false;
}

/** A flag or a small count, which a weak name (key, token) may hold without it being a secret. */
function harmlessValue(p: usize, s: i32, e: i32): bool {
  const size = e - s;
  if (size == 0) return true;
  let digits = true;
  for (let k = s; k < e; k++) if ((cls(p, k) & DIGIT) == 0) digits = false;
  if (digits && size <= 6) return true;
  if (size > 5) return false;
  return (size == 4 && (startsWithWord(p, s, e, "true") || startsWithWord(p, s, e, "null") || startsWithWord(p, s, e, "none"))) ||
    (size == 5 && startsWithWord(p, s, e, "false")) || (size == 3 && (startsWithWord(p, s, e, "nil") || startsWithWord(p, s, e, "yes"))) ||
    (size == 2 && startsWithWord(p, s, e, "no"));
}

/** A quote opening a value at `k`: its byte, with `quoteSize` 2 for an escaped one (\" in JSON within text). */
let quoteSize: i32 = 0;
function quoteAt(p: usize, k: i32, n: i32): u32 {
  const c = byteAt(p, k, n);
  if (c == 0x22 || c == 0x27 || c == 0x60) {
    quoteSize = 1;
    return c;
  }
  if (c == 0x5c && (byteAt(p, k + 1, n) == 0x22 || byteAt(p, k + 1, n) == 0x27)) {
    quoteSize = 2;
    return byteAt(p, k + 1, n);
  }
  quoteSize = 0;
  return 0;
}

const enum Form { Assignment, Query, Xml, Word, Flag }

/**
 * A value assigned to a secret's name at `s`: NAME= NAME: NAME:= NAME=> NAME== "NAME": <NAME>,
 * --NAME value, "NAME is value", each with quotes or not. The value (quoted: to its closing quote,
 * or the end of the text when none comes; otherwise to the end of the line, or in a query string to
 * the next "&") is the secret.
 */
function assignedAt(p: usize, s: i32, word: i32, n: i32): bool {
  // Quick: what follows a word in prose (a comma, a stop, a space and a word other than "is" or
  // "was") assigns nothing. A name goes on with "_", "-", "."; an assignment follows a quote,
  // spaces, ":", "=", "?", ">".
  const next = byteAt(p, word, n);
  if (next == 0x20) {
    const w = byteAt(p, word + 1, n);
    if ((classOf(<u8>w) & ALPHA) != 0 && (w | 0x20) != 0x69 && (w | 0x20) != 0x77 && byteAt(p, s - 1, n) != 0x2d) return false;
  } else if (!(next == 0x5f || next == 0x2d || next == 0x2e || next == 0x22 || next == 0x27 || next == 0x60 || next == 0x5c || next == 0x3a || next == 0x3d || next == 0x3f || next == 0x3e || next == 0x09)) {
    return false;
  }
  const e = runEnd(p, word, n, IDENT);
  if (e - s > MAX_NAME) return false;
  let k = e;
  const q = quoteAt(p, k, n);
  if (q != 0) k += quoteSize;
  let space = 0;
  while (k < n && space < 4 && (load<u8>(p + k) == 0x20 || load<u8>(p + k) == 0x09)) {
    k++;
    space++;
  }
  const c = byteAt(p, k, n);
  const before = byteAt(p, s - 1, n);
  let form = Form.Assignment;
  if (c == 0x3d || c == 0x3a) {
    k++;
    const d = byteAt(p, k, n);
    if ((c == 0x3a && d == 0x3d) || (c == 0x3d && (d == 0x3e || d == 0x3d))) k++;
    if (c == 0x3d && (before == 0x3f || before == 0x26) && space == 0) form = Form.Query;
  } else if (c == 0x3f && byteAt(p, k + 1, n) == 0x3d) {
    k += 2;
  } else if (c == 0x3e && before == 0x3c && q == 0) {
    k++;
    form = Form.Xml;
  } else if (q == 0 && space == 1 && (startsWithWord(p, k, n, "is ") || startsWithWord(p, k, n, "was "))) {
    k += startsWithWord(p, k, n, "is ") ? 3 : 4;
    form = Form.Word;
  } else if (q == 0 && space >= 1 && before == 0x2d && byteAt(p, s - 2, n) == 0x2d) {
    form = Form.Flag; // --password value, --auth_token value
  } else {
    return false;
  }
  const strength = secretName(p, s, e);
  if (strength == 0 || (form == Form.Word && strength < 2)) return false;
  while (k < n && (load<u8>(p + k) == 0x20 || load<u8>(p + k) == 0x09)) k++;
  const open = quoteAt(p, k, n);
  let start = k;
  let end = k;
  if (open != 0) {
    const size = quoteSize;
    start = k + size;
    end = start;
    while (end < n) {
      const b = <u32>load<u8>(p + end);
      if (size == 1 && b == open) break;
      if (b == 0x5c) {
        if (size == 2 && byteAt(p, end + 1, n) == open) break;
        end += 2; // an escaped character is part of the value
        continue;
      }
      end++;
    }
    if (end > n) end = n;
  } else {
    while (end < n) {
      const b = <u32>load<u8>(p + end);
      if (b == 0x0a || b == 0x0d || b == 0x22 || b == 0x27 || b == 0x60) break;
      if (form == Form.Query && (b <= 0x20 || b == 0x26 || b == 0x23 || b == 0x3e)) break;
      if (form == Form.Xml && b == 0x3c) break;
      if ((form == Form.Word || form == Form.Flag) && b <= 0x20) break;
      if (b == 0x5c && (byteAt(p, end + 1, n) == 0x22 || byteAt(p, end + 1, n) == 0x6e)) break; // the end of a JSON string within text
      end++;
    }
    while (end > start && (load<u8>(p + end - 1) == 0x20 || load<u8>(p + end - 1) == 0x09)) end--;
  }
  if (end <= start) return false;
  if (strength == 1) {
    // A weak name's value is judged by its first token (token: 42, key: true are no secrets).
    let first = start;
    while (first < end && load<u8>(p + first) > 0x20 && load<u8>(p + first) != 0x2c && load<u8>(p + first) != 0x3b && load<u8>(p + first) != 0x7d) first++;
    if (harmlessValue(p, start, first)) return false;
  }
  return span(start, end);
}

// ---- IBAN, NINO, NIE ----

// ISO 13616 countries and their IBAN lengths: 4 + the BBAN length in the comment of each country in
// presidio iban_patterns.py at 0aa9f8e (its MU, PS, PT and QA regexes are shorter than their comments).
const IBAN_COUNTRIES = "AL28AD24AT20AZ28BH22BY28BE16BA20BR29BG22CR22HR21CY28CZ24DK18DO28TL23EE20FO18FI18FR27GE22DE22GI23GR27GL18GT28HU28IS26IE22IL23IT27JO30KZ20XK20KW30LV21LB28LI21LT20LU20MT31MR27MU30MD24MC27ME22NL18MK19NO15PK24PS29PL28PT25QA29RO24SM27SA24RS22SK24SI19ES24SE24CH21TN24TR26AE23GB22VA22VG24EG29IQ23LY25LC32SC31UA29";
const IBAN_CHARS: usize = memory.data(34);

function ibanLength(a: u32, b: u32): i32 {
  for (let i = 0; i < IBAN_COUNTRIES.length; i += 4) {
    if (<u32>IBAN_COUNTRIES.charCodeAt(i) == a && <u32>IBAN_COUNTRIES.charCodeAt(i + 1) == b) {
      return (IBAN_COUNTRIES.charCodeAt(i + 2) - 0x30) * 10 + IBAN_COUNTRIES.charCodeAt(i + 3) - 0x30;
    }
  }
  return 0;
}

/** An IBAN at `s`: a known country, its exact length in letters and digits (grouped by single spaces or not), mod 97 = 1. */
function ibanAt(p: usize, s: i32, n: i32): bool {
  const length = ibanLength(<u32>load<u8>(p + s) & ~0x20, <u32>load<u8>(p + s + 1) & ~0x20);
  if (length == 0) return false;
  let count = 0;
  let k = s;
  while (k < n && count < length) {
    const c = <u32>load<u8>(p + k);
    if ((classOf(<u8>c) & WORD) != 0) {
      store<u8>(IBAN_CHARS + count++, <u8>(c - 0x61 < 26 ? c - 0x20 : c));
      k++;
    } else if ((c == 0x20 || c == 0x2d) && count > 0 && k + 1 < n && (cls(p, k + 1) & WORD) != 0 && (cls(p, k - 1) & WORD) != 0) {
      k++;
    } else {
      break;
    }
  }
  if (count != length || !boundary(p, k, n)) return false;
  // ISO 7064 MOD 97-10: the first four characters moved to the end, letters as 10..35.
  let remainder = 0;
  for (let i = 0; i < length; i++) {
    const c = <i32>load<u8>(IBAN_CHARS + (i + 4) % length);
    if (c >= 0x30 && c <= 0x39) remainder = (remainder * 10 + c - 0x30) % 97;
    else if (c >= 0x41 && c <= 0x5a) remainder = (remainder * 100 + c - 0x41 + 10) % 97;
    else return false;
  }
  return remainder == 1 && span(s, k);
}

/** A UK National Insurance number: AB 12 34 56 C, spaced or not, in either case. */
function ninoAt(p: usize, s: i32, n: i32): bool {
  const a = <u32>load<u8>(p + s) & ~0x20;
  const b = <u32>byteAt(p, s + 1, n) & ~0x20;
  if (b - 0x41 >= 26 || a == 0x44 || a == 0x46 || a == 0x49 || a == 0x51 || a == 0x55 || a == 0x56) return false;
  if (b == 0x44 || b == 0x46 || b == 0x49 || b == 0x4f || b == 0x51 || b == 0x55 || b == 0x56) return false;
  const pair = (a << 8) | b;
  if (pair == 0x4247 || pair == 0x4742 || pair == 0x4b4e || pair == 0x4e4b || pair == 0x4e54 || pair == 0x544e || pair == 0x5a5a) return false;
  let k = s + 2;
  for (let pairs = 0; pairs < 3; pairs++) {
    if (byteAt(p, k, n) == 0x20) k++;
    if (k + 2 > n || (cls(p, k) & DIGIT) == 0 || (cls(p, k + 1) & DIGIT) == 0) return false;
    k += 2;
  }
  if (byteAt(p, k, n) == 0x20) k++;
  const suffix = byteAt(p, k, n) & ~0x20;
  if (suffix < 0x41 || suffix > 0x44 || !boundary(p, k + 1, n)) return false;
  return span(s, k + 1);
}

// ---- dispatch ----

/** Bit c - 0x61 is set for the lower-case letters some fixed form above begins with. */
const AUTH_WORD = "authorization";
const PROXY_AUTH_WORD = "proxy-authorization";

/** What the word beginning at `s` (a letter, no word character before it) starts: a secret, an IBAN, a NINO or an NIE, else None. */
export function wordAt(p: usize, s: i32, word: i32, n: i32): WordKind {
  const c = <u32>load<u8>(p + s);
  // Long runs: vendor tokens and JWTs (a prose word is shorter than the shortest of them).
  const after = byteAt(p, word, n);
  const wide = (classOf(<u8>after) & TOKEN68) != 0 ? runEnd(p, word, n, TOKEN68) : word;
  if (wide - s >= MIN_PREFIXED) {
    if (c == 0x65 && jwtAt(p, s, n)) return WordKind.Credential;
    if (vendorAt(p, s, n, c) || fixedShapeAt(p, s, n, c)) return WordKind.Credential;
  }
  const second = byteAt(p, s + 1, n);
  // IBAN: two letters, two digits (DE89 3704 ...); NINO: two letters and digits; NIE: X, Y or Z and digits.
  if ((classOf(<u8>second) & ALPHA) != 0) {
    const third = byteAt(p, s + 2, n);
    if ((classOf(<u8>third) & DIGIT) != 0 && (classOf(<u8>byteAt(p, s + 3, n)) & DIGIT) != 0 && ibanAt(p, s, n)) return WordKind.Iban;
    if (((classOf(<u8>third) & DIGIT) != 0 || (third == 0x20 && (classOf(<u8>byteAt(p, s + 3, n)) & DIGIT) != 0)) && ninoAt(p, s, n)) return WordKind.NationalId;
  } else if ((classOf(<u8>second) & DIGIT) != 0) {
    const lower = c | 0x20;
    if (lower >= 0x78 && lower <= 0x7a && dniAt(p, s + 1, n, <i32>(lower - 0x78))) return WordKind.NationalId;
  }
  // scheme://user:password@host
  if ((after == 0x3a || after == 0x2b || after == 0x2e) && urlAt(p, s, n)) return WordKind.Credential;
  const size = word - s;
  const lowerC = c | 0x20;
  // Authorization: <scheme> <credentials> (any scheme, any whitespace), in headers, curl -H, JSON, YAML.
  if (lowerC == 0x61 && size == 13 && startsWithWord(p, s, n, AUTH_WORD) || lowerC == 0x70 && size == 5 && startsWithWord(p, s, n, PROXY_AUTH_WORD)) {
    let k = s + (lowerC == 0x61 ? 13 : 19);
    const q = quoteAt(p, k, n);
    if (q != 0) k += quoteSize;
    while (k < n && (load<u8>(p + k) == 0x20 || load<u8>(p + k) == 0x09)) k++;
    if (k < n && (load<u8>(p + k) == 0x3a || load<u8>(p + k) == 0x3d)) {
      k++;
      while (k < n && (load<u8>(p + k) == 0x20 || load<u8>(p + k) == 0x09)) k++;
      const open = quoteAt(p, k, n);
      if (open != 0) k += quoteSize;
      if (authorizationValue(p, k, n, open, open != 0 ? 0 : q != 0 ? q : outerQuote(p, s, n))) return WordKind.Credential;
    }
  }
  if (lowerC == 0x62) {
    if (size == 6 && startsWithWord(p, s, n, "bearer") && bearerAt(p, s, n)) return WordKind.Credential;
    if (size == 5 && startsWithWord(p, s, n, "basic") && basicAt(p, s, n)) return WordKind.Credential;
  }
  // NAME=value and its kin: only when an assignment (or "is") follows the name.
  if (assignedAt(p, s, word, n)) return WordKind.Credential;
  return WordKind.None;
}

/** A Telegram bot token at a run of digits `s`: 5 to 16 digits, ":", "A" and 34 more (gitleaks telegram-bot-api-token). */
export function telegramAt(p: usize, s: i32, n: i32): bool {
  const digits = runEnd(p, s, n, DIGIT);
  if (digits - s < 5 || digits - s > 16 || byteAt(p, digits, n) != 0x3a || byteAt(p, digits + 1, n) != 0x41) return false;
  const end = runEnd(p, digits + 1, n, KEY_BODY);
  return end - digits - 1 == 35 && span(s, end);
}
