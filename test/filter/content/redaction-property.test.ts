// Property: whatever the text, wherever personal data sits in it, however the body is cut into
// chunks and its JSON escaped, and wherever the size limit falls, no original value ever reaches an
// exported span (whole, or its beginning where the size limit cuts), a stat or a log. Generated
// e-mail addresses, phone numbers, Luhn-valid card numbers, IPv4/IPv6 addresses, PRC resident IDs (ISO 7064 check), CPFs, SSNs and credentials,
// in prompts and streamed completions of every protocol, through the real filter.wasm (emulated
// Envoy host) to a real OTLP/HTTP receiver on 127.0.0.1.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock } from "../../host/index.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { startContentKeyServer, type ContentKeyServer } from "../../support/content-key-server.js";
import { countingRandom, loadContentFilter } from "../support.js";
import { luhnComplete } from "../../support/luhn.js";

interface Value {
  /** As written in the text. */
  text: string;
  /** Forms that must not appear either (the digits of a number, the address in lower case). */
  forms: string[];
}

const digitsOf = (s: string): string => s.replace(/[^0-9Xx]/g, "");
const numeric = (text: string): Value => ({ text, forms: [digitsOf(text)] });
const digits = (n: number): fc.Arbitrary<string> => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(""));
const lower = "abcdefghijklmnopqrstuvwxyz";
const word = (min: number, max: number, chars = lower + "0123456789"): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom(...chars), { minLength: min, maxLength: max }).map((c) => c.join(""));

const email = fc
  .tuple(word(1, 10), fc.constantFrom("", ".", "+", "_"), word(1, 6), fc.array(word(1, 8, lower), { minLength: 1, maxLength: 2 }), word(2, 5, lower), fc.boolean())
  .map(([a, sep, b, labels, tld, upper]) => {
    const text = `${a}${sep}${b}@${labels.join(".")}.${tld}`;
    return { text: upper ? text.toUpperCase() : text, forms: [text.toLowerCase()] };
  });

const card = fc.tuple(fc.integer({ min: 12, max: 18 }), fc.constantFrom("", " ", "-"), fc.integer({ min: 2, max: 6 })).chain(([n, sep, first]) =>
  digits(n).map((d) => {
    const number = luhnComplete(String(first) + d.slice(1));
    return numeric(sep === "" ? number : number.replace(/(\d{4})(?=\d)/g, `$1${sep}`));
  }),
);

const phone = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 99 }), digits(3), digits(3), digits(4)).map(([cc, a, b, c]) => numeric(`+${cc} ${a} ${b} ${c}`)),
  fc.tuple(digits(3), digits(3), digits(4)).map(([a, b, c]) => numeric(`(${a}) ${b}-${c}`)),
  fc.tuple(digits(3), digits(3), digits(4), fc.constantFrom("-", ".", " ")).map(([a, b, c, s]) => numeric(`${a}${s}${b}${s}${c}`)),
  fc.tuple(fc.integer({ min: 3, max: 9 }), digits(9)).map(([second, rest]) => numeric(`1${second}${rest}`)),
  fc.tuple(digits(2), digits(4), digits(4)).map(([a, b, c]) => numeric(`0${a} ${b} ${c}`)),
);

const octet = fc.integer({ min: 0, max: 255 });
const ipv4 = fc.tuple(octet, octet, octet, octet).map((o) => numeric(o.join(".")));
const group = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
const ipv6 = fc.tuple(fc.array(group, { minLength: 8, maxLength: 8 }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 3 }), fc.boolean()).map(([groups, at, zeros, upper]) => {
  // Compress a run of groups into "::" sometimes (RFC 4291 2.2 form 2).
  const text = zeros >= 2 && at + zeros <= 8 ? `${groups.slice(0, at).join(":")}::${groups.slice(at + zeros).join(":")}` : groups.join(":");
  return { text: upper ? text.toUpperCase() : text, forms: [] };
});

const PRC_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const prcId = fc.tuple(fc.integer({ min: 110000, max: 829999 }), fc.date({ min: new Date("1900-01-01"), max: new Date("2099-12-31"), noInvalidDate: true }), digits(3)).map(([region, date, seq]) => {
  const body = `${region}${date.toISOString().slice(0, 10).replace(/-/g, "")}${seq}`;
  const sum = [...body].reduce((s, d, i) => s + Number(d) * PRC_WEIGHTS[i]!, 0);
  const check = (12 - (sum % 11)) % 11;
  return numeric(body + (check === 10 ? "X" : String(check)));
});
const cpf = fc.tuple(digits(9), fc.boolean()).filter(([d]) => !/^(\d)\1*$/.test(d)).map(([d, formatted]) => {
  const ds = [...d].map(Number);
  for (const k of [9, 10]) ds.push(((ds.slice(0, k).reduce((s, x, i) => s + x * (k + 1 - i), 0) * 10) % 11) % 10);
  const all = ds.join("");
  return numeric(formatted ? `${all.slice(0, 3)}.${all.slice(3, 6)}.${all.slice(6, 9)}-${all.slice(9)}` : all);
});
const ssn = fc.tuple(fc.integer({ min: 1, max: 899 }).filter((a) => a !== 666), fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 9999 })).map(([a, g, s]) =>
  numeric(`${String(a).padStart(3, "0")}-${String(g).padStart(2, "0")}-${String(s).padStart(4, "0")}`),
);

