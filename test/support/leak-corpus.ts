// The leak corpus (issue 21, deliverable 4): seed-driven generated values of every kind the
// content module must replace, as people and programs write them. Each value carries its secret
// part: the leak check fails when the raw value, or any 8 characters of its secret part, reaches an
// exported span, a log line or a stat name. Formats follow the catalogues filter/content/*.ts cite
// (gitleaks, detect-secrets, Presidio, libphonenumber, ISO 13616, RFCs); the generator is ours.
import { luhnComplete } from "./luhn.js";
import { mulberry32 } from "./mulberry32.js";

/** One generated value. */
export interface LeakValue {
  kind: string;
  /** As written in the text. */
  text: string;
  /** What must not leave: no 8 characters of it may appear (the raw text must not either). */
  secret: string;
  /** The secret's digits and letters only, for numbers written with separators (checked against the text with separators inside numbers removed). */
  compact?: string;
}

type Rng = () => number;

const LOWER = "abcdefghijklmnopqrstuvwxyz";
const UPPER = LOWER.toUpperCase();
const DIGITS = "0123456789";
const ALNUM = LOWER + UPPER + DIGITS;
const B64 = ALNUM + "+/";
const B64URL = ALNUM + "-_";
const HEXL = "0123456789abcdef";

class Gen {
  constructor(readonly rnd: Rng) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.rnd() * (max - min + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rnd() * xs.length)]!;
  }
  chars(alphabet: string, n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.rnd() * alphabet.length)];
    return s;
  }
  /** A random string of `n` characters of `alphabet` with at least one digit and one upper-case letter (so it reads as no word). */
  token(alphabet: string, n: number): string {
    const s = this.chars(alphabet, n);
    return s.slice(0, -2) + this.chars(DIGITS, 1) + this.chars(UPPER.slice(0, 26), 1);
  }
  digits(n: number): string {
    return this.chars(DIGITS, n);
  }
}

const digitsOf = (s: string): string => s.replace(/[^0-9A-Za-z]/g, "");

// ---- secrets by name ----

const NAMES = [
  "password", "DB_PASSWORD", "db.password", "passwd", "pwd", "MYSQL_PWD", "secret", "client_secret", "CLIENT_SECRET", "SECRET_KEY",
  "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "api_key", "apiKey", "API_KEY", "x-api-key", "AccountKey", "access_token", "auth_token",
  "GITHUB_TOKEN", "refreshToken", "private_key", "signing_key", "token", "passphrase", "smtp_pass", "session_cookie", "credentials", "jwt",
];

function secretValue(g: Gen, quotedForm: boolean): string {
  switch (g.int(0, 5)) {
    case 0: return g.token(ALNUM, g.int(8, 40));
    case 1: return g.token(B64, g.int(20, 60)) + "==";
    case 2: return g.token(HEXL, g.int(32, 64));
    case 3: return g.token(ALNUM + "!#$%*@^&~", g.int(10, 24));
    case 4: return quotedForm ? `${g.pick(["correct", "horse", "battery", "staple", "purple", "monkey"])} ${g.token(LOWER, 6)} ${g.token(ALNUM, 8)}` : g.token(ALNUM + "-_.", 16);
    default: return `wJalr${g.token(ALNUM + "/", 35)}`;
  }
}

