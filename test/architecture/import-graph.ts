// The import graph of a source folder and its circles, built with TypeScript's own scanner
// (ts.preProcessFile), so the check reads imports exactly as the compiler does: static imports,
// `export ... from`, `import type` and dynamic `import("...")`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

/** How a folder spells relative imports. */
export type Resolution =
  /** Node ESM as the control plane writes it: `./x.js` names `./x.ts`. */
  | "node-esm"
  /** AssemblyScript (filter/): `./x` names `./x.ts`, `./dir` names `./dir/index.ts`. */
  | "assemblyscript";

/** The files of one folder and the relative imports between them. */
export interface ImportGraph {
  root: string;
  /** Each source file (absolute) -> the source files it imports (absolute, inside `root`). */
  edges: Map<string, Set<string>>;
  /** Relative specifiers that name no file at all, as `file: specifier` (a typo the graph would miss). */
  unresolved: string[];
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "node_modules") out.push(...sourceFiles(path));
    } else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) {
      out.push(path);
    }
  }
  return out;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The file a relative specifier names, or undefined when none exists. */
function resolveSpecifier(from: string, specifier: string, resolution: Resolution): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates =
    resolution === "node-esm"
      ? [base.endsWith(".js") ? `${base.slice(0, -3)}.ts` : base, base]
      : [`${base}.ts`, join(base, "index.ts"), base];
  return candidates.find(isFile);
}

/**
 * Builds the graph of `root`'s `.ts` files. Type-only imports are edges too: a type import
 * still makes one module's shape depend on another's, so a circle through types is still a
 * circle a reader (and a refactor) has to walk around.
 */
export function importGraph(folder: string, resolution: Resolution): ImportGraph {
  const root = resolve(folder);
  const files = sourceFiles(root);
  const known = new Set(files);
  const edges = new Map<string, Set<string>>();
  const unresolved: string[] = [];
  for (const file of files) {
    const targets = new Set<string>();
    const scanned = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName: specifier } of scanned.importedFiles) {
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) continue;
      const target = resolveSpecifier(file, specifier, resolution);
      if (target === undefined) unresolved.push(`${relative(root, file)}: ${specifier}`);
      else if (known.has(target)) targets.add(target);
    }
    edges.set(file, targets);
  }
  return { root, edges, unresolved };
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
export function cycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.edges.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.edges.get(node)?.has(node)) found.push(component.sort());
  };
  for (const node of graph.edges.keys()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** One concrete loop through a component, starting and ending at its first file (shortest by BFS). */
export function loopThrough(graph: ImportGraph, component: readonly string[]): string[] {
  const members = new Set(component);
  const start = component[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i] as string;
    for (const target of graph.edges.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path: string[] = [];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = previous.get(at)) path.unshift(at);
        return [start, ...path, start];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}

/** A readable report: each circle's files and one loop through them, paths relative to `from`. */
export function describeCycles(graph: ImportGraph, found: readonly string[][], from: string): string {
  return found
    .map((component, i) => {
      const names = component.map((file) => relative(from, file));
      const loop = loopThrough(graph, component).map((file) => relative(from, file));
      return `circle ${i + 1} (${names.length} files): ${names.join(", ")}\n  for example: ${loop.join(" -> ")}`;
    })
    .join("\n");
}
