// The front page and docs/ hold together: every relative link and anchor in README.md and
// docs/*.md resolves, every docs page is listed on the front page, and the checker itself finds
// each kind of broken link (on pages written here in a temp dir).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { brokenLinks, githubSlug, headingAnchors, linkTargets } from "./markdown-links.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCS = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`);

describe("README.md and docs/", () => {
  it("every relative link and anchor resolves to a file, folder or heading of the repository", () => {
    assert.ok(DOCS.length > 0, "docs/ has pages");
    assert.deepEqual(brokenLinks(ROOT, ["README.md", ...DOCS]), []);
  });

  it("the front page links every docs page", () => {
    const linked = new Set(linkTargets(readFileSync(join(ROOT, "README.md"), "utf8")).map((l) => posix.normalize(l.target.split("#")[0]!)));
    assert.deepEqual(DOCS.filter((page) => !linked.has(page)), [], "add the page to README's list of docs");
  });
});

describe("the link checker", () => {
  // Heading texts and the anchors GitHub gives them (cases from Flet/github-slugger test/fixtures.json, 3461c435).
  for (const [heading, slug] of [
    ["Configuration (`pluginConfig`)", "configuration-pluginconfig"],
    ["Why is P99 slow? A walk-through on the demo", "why-is-p99-slow-a-walk-through-on-the-demo"],
    ["What the module's bytes pay for", "what-the-modules-bytes-pay-for"],
    ["heading with a - dash", "heading-with-a---dash"],
    ["heading with an _ underscore", "heading-with-an-_-underscore"],
    ["Café au lait", "café-au-lait"],
  ] as const) {
    it(`names the heading "${heading}" #${slug}`, () => assert.equal(githubSlug(heading), slug));
  }

  it("suffixes a repeated heading -1, -2, skipping a suffix another heading already took", () => {
    const anchors = headingAnchors("# echo\n## echo\n### echo 1\n## echo\n```sh\n# echo\n```\n<a id=\"custom\"></a>\n");
    assert.deepEqual([...anchors].sort(), ["custom", "echo", "echo-1", "echo-1-1", "echo-2"]);
  });

  it("reports a missing file, a missing heading, an anchor into a non-Markdown file, a path outside the repository and an absolute path; skips URLs and code", () => {
    const root = mkdtempSync(join(tmpdir(), "tt-links-"));
    mkdirSync(join(root, "docs"));
    writeFileSync(join(root, "code.ts"), "");
    writeFileSync(join(root, "docs", "a.md"), "# Page A\n## Second part\n");
    writeFileSync(
      join(root, "README.md"),
      [
        "# Front",
        "[ok](docs/a.md) [ok](docs/a.md#second-part) [ok](#front) [ok](code.ts) [ok](docs/) [`ok`](<docs/a.md> \"title\")",
        "[web](https://example.com/missing) [mail](mailto:x@example.com)",
        "`[code](missing-in-code.md)` <!-- [comment](missing-in-comment.md) -->",
        "```md",
        "[fenced](missing-in-fence.md)",
        "```",
        "[gone](docs/b.md)",
        "[no heading](docs/a.md#third-part)",
        "[no heading here](#nowhere)",
        "[code anchor](code.ts#L1)",
        "[outside](../elsewhere.md)",
        "[absolute](/docs/a.md)",
        "[ref]: docs/c.md",
      ].join("\n"),
    );
    assert.deepEqual(brokenLinks(root, ["README.md"]), [
      "README.md:8: docs/b.md (no such file or folder)",
      "README.md:9: docs/a.md#third-part (no heading with that anchor)",
      "README.md:10: #nowhere (no heading with that anchor)",
      "README.md:11: code.ts#L1 (an anchor into something that is not a Markdown file)",
      "README.md:12: ../elsewhere.md (outside the repository)",
      "README.md:13: /docs/a.md (absolute path: GitHub resolves it against the site, not the repository)",
      "README.md:14: docs/c.md (no such file or folder)",
    ]);
  });
});
