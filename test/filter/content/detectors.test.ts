// The detectors against what real prompts carry (issue 21), in the real content module (emulated
// Envoy host) exported to a real OTLP receiver on 127.0.0.1: every value the "Why" names
// (each one a case here), and every form its deliverable 1 lists, with look-alikes that must stay.
// The formats are those of the public catalogues cited in filter/content/*.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { countingRandom, loadContentFilter } from "../support.js";

const PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAv1nQ9e2l1Xq0ExampleKeyBodyLineOne0123456789abcdefghij\nQ2xpZW50S2V5Qm9keUxpbmVUd28wMTIzNDU2Nzg5YWJjZGVmZ2hpamtsbW5vcA==\n-----END RSA PRIVATE KEY-----";

// [what, text a prompt holds, the text the span must show]
const WHY: Array<[string, string, string]> = [
  ["aws_secret_access_key = (the credentials file form)", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [CREDENTIAL]"],
  ["SECRET_KEY='...' (any *_key= assignment)", "SECRET_KEY='django-insecure-8f#x!q)z(2w@j9'", "SECRET_KEY='[CREDENTIAL]'"],
  ["Bearer<TAB>token", "Authorization: Bearer\tya29.a0AfH6SMBx3kT9qQ", "Authorization: Bearer\t[CREDENTIAL]"],
  ["Bearer<TAB>token without a header name", "use Bearer\tAbCdEf0123456789xyz", "use Bearer\t[CREDENTIAL]"],
  ["a sub-address holding a phone number", "mail first.last+4155552671@example.com now", "mail [EMAIL] now"],
  ["a Unicode local part", "écrire à josé.garcía@example.es demain", "écrire à [EMAIL] demain"],
  ["an internationalised domain", "user@bücher.example", "[EMAIL]"],
  ["a CJK address", "联系 用户@例子.广告 谢谢", "联系 [EMAIL] 谢谢"],
  ["a CJK address in text without spaces: what cannot be told apart goes with it", "联系用户@例子.广告谢谢", "[EMAIL]"],
  ["+33 6 12 34 56 78", "appelle le +33 6 12 34 56 78 ce soir", "appelle le [PHONE] ce soir"],
  ["0151 12345678", "Handy 0151 12345678.", "Handy [PHONE]."],
  ["001 415 555 2671", "dial 001 415 555 2671", "dial [PHONE]"],
  ["030/1234567", "Tel. 030/1234567", "Tel. [PHONE]"],
  ["a bare 4155552671", "text 4155552671 later", "text [PHONE] later"],
  ["a PRC id in groups", "身份证 110105 19491231 002X", "身份证 [NATIONAL_ID]"],
  ["a card with dots", "card 4111.1111.1111.1111 exp 12/29", "card [PAYMENT_CARD] exp 12/29"],
];

const FORMS: Array<[string, string, string]> = [
  // secrets by key name, whatever the value looks like
  ["env", "DB_PASSWORD=correct horse battery staple", "DB_PASSWORD=[CREDENTIAL]"],
  ["shell export", "export GITHUB_TOKEN=\"ab12\" && make", "export GITHUB_TOKEN=\"[CREDENTIAL]\" && make"],
  ["INI", "[db]\npassword = p@ss w0rd\nuser = app", "[db]\npassword = [CREDENTIAL]\nuser = app"],
  ["YAML", "spring:\n  datasource:\n    password: hunter2\n    url: jdbc:x", "spring:\n  datasource:\n    password: [CREDENTIAL]\n    url: jdbc:x"],
  ["JSON", "{\"apiKey\": \"k\", \"client_secret\": \"s e c\"}", "{\"apiKey\": \"[CREDENTIAL]\", \"client_secret\": \"[CREDENTIAL]\"}"],
  ["JSON escaped in text", "{\\\"api_key\\\": \\\"abcd\\\"}", "{\\\"api_key\\\": \\\"[CREDENTIAL]\\\"}"],
  ["passwd / pwd", "passwd: x1 and MYSQL_PWD=x2", "passwd: [CREDENTIAL]"],
  ["AccountKey= in a connection string", "AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq==;EndpointSuffix=core", "AccountName=acct;AccountKey=[CREDENTIAL]"],
  ["a query string", "GET /cb?code=1&access_token=eyA9b8c7&state=x", "GET /cb?code=1&access_token=[CREDENTIAL]&state=x"],
  ["XML", "<password>P4ss</password>", "<password>[CREDENTIAL]</password>"],
  ["a command-line flag", "mysql --password s3cret --user app", "mysql --password [CREDENTIAL] --user app"],
  ["a command-line flag of a weak name (token, jwt, key)", "run --auth_token wJalrmg8KposA2FQa2nlzcz9 --jwt a2301d090e2859cc --max_tokens 100 --cache-key true", "run --auth_token [CREDENTIAL] --jwt [CREDENTIAL] --max_tokens 100 --cache-key true"],
  ["prose", "my password is Tr0ub4dor&3 ok", "my password is [CREDENTIAL] ok"],
  ["Go :=", "token := \"t0k\"", "token := \"[CREDENTIAL]\""],
  ["not a secret's name or value", "max_tokens: 100, tokenizer: bpe, keyboard: us, token: 42, key: true", "max_tokens: 100, tokenizer: bpe, keyboard: us, token: 42, key: true"],
  // PEM, URLs, vendors
  ["a PEM private key block", `key:\n${PEM}\nend`, "key:\n[CREDENTIAL]\nend"],
  ["a PEM block cut before its end", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "[CREDENTIAL]"],
  ["not a private key: a certificate", "-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----"],
  ["credentials in a URL", "postgres://app:s3cr3t@db.internal:5432/x and https://ghp_tok@github.com/o/r", "postgres://[CREDENTIAL]@db.internal:5432/x and https://[CREDENTIAL]@github.com/o/r"],
  ["a URL without userinfo keeps its host and path", "https://example.com/u/ana", "https://example.com/u/ana"],
  ["vendor tokens", "sk-ant-api03-" + "a".repeat(93) + "AA glpat-abcdefghij0123456789 xoxb-1234567890-abcdefghij npm_" + "A".repeat(36), "[CREDENTIAL] [CREDENTIAL] [CREDENTIAL] [CREDENTIAL]"],
  ["vendor tokens (2)", "AKIAIOSFODNN7EXAMPLE AIza" + "B".repeat(35) + " SG." + "c".repeat(22) + "." + "d".repeat(43), "[CREDENTIAL] [CREDENTIAL] [CREDENTIAL]"],
  ["vendor tokens (3)", "hf_" + "x".repeat(34) + " github_pat_" + "1".repeat(82) + " sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "[CREDENTIAL] [CREDENTIAL] [CREDENTIAL]"],
  ["a SendGrid key whose body begins with \"_\"", "key 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 sent", "key [CREDENTIAL] sent"],
  ["a Slack webhook", "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX now", "post to https://hooks.slack.com[CREDENTIAL] now"],
  ["a Telegram bot token", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 on", "bot [CREDENTIAL] on"],
  ["any Authorization scheme, any whitespace", "Authorization:  Token\t 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b\nProxy-Authorization: Digest username=\"u\", response=\"6629fae4\"", "Authorization:  Token\t [CREDENTIAL]\nProxy-Authorization: Digest [CREDENTIAL]"],
  ["Basic credentials decode to user:password", "Basic dXNlcjpwYXNzd29yZA== but Basic concepts", "Basic [CREDENTIAL] but Basic concepts"],
  ["a JWT by its header alone", "id_token eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJlbWFpbCI6ImFuYUBleGFtcGxlLm9yZyJ9 fin", "id_token [CREDENTIAL] fin"],
  // e-mail addresses
  ["a quoted local part", "to \"john doe\"@example.com!", "to [EMAIL]!"],
  ["punycode", "admin@xn--bcher-kva.example", "[EMAIL]"],
  ["upper case", "ANA@EXAMPLE.ORG", "[EMAIL]"],
  ["not an e-mail address", "a@b.c, user@localhost, @handle, x@-bad.com, me @ 5pm", "a@b.c, user@localhost, @handle, x@-bad.com, me @ 5pm"],
  // phones
  ["international forms", "+1-415-555-2671, +44 (0)20 7946 0958, 0044 20 7946 0958, +86 138 0013 8000", "[PHONE], [PHONE], [PHONE], [PHONE]"],
  ["national forms", "(415) 555-2671, 415.555.2671, 06 12 34 56 78, 020 7946 0958, 03-1234-5678, 13800138000", "[PHONE], [PHONE], [PHONE], [PHONE], [PHONE], [PHONE]"],
  ["not a phone number", "on 2024-01-15 10:30, 12/31/2024, v1.2.3, order 123456789, 1 2 3 4 5 6 7 8 9, 1700000000", "on 2024-01-15 10:30, 12/31/2024, v1.2.3, order 123456789, 1 2 3 4 5 6 7 8 9, 1700000000"],
  // cards and national ids, grouped and dotted
  ["cards grouped", "4111 1111 1111 1111, 4111-1111-1111-1111, 3782 822463 10005, 5555555555554444", "[PAYMENT_CARD], [PAYMENT_CARD], [PAYMENT_CARD], [PAYMENT_CARD]"],
  ["a 19-digit card whose first groups pass Aadhaar's check", "card 6228-0188-5208-2191-862 ok", "card [PAYMENT_CARD] ok"],
  ["not a card (Luhn)", "4111 1111 1111 1112", "4111 1111 1111 1112"],
  ["PRC ids", "11010519491231002X 110105-19491231-002X", "[NATIONAL_ID] [NATIONAL_ID]"],
  ["US SSNs", "SSN 123-45-6789, 123 45 6789, 123.45.6789, SSN: 123456789", "SSN [NATIONAL_ID], [NATIONAL_ID], [NATIONAL_ID], SSN: [NATIONAL_ID]"],
  ["not an SSN", "000-12-3456 666-12-3456 123-00-6789 and a bare 123456789", "000-12-3456 666-12-3456 123-00-6789 and a bare 123456789"],
  ["UK National Insurance numbers", "NI AB 12 34 56 C, ab123456c", "NI [NATIONAL_ID], [NATIONAL_ID]"],
  ["not a NINO (prefix letters)", "QQ123456C GB123456A DA123456A", "QQ123456C GB123456A DA123456A"],
  ["CPF, DNI, NIE, Aadhaar, SIN", "529.982.247-25 12345678Z X1234567L 2345 6789 0124 130 692 544", "[NATIONAL_ID] [NATIONAL_ID] [NATIONAL_ID] [NATIONAL_ID] [NATIONAL_ID]"],
  // IBANs
  ["IBANs with a valid checksum", "DE89 3704 0044 0532 0130 00, GB82WEST12345698765432, fr1420041010050500013m02606", "[IBAN], [IBAN], [IBAN]"],
  ["IBANs of the lengths a catalogue got wrong (PT 25, QA 29, MU 30, PS 29)", "PT50 0002 0123 1234 5678 9015 4 QA58DOHB00001234567890ABCDEFG MU17BOMM0101101030300200000MUR PS92PALS000000000400123456702", "[IBAN] [IBAN] [IBAN] [IBAN]"],
  ["not an IBAN (checksum)", "DE88 3704 0044 0532 0130 00", "DE88 3704 0044 0532 0130 00"],
];

describe("detectors (content module, emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  let vm: FilterVm;
  before(async () => {
    receiver = await startOtlpReceiver();
    vm = await loadContentFilter({ clock: new ManualClock(), random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "otel", content: { enabled: true } } }, clusters: { otel: receiver.url } });
  });
  after(async () => receiver.close());

  async function shown(text: string): Promise<string> {
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false);
    s.requestBody(JSON.stringify({ model: "m", messages: [{ role: "user", content: text }] }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }), true);
    s.end();
    vm.tick();
    await vm.settle();
    assert.deepEqual(receiver.problems, []);
    const a = receiver.spans[0]!.attributes.find((x) => x.key === "gen_ai.input.messages")!;
    return (anyValue(a.value) as Array<{ parts: Array<{ content: string }> }>)[0]!.parts[0]!.content;
  }

  for (const [what, text, expected] of WHY) it(`the issue's "Why": ${what}`, async () => assert.equal(await shown(text), expected));
  for (const [what, text, expected] of FORMS) it(`${what}: ${JSON.stringify(text).slice(0, 60)}`, async () => assert.equal(await shown(text), expected));
});
