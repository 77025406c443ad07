// Redaction throughput of the filter's engine in wasm (build/redaction.wasm: filter/content/redact.ts,
// pii.ts and byte-writer.ts compiled with the release target's options), over 4 MiB of generated
// prompt-like text in several scripts with a value to replace every ~150 bytes (e-mail, phone,
// Luhn-valid card, IPv4, IPv6, PRC resident ID, credential), redacted one part at a time as the
// filter does (the default 4096-byte window plus its 320-byte detection margin). Rounds are timed
// in this process's CPU time; the median counts. Bar (issue 17): at least 50 MB/s.
import { readFileSync } from "node:fs";
import { Wasm, type WasmMemory } from "../host/wasm-api.js";
import { median, wasmPath } from "./measure.js";
import type { BenchRow } from "./table.js";
import { luhnComplete } from "../support/luhn.js";
import { mulberry32 } from "../support/mulberry32.js";

const TEXT_BYTES = 4 << 20;
const PART_BYTES = 4096 + 320;
const ROUNDS = 11;
const BAR_MB_PER_S = 50;
const TYPES = ["email", "phone", "payment_card", "ip_address", "national_id", "credential"];

interface RedactionModule {
  memory: WasmMemory;
  _initialize(): void;
  textBuffer(n: number): number;
  redactAll(part: number, pseudonyms: number): number;
  replaced(type: number): number;
}

const PRC_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];

/** Prompt-like text: words, numbers that are no personal data, and one value of each type in turn. */
export function corpus(bytes: number): Buffer {
  const rnd = mulberry32(17);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const digits = (n: number): string => Array.from({ length: n }, () => Math.floor(rnd() * 10)).join("");
  const words = ["the", "model", "answered", "please", "summarise", "this", "report", "for", "version", "über", "naïve", "数据", "请帮我", "résumé", "order", "at", "on", "with", "and", "tokens"];
  const noise = (): string => pick([`v${digits(1)}.${digits(1)}.${digits(1)}`, `2024-0${1 + Math.floor(rnd() * 9)}-1${digits(1)}`, `${digits(3)} items`, "3.14159", `#${digits(5)}`]);
  const values: Array<() => string> = [
    () => `${pick(words.slice(0, 8))}.${digits(3)}@mail.example.org`,
    () => `+1 415 ${digits(3)} ${digits(4)}`,
    () => luhnComplete(`4${digits(14)}`).replace(/(\d{4})(?=\d)/g, "$1 "),
    () => `10.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}`,
    () => `2001:db8::${Math.floor(rnd() * 65536).toString(16)}:${Math.floor(rnd() * 65536).toString(16)}`,
    () => {
      const body = `110105${1950 + Math.floor(rnd() * 60)}0${1 + Math.floor(rnd() * 9)}1${Math.floor(rnd() * 9)}${digits(3)}`;
      const check = (12 - ([...body].reduce((s, d, i) => s + Number(d) * PRC_WEIGHTS[i]!, 0) % 11)) % 11;
      return body + (check === 10 ? "X" : String(check));
    },
    () => `sk-proj-${Array.from({ length: 32 }, () => pick([..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"])).join("")}`,
  ];
  const parts: string[] = [];
  let length = 0;
  for (let k = 0; length < bytes; k++) {
    const sentence = Array.from({ length: 12 + Math.floor(rnd() * 10) }, () => (rnd() < 0.1 ? noise() : pick(words))).join(" ");
    const piece = `${sentence} ${values[k % values.length]!()}, ${pick(words)}.\n`;
    parts.push(piece);
    length += Buffer.byteLength(piece);
  }
  return Buffer.from(parts.join("")).subarray(0, bytes);
}

/** Measures and returns the rows for `make bench`. */
export async function run(): Promise<BenchRow[]> {
  const instance = new Wasm.Instance(await Wasm.compile(readFileSync(wasmPath("redaction.wasm"))), {});
  const m = instance.exports as unknown as RedactionModule;
  m._initialize();
  const text = corpus(TEXT_BYTES);
  const at = m.textBuffer(text.length);
  new Uint8Array(m.memory.buffer, at, text.length).set(text);
  const rows: BenchRow[] = [];
  for (const pseudonyms of [false, true]) {
    m.redactAll(PART_BYTES, pseudonyms ? 1 : 0); // warm-up
    const rounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.cpuUsage();
      const written = m.redactAll(PART_BYTES, pseudonyms ? 1 : 0);
      const used = process.cpuUsage(t0);
      if (written <= 0) throw new Error("the redaction module wrote nothing");
      rounds.push(text.length / 1e6 / ((used.user + used.system) / 1e6));
    }
    rows.push({
      figure: `redaction throughput in wasm, ${pseudonyms ? "HMAC-SHA-256 pseudonyms" : "typed placeholders"} (4 MiB, a value every ~150 bytes, parts of 4096+320 bytes; median of ${ROUNDS} rounds)`,
      value: median(rounds),
      unit: "MB/s",
      bar: { on: "value", min: BAR_MB_PER_S },
    });
  }
  // Every type was found (so the figure is of real work): at least one value of each per round.
  const missing = TYPES.filter((_, i) => m.replaced(i) < (ROUNDS + 1) * 2);
  if (missing.length > 0) throw new Error(`the corpus produced no ${missing.join(", ")} replacements`);
  return rows;
}
