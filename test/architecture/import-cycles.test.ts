// No import circles in the control plane or the filter: a module owns its configuration section,
// and the data flows one way, so a change to one concern does not ripple back through another.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cycles, describeCycles, importGraph, type Resolution } from "./import-graph.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));

function plant(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "tt-import-graph-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const folders: [string, Resolution][] = [
  ["control-plane/src", "node-esm"],
  ["filter", "assemblyscript"],
];

describe("import circles", () => {
  for (const [folder, resolution] of folders) {
    it(`${folder} has none, and every relative import names a file`, () => {
      const graph = importGraph(join(repo, folder), resolution);
      const edgeCount = [...graph.edges.values()].reduce((sum, targets) => sum + targets.size, 0);
      // A graph without edges would pass vacuously (a wrong root or a resolver that finds nothing).
      assert.ok(edgeCount >= graph.edges.size, `${folder}: only ${edgeCount} imports among ${graph.edges.size} files`);
      assert.deepEqual(graph.unresolved, []);
      const found = cycles(graph);
      assert.equal(found.length, 0, `${folder} has import circles:\n${describeCycles(graph, found, repo)}`);
    });
  }

  it("finds a planted circle through a type-only import, a self-import, and names their files", () => {
    const dir = plant({
      "a.ts": 'import { b } from "./b.js";\nexport const a = b + 1;\n',
      "b.ts": 'import type { A } from "./nested/types.js";\nexport const b: A = 1;\n',
      "nested/types.ts": 'import { a } from "../a.js";\nexport type A = typeof a;\n',
      "leaf.ts": 'import { a } from "./a.js";\nexport const leaf = a;\n',
      "self.ts": 'export * from "./self.js";\n',
      "lazy.ts": 'export const load = () => import("./lazy-back.js");\n',
      "lazy-back.ts": 'import { load } from "./lazy.js";\nexport const again = load;\n',
    });
    const graph = importGraph(dir, "node-esm");
    const found = cycles(graph);
    assert.deepEqual(
      found.map((component) => component.map((file) => file.slice(dir.length + 1))),
      [["a.ts", "b.ts", "nested/types.ts"], ["lazy-back.ts", "lazy.ts"], ["self.ts"]],
    );
    assert.equal(
      describeCycles(graph, found, dir),
      [
        "circle 1 (3 files): a.ts, b.ts, nested/types.ts",
        "  for example: a.ts -> b.ts -> nested/types.ts -> a.ts",
        "circle 2 (2 files): lazy-back.ts, lazy.ts",
        "  for example: lazy-back.ts -> lazy.ts -> lazy-back.ts",
        "circle 3 (1 files): self.ts",
        "  for example: self.ts -> self.ts",
      ].join("\n"),
    );
  });

  it("resolves AssemblyScript's extension-less specifiers and folder imports to index.ts", () => {
    const dir = plant({
      "index.ts": 'import { Root } from "./root";\nexport { Root };\n',
      "root.ts": 'import { parse } from "./protocols";\nexport class Root {}\n',
      "protocols/index.ts": 'export { parse } from "./openai";\n',
      "protocols/openai.ts": 'import { Root } from "../root";\nexport function parse(): Root { return new Root(); }\n',
    });
    const graph = importGraph(dir, "assemblyscript");
    assert.deepEqual(
      cycles(graph).map((component) => component.map((file) => file.slice(dir.length + 1))),
      [["protocols/index.ts", "protocols/openai.ts", "root.ts"]],
    );
  });

  it("reports a relative import that names no file instead of dropping the edge", () => {
    const dir = plant({ "a.ts": 'import { b } from "./missing.js";\nexport const a = b;\n' });
    assert.deepEqual(importGraph(dir, "node-esm").unresolved, ["a.ts: ./missing.js"]);
  });
});
