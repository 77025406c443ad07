// Redaction in the real filter.wasm (emulated Envoy host): each kind of value the filter replaces
// before captured content leaves it, as text a user would write, and look-alikes it must leave
// alone; typed placeholders, or keyed hashes (pseudonyms, the key fetched from a real HTTP server
// on 127.0.0.1 as the control plane serves it) that a test recomputes with Node's own HMAC-SHA-256.
// Exported through a real OTLP/HTTP receiver on 127.0.0.1. Runs the content module.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { startContentKeyServer, type ContentKeyServer } from "../../support/content-key-server.js";
import { countingRandom, loadContentFilter } from "../support.js";

const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
const GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";

// [text a prompt holds, the text the span must show]
const CASES: Array<[string, string, string]> = [
  ["email", "write to ana.silva+tag@mail.example.co.uk today", "write to [EMAIL] today"],
  ["email", "(bob@example.com), <c.d@e-f.io>.", "([EMAIL]), <[EMAIL]>."],
  ["email", "mailto:ops@Example.ORG?subject=x", "mailto:[EMAIL]?subject=x"],
  ["not an email", "a@b.c, user@localhost, see you @ 5pm, @handle, x@-bad.com", "a@b.c, user@localhost, see you @ 5pm, @handle, x@-bad.com"],
  ["phone", "call +1 415 555 2671 or (415) 555-2671", "call [PHONE] or [PHONE]"],
  ["phone", "UK 020 7946 0958, FR 06 12 34 56 78, CN +86 138 0013 8000 / 13800138000", "UK [PHONE], FR [PHONE], CN [PHONE] / [PHONE]"],
  ["not a phone", "on 2024-01-15 10:30, version 1.2.3, order 123456789, 3.14159 2.71828", "on 2024-01-15 10:30, version 1.2.3, order 123456789, 3.14159 2.71828"],
  ["payment card", "card 4111 1111 1111 1111, 4111-1111-1111-1111, 4111111111111111, amex 378282246310005", "card [PAYMENT_CARD], [PAYMENT_CARD], [PAYMENT_CARD], amex [PAYMENT_CARD]"],
  ["payment card", "4111 1111 1111 1111 2024 is the card and the year", "[PAYMENT_CARD] 2024 is the card and the year"],
  ["not a payment card (Luhn)", "4111 1111 1111 1112 and 4111111111111112", "4111 1111 1111 1112 and 4111111111111112"],
  ["IPv4", "from 192.168.1.20. and 10.0.0.1:8080", "from [IP_ADDRESS]. and [IP_ADDRESS]:8080"],
  ["not IPv4", "10.0.0.256, 1.2.3.4.5, v1.2.3.4", "10.0.0.256, 1.2.3.4.5, v1.2.3.4"],
  ["IPv6", "2001:db8::8a2e:370:7334 fe80::1 ::ffff:192.0.2.128 2001:0db8:85a3:0000:0000:8a2e:0370:7334", "[IP_ADDRESS] [IP_ADDRESS] [IP_ADDRESS] [IP_ADDRESS]"],
  ["not IPv6", "at 12:30:45, std::vector, a::b::c, Note: fine", "at 12:30:45, std::vector, a::b::c, Note: fine"],
  ["PRC resident ID (ISO 7064 MOD 11-2)", "身份证 11010519491231002X, 11010519491231002x, 440304199001011233", "身份证 [NATIONAL_ID], [NATIONAL_ID], [NATIONAL_ID]"],
  ["PRC resident ID inside CJK text", "身份证号11010519491231002X。", "身份证号[NATIONAL_ID]。"],
  ["not a PRC resident ID (check character)", "110105194912310021 and 11010519491331002X", "110105194912310021 and 11010519491331002X"],
  ["Brazil CPF", "CPF 529.982.247-25 or 52998224725", "CPF [NATIONAL_ID] or [NATIONAL_ID]"],
  ["not a CPF (check digits), nor a phone number (dots do not mix with dashes)", "529.982.247-26", "529.982.247-26"],
  ["US SSN", "SSN 123-45-6789", "SSN [NATIONAL_ID]"],
  ["not an SSN", "000-12-3456 666-12-3456 123-00-6789", "000-12-3456 666-12-3456 123-00-6789"],
  ["bearer credential", `Authorization: Bearer ${JWT}`, "Authorization: Bearer [CREDENTIAL]"],
  ["API keys", `key sk-proj-AbCdEf0123456789AbCdEf0123, ${GITHUB}, AKIAIOSFODNN7EXAMPLE`, "key [CREDENTIAL], [CREDENTIAL], [CREDENTIAL]"],
  ["JWT", `token ${JWT} here`, "token [CREDENTIAL] here"],
  // An unquoted value runs to the end of its line (or a quote): a passphrase with spaces goes whole.
  ["assigned secrets", "password: hunter2!, {\"api_key\": \"abcd1234efgh\"}, TOKEN=zz99yy88", "password: [CREDENTIAL]\"api_key\": \"[CREDENTIAL]\"}, TOKEN=[CREDENTIAL]"],
  ["not a credential", "the token count is 5; skills; sk-short; Bearer abc", "the token count is 5; skills; sk-short; Bearer abc"],
  ["mixed, in CJK text", "电话13800138000，邮箱ana@example.cn", "电话[PHONE]，邮箱[EMAIL]"],
];