function assignment(g: Gen): LeakValue {
  const name = g.pick(NAMES);
  const form = g.int(0, 9);
  const quoted = form === 2 || form === 4 || form === 7;
  const value = secretValue(g, quoted);
  const q = g.pick(['"', "'"]);
  const text = [
    `${name}=${value}`, // env
    `export ${name}=${value}`, // shell
    `${name}=${q}${value}${q}`, // env, quoted
    `${name} = ${value}`, // INI
    `${name}: "${value}"`, // YAML quoted
    `${name}: ${value}`, // YAML
    `{"${name}": "${value.replace(/["\\]/g, "")}"}`, // JSON
    `<${name}>${value.replace(/[<&]/g, "")}</${name}>`, // XML
    `https://api.example.net/cb?x=1&${name}=${encodeURIComponent(value)}&y=2`, // query string
    `--${name} ${value.replace(/\s/g, "")}`, // a flag
  ][form]!;
  const secret = form === 6 ? value.replace(/["\\]/g, "") : form === 7 ? value.replace(/[<&]/g, "") : form === 8 ? encodeURIComponent(value) : form === 9 ? value.replace(/\s/g, "") : value;
  return { kind: "secret by name", text, secret };
}

// ---- PEM, URLs, vendors, Authorization, JWT ----

function pem(g: Gen): LeakValue {
  const label = g.pick(["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK"]);
  const lines = Array.from({ length: g.int(2, 12) }, () => g.token(B64, 64));
  const body = lines.join("\n");
  return { kind: "PEM private key", text: `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----`, secret: lines[0]! };
}

function urlCredentials(g: Gen): LeakValue {
  const user = g.pick(["", g.token(LOWER + DIGITS, 6), "admin", "app"]);
  const pass = g.token(ALNUM + "!$*~", g.int(10, 24));
  const userinfo = user === "" ? `:${pass}` : `${user}:${pass}`;
  const scheme = g.pick(["postgres", "mysql", "redis", "mongodb+srv", "https", "amqp", "ftp"]);
  const host = g.pick(["db.internal", "cache.svc.cluster.local", "broker.local", "10.0.0.5"]);
  return { kind: "credentials in a URL", text: `${scheme}://${userinfo}@${host}:${g.int(1000, 9999)}/x`, secret: pass };
}

// gitleaks formats (config/gitleaks.toml at b58d3f1): prefix, body alphabet and length.
const VENDORS: Array<(g: Gen) => [string, string]> = [
  (g) => ["sk-proj-", g.token(B64URL, 48)],
  (g) => ["sk-ant-api03-", g.token(B64URL, 93) + "AA"],
  (g) => ["sk_live_", g.token(ALNUM, 24)],
  (g) => ["ghp_", g.token(ALNUM, 36)],
  (g) => ["github_pat_", g.token(ALNUM + "_", 82)],
  (g) => ["glpat-", g.token(B64URL, 20)],
  (g) => ["xoxb-", `${g.digits(12)}-${g.digits(12)}-${g.token(ALNUM, 24)}`],
  (g) => ["hf_", g.token(LOWER + UPPER, 34)],
  (g) => ["npm_", g.token(ALNUM, 36)],
  (g) => ["AKIA", g.chars(UPPER + "234567", 14) + "7Q"],
  (g) => ["AIza", g.token(B64URL, 35)],
  (g) => ["SG.", `${g.token(B64URL, 22)}.${g.token(B64URL, 43)}`],
  (g) => ["shpat_", g.chars(HEXL, 32)],
  (g) => ["dop_v1_", g.chars(HEXL, 64)],
  (g) => ["glsa_", `${g.token(ALNUM, 32)}_${g.chars(HEXL, 8)}`],
  (g) => ["pypi-AgEIcHlwaS5vcmc", g.token(B64URL, 60)],
  (g) => ["xai-", g.token(ALNUM, 60)],
];

function vendor(g: Gen): LeakValue {
  const [prefix, body] = g.pick(VENDORS)(g);
  return { kind: "vendor token", text: prefix + body, secret: body };
}

function authorization(g: Gen): LeakValue {
  const ws = g.pick([" ", "\t", "  ", " \t"]);
  // [scheme, credentials, their secret part]
  const [scheme, credentials, secret] = g.pick<() => [string, string, string]>([
    () => {
      const t = g.token(B64URL + ".~", g.int(20, 60));
      return ["Bearer", t, t];
    },
    () => {
      const b = Buffer.from(`${g.token(LOWER, 6)}:${g.token(ALNUM, 12)}`).toString("base64");
      return ["Basic", b, b];
    },
    () => {
      const t = g.chars(HEXL, 40);
      return ["Token", t, t];
    },
    () => {
      const t = g.token(ALNUM, 32);
      return ["ApiKey", t, t];
    },
    () => {
      const r = g.chars(HEXL, 32);
      return ["Digest", `username="u", response="${r}"`, r];
    },
    () => {
      const sig = g.chars(HEXL, 64);
      return ["AWS4-HMAC-SHA256", `Credential=AKIA${g.chars(UPPER, 16)}/20250101/us-east-1/s3/aws4_request, Signature=${sig}`, sig];
    },
  ])();
  const header = g.pick(["Authorization", "authorization", "Proxy-Authorization"]);
  const form = g.int(0, 2);
  const text = form === 0 ? `${header}:${ws}${scheme}${ws}${credentials}` : form === 1 ? `curl -H '${header}: ${scheme}${ws}${credentials}' https://api` : `{"${header}": "${scheme} ${credentials.replace(/"/g, "")}"}`;
  return { kind: "Authorization", text, secret };
}

function bearer(g: Gen): LeakValue {
  const token = g.token(B64URL, g.int(16, 80));
  return { kind: "bearer token", text: `Bearer${g.pick([" ", "\t", "  "])}${token}`, secret: token };
}

function jwt(g: Gen): LeakValue {
  const header = Buffer.from(JSON.stringify({ alg: g.pick(["RS256", "HS256", "ES256"]), kid: g.token(ALNUM, 8), typ: "JWT" })).toString("base64url");
  const claims = { email: `${g.token(LOWER, 8)}@example.org`, sub: g.digits(12), nonce: g.token(ALNUM, g.int(10, 1100)) };
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  const signature = Buffer.from(g.chars(ALNUM, g.int(32, 256))).toString("base64url");
  const token = `${header}.${payload}.${signature}`;
  return { kind: "JWT", text: token, secret: token.slice(3) };
}

// ---- e-mail addresses ----

const LOCALS = ["ana.silva", "first.last", "josé.garcía", "björn.ångström", "dmitry.ivanov", "Мария", "用户", "ユーザー", "ελένη", "o'brien", "x_y-z"];
const DOMAINS = ["example.org", "mail.example.co.uk", "bücher.example", "例子.广告", "xn--bcher-kva.example", "пример.рф", "uni.edu", "corp.example.com"];

function email(g: Gen): LeakValue {
  const base = g.pick(LOCALS);
  const form = g.int(0, 4);
  const local = form === 0 ? `${base}${g.digits(2)}` : form === 1 ? `${base}+${g.digits(10)}` : form === 2 ? `"${base} ${g.token(LOWER, 4)}"` : form === 3 ? `${base}.${g.token(LOWER, 5)}` : `${base}${g.token(LOWER, 3)}`;
  const domain = g.pick(DOMAINS);
  const text = `${g.rnd() < 0.15 ? local.toUpperCase() : local}@${domain}`;
  return { kind: "e-mail address", text, secret: `${local}@${domain.split(".")[0]}` };
}

// ---- phone numbers ----

function phone(g: Gen): LeakValue {
  const d = (n: number): string => g.digits(n);
  const nz = (): string => String(g.int(2, 9));
  const text = g.pick<() => string>([
    () => `+33 ${g.int(1, 9)} ${d(2)} ${d(2)} ${d(2)} ${d(2)}`,
    () => `+49 ${g.int(15, 17)}${d(1)} ${d(8)}`,
    () => `+44 (0)20 ${d(4)} ${d(4)}`,
    () => `+1-${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}`,
    () => `+1 (${nz()}${d(2)}) ${nz()}${d(2)}-${d(4)}`,
    () => `+86 1${g.int(3, 9)}${d(1)} ${d(4)} ${d(4)}`,
    () => `+91 ${g.int(6, 9)}${d(4)} ${d(5)}`,
    () => `+81-90-${d(4)}-${d(4)}`,
    () => `+${g.int(30, 99)}.${d(3)}.${d(3)}.${d(3)}`,
    () => `00${g.int(1, 9)}${d(1)} ${d(3)} ${d(3)} ${d(4)}`,
    () => `001 ${nz()}${d(2)} ${nz()}${d(2)} ${d(4)}`,
    () => `0${g.int(1, 9)} ${d(2)} ${d(2)} ${d(2)} ${d(2)}`,
    () => `0${g.int(1, 9)}.${d(2)}.${d(2)}.${d(2)}.${d(2)}`,
    () => `01${g.int(5, 7)}${d(1)} ${d(8)}`,
    () => `0${g.int(30, 89)}/${d(7)}`,
    () => `0${g.int(20, 29)} ${d(4)} ${d(4)}`,
    () => `0${g.int(1, 9)}-${d(4)}-${d(4)}`,
    () => `(${nz()}${d(2)}) ${nz()}${d(2)}-${d(4)}`,
    () => `${nz()}${d(2)}.${nz()}${d(2)}.${d(4)}`,
    () => `${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}`,
    () => `${nz()}${d(2)}${nz()}${d(2)}${d(4)}`,
    () => `1${g.int(3, 9)}${d(9)}`,
  ])();
  return { kind: "phone number", text, secret: text, compact: digitsOf(text) };
}

// ---- cards, national ids, IBANs ----

function card(g: Gen): LeakValue {
  const [prefix, length] = g.pick<[string, number]>([["4", 16], ["4", 13], ["51", 16], ["55", 16], ["2221", 16], ["34", 15], ["37", 15], ["6011", 16], ["35", 16], ["62", 19]]);
  const number = luhnComplete(prefix + g.digits(length - prefix.length - 1));
  const sep = g.pick(["", " ", "-", "."]);
  const text = sep === "" ? number : length === 15 ? `${number.slice(0, 4)}${sep}${number.slice(4, 10)}${sep}${number.slice(10)}` : number.replace(/(\d{4})(?=\d)/g, `$1${sep}`);
  return { kind: "payment card", text, secret: text, compact: number };
}

const PRC_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE";
const VERHOEFF_D = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6], [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1], [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]];
const VERHOEFF_P = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2], [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1], [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8]];
const VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9];