const keyChars = lower + lower.toUpperCase() + "0123456789_-";
const credential = fc.oneof(
  word(20, 40, keyChars).map((b) => `sk-${b}`),
  word(36, 36, keyChars.replace("_-", "")).map((b) => `ghp_${b}`),
  word(16, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567").map((b) => `AKIA${b}`),
  word(20, 60, keyChars + ".~+/").map((b) => `Bearer ${b}`),
  fc.tuple(fc.constantFrom("password", "api_key", "Secret", "access_token"), fc.constantFrom("=", ": ", "\":\""), word(6, 16, keyChars + "!#$%*")).map(([k, s, v]) => `${k}${s}${v}`),
).map((text) => ({ text, forms: [text.replace(/^(Bearer |\w+(=|: |":"))/, "")] }));

const value: fc.Arbitrary<Value> = fc.oneof(email, phone, card, ipv4, ipv6, prcId, cpf, ssn, credential);

// Text around the values: words in several scripts; values are set off by a space, punctuation or a line end.
const filler = fc.array(fc.constantFrom("the", "call", "me", "at", "ok", "数据", "请", "über", "naïve", "🙂", "x", "résumé", "please", "send"), { minLength: 1, maxLength: 6 }).map((w) => w.join(" "));
const separator = fc.constantFrom(" ", ", ", "\n", " (", ") ", "。", ": ", "\t", " \"", "\" ");
const document = fc.array(fc.tuple(filler, separator, value, separator), { minLength: 1, maxLength: 8 });

/** A JSON string literal of `text` with some characters escaped as \uXXXX (and "/" as \/), as a client may send it. */
function escapedJson(text: string, mask: number): string {
  let out = "\"";
  let at = 0;
  for (const c of text) {
    if (/^[@./:a-z0-9]$/.test(c) && (at * 31 + mask) % 7 === 0) out += c === "/" ? "\\/" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
    else out += JSON.stringify(c).slice(1, -1);
    at++;
  }
  return out + "\"";
}

/** Cuts `s` at the given fractions (0..1) into chunks. */
const cutAt = (s: string, fractions: number[]): string[] => {
  const points = [...new Set(fractions.map((f) => Math.floor(f * s.length)).filter((p) => p > 0 && p < s.length))].sort((a, b) => a - b);
  return [0, ...points].map((p, i) => s.slice(p, points[i] ?? s.length));
};

type Protocol = "openai" | "responses" | "anthropic" | "tgi" | "kserve";

/** A request carrying `prompt` and a streamed response carrying `completion` in `protocol`'s shapes. */
function exchange(protocol: Protocol, prompt: string, completion: string, mask: number, deltas: number[]): { path: string; request: string; response: string } {
  const p = escapedJson(prompt, mask);
  const pieces = cutAt(completion, deltas).map((piece) => escapedJson(piece, mask + 1));
  switch (protocol) {
    case "openai":
      return {
        path: "/v1/chat/completions",
        request: `{"model":"m","stream":true,"messages":[{"role":"system","content":${p}},{"role":"user","content":[{"type":"text","text":${p}}]}]}`,
        response: pieces.map((d) => `data: {"choices":[{"index":0,"delta":{"content":${d}}}]}\n\n`).join("") + "data: [DONE]\n\n",
      };
    case "responses":
      return {
        path: "/v1/responses",
        request: `{"model":"m","stream":true,"instructions":${p},"input":${p}}`,
        response: pieces.map((d) => `event: response.output_text.delta\ndata: {"delta":${d},"type":"response.output_text.delta"}\n\n`).join(""),
      };
    case "anthropic":
      return {
        path: "/v1/messages",
        request: `{"model":"m","stream":true,"system":${p},"messages":[{"role":"user","content":${p}}]}`,
        response: pieces.map((d) => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${d}}}\n\n`).join(""),
      };
    case "tgi":
      return {
        path: "/generate_stream",
        request: `{"inputs":${p},"parameters":{"max_new_tokens":20}}`,
        response: pieces.map((d, i) => `data:{"index":${i + 1},"token":{"id":1,"text":${d},"logprob":-0.1,"special":false}}\n\n`).join(""),
      };
    case "kserve":
      return {
        path: "/v2/models/m/generate_stream",
        request: `{"text_input":${p}}`,
        response: pieces.map((d) => `data: {"model_name":"m","text_output":${d}}\n\n`).join(""),
      };
  }
}

/** Every string in a span's attributes (structured values walked), decoded. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
  else if (value !== null && typeof value === "object") Object.values(value).forEach((v) => strings(v, out));
  return out;
}

describe("no original value reaches an exported span (property, emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  let keys: ContentKeyServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    keys = await startContentKeyServer();
    keys.keys.set("v1", Buffer.from("property-test-key-0123456789abcdef"));
    keys.current = "v1";
  });
  after(async () => Promise.all([receiver.close(), keys.close()]));

  it("for generated text with personal data at random places, every protocol, random chunks, escapes and size limits", async () => {
    let captured = 0;
    let placeholders = 0;
    await fc.assert(
      fc.asyncProperty(
        document,
        document,
        fc.constantFrom<Protocol>("openai", "responses", "anthropic", "tgi", "kserve"),
        fc.integer({ min: 256, max: 2048 }),
        fc.boolean(),
        fc.nat(1000),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
        async (promptParts, completionParts, protocol, maxBytes, pseudonyms, mask, requestCuts, responseCuts) => {
          const render = (parts: typeof promptParts): string => parts.map(([f, a, v, b]) => `${f}${a}${v.text}${b}`).join("");
          const prompt = render(promptParts);
          const completion = render(completionParts);
          const values = [...promptParts, ...completionParts].map(([, , v]) => v);
          const content = { enabled: true, maxBytes, ...(pseudonyms ? { pseudonyms: { keySource: { cluster: "cp", workload: "llm.chat" } } } : {}) };
          const clock = new ManualClock(1_700_000_000_000_000_000n);
          const vm = await loadContentFilter({ clock, random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", flushIntervalMs: 1000, content } }, clusters: { otel: receiver.url, cp: keys.url } });
          if (pseudonyms) {
            vm.tick(); // the key is fetched on the first tick
            await vm.settle();
          }
          receiver.spans.length = 0;
          const x = exchange(protocol, prompt, completion, mask, responseCuts);
          const s = vm.newStream({ routeName: "chat" });
          s.requestHeaders([[":method", "POST"], [":path", x.path], [":authority", "llm.svc"]], false);
          const requestChunks = cutAt(x.request, requestCuts);
          requestChunks.forEach((c, i) => assert.equal(s.requestBody(c, i === requestChunks.length - 1), 0));
          s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
          const responseChunks = cutAt(x.response, [...responseCuts].reverse());
          responseChunks.forEach((c, i) => assert.equal(s.responseBody(c, i === responseChunks.length - 1), 0));
          s.end();
          vm.tick();
          await vm.settle();
          assert.deepEqual(receiver.problems, []);
          assert.equal(receiver.spans.length, 1);
          const span = receiver.spans[0]!;
          const texts = strings(span.attributes.map((a) => anyValue(a.value)));
          const all = texts.join("\u0000");
          for (const v of values) {
            for (const form of [v.text, ...v.forms]) {
              if (form.length < 4) continue;
              assert.ok(!all.includes(form), `${JSON.stringify(form)} reached the span (${protocol}, maxBytes ${maxBytes}): ${JSON.stringify(texts.filter((t) => t.includes(form)))}`);
            }
          }
          // Nor a piece of one: where the size limit cut the text, no part ends in the beginning of a value.
          for (const t of texts) {
            for (const v of values) {
              for (let k = 6; k < v.text.length; k++) {
                assert.ok(!t.endsWith(v.text.slice(0, k)), `the start of ${JSON.stringify(v.text)} reached the span (${protocol}, maxBytes ${maxBytes}): ${JSON.stringify(t.slice(-40))}`);
              }
            }
          }
          const stats = vm.stats.names().join("\n") + vm.logs.map((l) => l.message).join("\n");
          for (const v of values) assert.ok(!stats.includes(v.text), `${v.text} reached a stat or a log`);
          if (span.attributes.some((a) => a.key === "gen_ai.input.messages")) captured++;
          placeholders += (all.match(/\[(EMAIL|PHONE|PAYMENT_CARD|IP_ADDRESS|NATIONAL_ID|CREDENTIAL)[\]:]/g) ?? []).length;
        },
      ),
      { numRuns: 300, seed: 1717 },
    );
    // The property is about something: content was captured and values were replaced, not dropped.
    assert.equal(captured, 300);
    assert.ok(placeholders > 600, `placeholders written: ${placeholders}`);
  });
});
