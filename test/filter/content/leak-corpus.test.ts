// The leak corpus (issue 21, deliverable 4) in the suite: 2,000 generated values of every kind
// (test/support/leak-corpus.ts) through the real content module under the emulated Envoy host, in
// prompts and streamed completions of all five protocols, with placeholders and with pseudonyms
// (the key fetched from a real key server on 127.0.0.1), JSON-escaped in varied ways, each body
// split inside every value and every value cut by spans.content.maxBytes; exported to a real OTLP
// receiver on 127.0.0.1. No raw value, and no 8 characters of a value's secret part, may reach an
// exported span, a log line or a stat name. This run spreads the values over the protocols and
// samples the positions; `make leak-corpus SEED=… COUNT=…` runs every value through every protocol
// at every chunk and cut position.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateCorpus, KINDS } from "../../support/leak-corpus.js";
import { leaksIn, PROTOCOLS, runLeakCorpus } from "../../support/leak-runner.js";
import { requireArtifact, FILTER_CONTENT_WASM } from "../support.js";

/** The content module built with DETECTION_MARGIN = 0 (`make test` builds it: build/mutant/, the Makefile's rule). */
const MARGIN0_MUTANT = "build/mutant/filter-content-margin0.wasm";

describe("the leak corpus (content module, emulated Envoy host, real OTLP receiver and key server)", () => {
  it("the checker sees a raw value, 8 characters of a secret, a number with other separators; not a pseudonym or a placeholder", () => {
    const [card] = generateCorpus(7, KINDS.length * 2).filter((v) => v.kind === "payment card");
    const [vendor] = generateCorpus(7, KINDS.length * 2).filter((v) => v.kind === "vendor token");
    const values = [card!, vendor!];
    assert.equal(leaksIn(`x ${card!.text} y`, values, "t", "openai").length, 1);
    assert.equal(leaksIn(`x ${card!.compact!.replace(/(\d{4})(?=\d)/g, "$1 ")} y`, values, "t", "openai").length, 1);
    assert.equal(leaksIn(`x ${vendor!.secret.slice(3, 11).toUpperCase()} y`, values, "t", "openai").length, 1);
    assert.equal(leaksIn("x [PAYMENT_CARD:0123456789abcdef] [CREDENTIAL] y", values, "t", "openai").length, 0);
  });

  it("2,000 values of every kind, every protocol, placeholders and pseudonyms, escapes, chunk splits and cuts: zero leaks", async () => {
    const report = await runLeakCorpus({ wasm: requireArtifact(FILTER_CONTENT_WASM), seed: 21, count: 2000, spread: true });
    const distinct = [...new Map(report.leaks.map((l) => [l.value, l])).values()].slice(0, 20);
    assert.deepEqual(distinct.map((l) => `${l.kind} ${JSON.stringify(l.value)} (${l.protocol}, ${l.where}): …${l.excerpt}…`), []);
    assert.equal(report.values, 2000);
    assert.equal(Object.keys(report.kinds).length, KINDS.length, "every kind");
    assert.equal(report.spans, report.exchanges, "every exchange exported its span");
    assert.ok(report.exchanges >= 2000 + 2000 / 20, `${report.exchanges} exchanges`);
    assert.ok(report.cutPositions >= 2 * 2000 && report.chunkPositions >= 2 * 2000, "every value split and cut");
    assert.ok(report.replaced >= 2 * 2000, `${report.replaced} replacements`);
    assert.equal(PROTOCOLS.length, 5);
  });

  it("catches the zero-detection-margin mutant: a value the maxBytes cut splits leaks from a module that looks no further than the cut", async () => {
    const report = await runLeakCorpus({ wasm: requireArtifact(MARGIN0_MUTANT), seed: 21, count: 260, spread: true });
    assert.ok(report.values === 260 && report.spans === report.exchanges, "the mutant ran the corpus");
    assert.ok(report.leaks.length > 0, "the corpus finds no leak in a module with no detection margin: it no longer tests the cut");
  });
});