function nationalId(g: Gen): LeakValue {
  const form = g.int(0, 7);
  let text: string;
  if (form === 0) {
    const year = g.int(1930, 2015);
    const date = `${year}${String(g.int(1, 12)).padStart(2, "0")}${String(g.int(1, 28)).padStart(2, "0")}`;
    const body = `${g.int(110000, 659999)}${date}${g.digits(3)}`;
    const check = (12 - ([...body].reduce((s, c, i) => s + Number(c) * PRC_WEIGHTS[i]!, 0) % 11)) % 11;
    const id = body + (check === 10 ? g.pick(["X", "x"]) : String(check));
    text = g.pick(["", " ", "-"]) === "" ? id : `${id.slice(0, 6)} ${id.slice(6, 14)} ${id.slice(14)}`;
  } else if (form === 1) {
    const area = String(g.pick([g.int(1, 665), g.int(667, 899)])).padStart(3, "0");
    const group = String(g.int(1, 99)).padStart(2, "0");
    const serial = String(g.int(1, 9999)).padStart(4, "0");
    const sep = g.pick(["-", " ", "."]);
    text = g.rnd() < 0.2 ? `SSN: ${area}${group}${serial}` : `${area}${sep}${group}${sep}${serial}`;
  } else if (form === 2) {
    const first = g.pick([..."ABCEGHJKLMNOPRSTWXYZ"]);
    const second = g.pick([..."ABCEGHJKLMNPRSTWXYZ"]);
    const prefix = first + second;
    const ok = !["BG", "GB", "KN", "NK", "NT", "TN", "ZZ"].includes(prefix) ? prefix : "AB";
    const nums = g.digits(6);
    const suffix = g.pick([..."ABCD"]);
    const nino = g.rnd() < 0.5 ? `${ok} ${nums.slice(0, 2)} ${nums.slice(2, 4)} ${nums.slice(4)} ${suffix}` : `${ok}${nums}${suffix}`;
    text = g.rnd() < 0.2 ? nino.toLowerCase() : nino;
  } else if (form === 3) {
    let ds = [...g.digits(9)].map(Number);
    if (ds.every((x) => x === ds[0])) ds = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    for (const k of [9, 10]) ds.push(((ds.slice(0, k).reduce((s, x, i) => s + x * (k + 1 - i), 0) * 10) % 11) % 10);
    const all = ds.join("");
    text = g.rnd() < 0.7 ? `${all.slice(0, 3)}.${all.slice(3, 6)}.${all.slice(6, 9)}-${all.slice(9)}` : all;
  } else if (form === 4) {
    const n = g.int(10000000, 99999999);
    text = `${n}${g.pick(["", "-"])}${DNI_LETTERS[n % 23]}`;
  } else if (form === 5) {
    const letter = g.pick(["X", "Y", "Z"]);
    const n = g.int(1000000, 9999999);
    text = `${letter}${n}${DNI_LETTERS[(Number("XYZ".indexOf(letter)) * 10000000 + n) % 23]}`;
  } else if (form === 6) {
    const body = String(g.int(2, 9)) + g.digits(10);
    let c = 0;
    [...body].reverse().forEach((ch, i) => (c = VERHOEFF_D[c]![VERHOEFF_P[(i + 1) % 8]![Number(ch)]!]!));
    const id = body + String(VERHOEFF_INV[c]);
    text = `${id.slice(0, 4)}${g.pick([" ", "-"])}${id.slice(4, 8)}${g.pick([" ", "-"]) === " " ? " " : " "}${id.slice(8)}`.replace(/-(\d{4}) /, "-$1-");
  } else {
    let sin = luhnComplete(String(g.pick([1, 2, 3, 4, 5, 6, 7, 9])) + g.digits(7));
    if (sin.length !== 9) sin = "130692544";
    const sep = g.pick([" ", "-"]);
    text = `${sin.slice(0, 3)}${sep}${sin.slice(3, 6)}${sep}${sin.slice(6)}`;
  }
  return { kind: "national id", text, secret: text.replace(/^SSN: /, ""), compact: digitsOf(text.replace(/^SSN: /, "")) };
}