describe("redaction of captured content (emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  async function setup(content: Record<string, unknown>): Promise<{ vm: FilterVm; clock: ManualClock }> {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadContentFilter({ clock, random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", content: { enabled: true, ...content } } }, clusters: { otel: receiver.url } });
    return { vm, clock };
  }

  /** What the span shows of one user message whose JSON text is `rawJson` (a JSON string literal). */
  async function shown(vm: FilterVm, rawJson: string): Promise<string> {
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false);
    s.requestBody(`{"model":"m","messages":[{"role":"user","content":${rawJson}}]}`, true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }), true);
    s.end();
    vm.tick();
    await vm.settle();
    assert.deepEqual(receiver.problems, []);
    const a = receiver.spans[0]!.attributes.find((x) => x.key === "gen_ai.input.messages")!;
    const messages = anyValue(a.value) as Array<{ parts: Array<{ content: string }> }>;
    return messages[0]!.parts[0]!.content;
  }

  for (const [kind, input, expected] of CASES) {
    it(`${kind}: ${JSON.stringify(input).slice(0, 70)}`, async () => {
      const { vm } = await setup({});
      assert.equal(await shown(vm, JSON.stringify(input)), expected);
    });
  }

  it("finds values in the decoded text: JSON escapes (\\u0040, \\/) cannot hide them", async () => {
    const { vm } = await setup({});
    assert.equal(await shown(vm, '"ana\\u0040example.org and 4111\\u00201111 1111 1111 and sk-\\u0070roj-AbCdEf0123456789AbCdEf0123"'), "[EMAIL] and [PAYMENT_CARD] and [CREDENTIAL]");
  });

  it("counts every replacement by type, once per value", async () => {
    const { vm } = await setup({});
    await shown(vm, JSON.stringify("a@example.com b@example.com +1 415 555 2671 10.0.0.1 fe80::1 11010519491231002X 4111111111111111 password=secret99"));
    const counts = ["email", "phone", "payment_card", "ip_address", "national_id", "credential"].map((t) => vm.stats.value("tokentrace_content_redactions_total", { redacted: t }));
    assert.deepEqual(counts, [2, 1, 1, 2, 1, 1]);
  });

  describe("pseudonyms (spans.content.pseudonyms, the key fetched from the control plane)", () => {
    /** What the filter must write: the type's index and the value's normal form, HMAC-SHA-256 under the key, first 8 bytes in hex. */
    const pseudonym = (key: Buffer, type: number, normal: string): string =>
      createHmac("sha256", key).update(Buffer.concat([Buffer.from([type]), Buffer.from(normal, "utf8")])).digest("hex").slice(0, 16);

    async function withKey(key: Buffer): Promise<FilterVm> {
      const server = await startContentKeyServer();
      servers.push(server);
      server.keys.set("v1", key);
      server.current = "v1";
      const clock = new ManualClock(1_700_000_000_000_000_000n);
      const vm = await loadContentFilter({
        clock, random: countingRandom(),
        config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", flushIntervalMs: 1000, content: { enabled: true, pseudonyms: { keySource: { cluster: "cp", workload: "llm.chat" } } } } },
        clusters: { otel: receiver.url, cp: server.url },
      });
      vm.tick();
      await vm.settle();
      assert.deepEqual(server.problems, []);
      return vm;
    }
    const servers: ContentKeyServer[] = [];
    after(async () => Promise.all(servers.map((s) => s.close())));

    it("replace each value by its type and keyed hash: the same value (in any case or layout) reads the same, and the hash is HMAC-SHA-256 under the key", async () => {
      const key = Buffer.from("0f".repeat(32), "hex");
      const vm = await withKey(key);
      const text = await shown(vm, JSON.stringify("Ana@Example.org wrote to ana@example.org from +1 415 555 2671 (+14155552671), card 4111 1111 1111 1111, id 11010519491231002x, ip FE80::1, key sk-proj-AbCdEf0123456789AbCdEf0123"));
      const email = pseudonym(key, 0, "ana@example.org");
      const phone = pseudonym(key, 1, "14155552671");
      const card = pseudonym(key, 2, "4111111111111111");
      const ip = pseudonym(key, 3, "fe80::1");
      const id = pseudonym(key, 4, "11010519491231002X");
      const credential = pseudonym(key, 5, "sk-proj-AbCdEf0123456789AbCdEf0123");
      assert.equal(text, `[EMAIL:${email}] wrote to [EMAIL:${email}] from [PHONE:${phone}] ([PHONE:${phone}]), card [PAYMENT_CARD:${card}], id [NATIONAL_ID:${id}], ip [IP_ADDRESS:${ip}], key [CREDENTIAL:${credential}]`);
    });

    it("another key gives other pseudonyms (a key longer than a block is hashed first, RFC 2104)", async () => {
      const long = Buffer.alloc(100, 0x6b);
      const vm = await withKey(long);
      assert.equal(await shown(vm, JSON.stringify("ana@example.org")), `[EMAIL:${pseudonym(long, 0, "ana@example.org")}]`);
      assert.notEqual(pseudonym(long, 0, "ana@example.org"), pseudonym(Buffer.from("0f".repeat(32), "hex"), 0, "ana@example.org"));
    });
  });
});