// ISO 13616 lengths (as presidio iban_patterns.py lists them) for some countries.
const IBAN_LENGTHS: Record<string, number> = { DE: 22, GB: 22, FR: 27, ES: 24, IT: 27, NL: 18, BE: 16, CH: 21, AT: 20, PL: 28, SE: 24, NO: 15, PT: 25, IE: 22, SA: 24, BR: 29 };

function iban(g: Gen): LeakValue {
  const country = g.pick(Object.keys(IBAN_LENGTHS));
  const length = IBAN_LENGTHS[country]!;
  const bban = (country === "GB" || country === "NL" || country === "IE" ? g.chars(UPPER, 4) : "") + g.digits(length - 4 - (country === "GB" || country === "NL" || country === "IE" ? 4 : 0));
  const numeric = (bban + country + "00").replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  let remainder = 0;
  for (const ch of numeric) remainder = (remainder * 10 + Number(ch)) % 97;
  const check = String(98 - remainder).padStart(2, "0");
  const compact = country + check + bban;
  const text = g.rnd() < 0.5 ? compact.replace(/(.{4})(?=.)/g, "$1 ") : g.rnd() < 0.2 ? compact.toLowerCase() : compact;
  return { kind: "IBAN", text, secret: text, compact };
}

function ip(g: Gen): LeakValue {
  if (g.rnd() < 0.5) {
    const text = `${g.int(1, 223)}.${g.int(0, 255)}.${g.int(0, 255)}.${g.int(1, 254)}`;
    return { kind: "IP address", text, secret: text };
  }
  const groups = Array.from({ length: 8 }, () => g.int(0, 0xffff).toString(16));
  const text = g.rnd() < 0.5 ? groups.join(":") : `${groups.slice(0, 3).join(":")}::${groups.slice(6).join(":")}`;
  return { kind: "IP address", text, secret: text };
}

/** Every kind, in the order values are drawn (one of each in turn). */
export const KINDS: Array<(g: Gen) => LeakValue> = [assignment, pem, urlCredentials, vendor, authorization, bearer, jwt, email, phone, card, nationalId, iban, ip];

/** `count` values, every kind in turn, the same for the same seed. */
export function generateCorpus(seed: number, count: number): LeakValue[] {
  const g = new Gen(mulberry32(seed));
  return Array.from({ length: count }, (_, i) => KINDS[i % KINDS.length]!(g));
}

// ---- text around the values ----

const FILLER = ["the", "please", "call", "send", "to", "und", "über", "naïve", "résumé", "数据", "请", "联系", "こんにちは", "привет", "🙂", "ok", "then", "with", "notes"];
const SEPARATORS = [" ", ", ", "\n", " (", ") ", "。", ": ", "\t", " \"", "\" ", "、"];

/** Words (no digits, no secrets) and separators to put around values, from `rnd`. */
export function filler(rnd: Rng, words: number): string {
  const g = new Gen(rnd);
  return Array.from({ length: words }, () => g.pick(FILLER)).join(" ");
}

export function separator(rnd: Rng): string {
  return new Gen(rnd).pick(SEPARATORS);
}
