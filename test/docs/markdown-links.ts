// Relative links in the project's Markdown, checked the way GitHub renders them: a link names a
// file or folder that exists inside the repository, and a `#fragment` names a heading (or an
// explicit `id`/`name`) of the Markdown file it points into.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";

// Characters github-slugger strips from a heading (Flet/github-slugger script/generate-regex.js,
// 3461c435): Unicode categories No, Pe, Pf, Pi, Ps, Po, Pd, S*, Cc, Co, Cf, Cn, Z*, except
// alphabetic characters, the space (becomes `-`) and `-` itself. `_` (Pc) is kept.
const STRIPPED = /[\p{No}\p{Pe}\p{Pf}\p{Pi}\p{Ps}\p{Po}\p{Pd}\p{S}\p{Cc}\p{Co}\p{Cf}\p{Cn}\p{Z}]/u;
const ALPHABETIC = /\p{Alphabetic}/u;

/** github-slugger's `slug` (index.js, 3461c435): lower case, stripped characters removed, spaces to `-`. */
export function githubSlug(text: string): string {
  let out = "";
  for (const ch of text.toLowerCase()) {
    if (ch === " ") out += "-";
    else if (ch === "-" || ALPHABETIC.test(ch) || !STRIPPED.test(ch)) out += ch;
  }
  return out;
}

/** The anchors GitHub gives a page's headings, in order, repeats suffixed `-1`, `-2` as BananaSlug#slug does. */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutCode(markdown).split("\n")) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading) {
      // The rendered text: code spans keep their content, links their text.
      const text = heading[1]!.replace(/`([^`]*)`/g, "$1").replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1");
      const base = githubSlug(text);
      let slug = base;
      while (seen.has(slug)) {
        const n = seen.get(base)! + 1;
        seen.set(base, n);
        slug = `${base}-${n}`;
      }
      seen.set(slug, 0);
      anchors.add(slug);
    }
    for (const m of line.matchAll(/<[a-z][^>]*\s(?:id|name)="([^"]+)"/gi)) anchors.add(m[1]!);
  }
  return anchors;
}

/** Fenced code blocks and HTML comments blanked (line count kept), so neither links nor headings are read in them. */
function withoutCode(markdown: string): string {
  const noComments = markdown.replace(/<!--[\s\S]*?-->/g, (c) => c.replace(/[^\n]/g, ""));
  let fence: string | null = null;
  return noComments
    .split("\n")
    .map((line) => {
      const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
      if (fence === null && open) {
        fence = open[1]!;
        return "";
      }
      if (fence !== null) {
        if (new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`).test(line)) fence = null;
        return "";
      }
      return line;
    })
    .join("\n");
}

/** Link destinations of a page outside code: inline links and images, and reference definitions. */
export function linkTargets(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  withoutCode(markdown)
    .split("\n")
    .forEach((raw, i) => {
      const line = raw.replace(/(`+)[\s\S]*?\1/g, "");
      for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^\s)]*)(?:\s+"[^"]*")?\s*\)/g)) out.push({ line: i + 1, target: m[1]!.replace(/^<|>$/g, "") });
      const def = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(line);
      if (def) out.push({ line: i + 1, target: def[1]!.replace(/^<|>$/g, "") });
    });
  return out;
}

/** Every relative link of `files` (paths under `root`) that does not resolve, as `file:line: target (why)`. */
export function brokenLinks(root: string, files: string[]): string[] {
  const broken: string[] = [];
  for (const file of files) {
    const path = resolve(root, file);
    const markdown = readFileSync(path, "utf8");
    for (const { line, target } of linkTargets(markdown)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...: not a file of ours
      const at = `${file}:${line}: ${target}`;
      const hash = target.indexOf("#");
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const fragment = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
      if (pathPart.startsWith("/")) {
        broken.push(`${at} (absolute path: GitHub resolves it against the site, not the repository)`);
        continue;
      }
      const dest = pathPart === "" ? path : resolve(dirname(path), pathPart);
      const inside = relative(root, dest);
      if (inside.startsWith("..") || isAbsolute(inside)) {
        broken.push(`${at} (outside the repository)`);
        continue;
      }
      if (!existsSync(dest)) {
        broken.push(`${at} (no such file or folder)`);
        continue;
      }
      if (fragment === null) continue;
      if (statSync(dest).isDirectory() || !dest.endsWith(".md")) {
        broken.push(`${at} (an anchor into something that is not a Markdown file)`);
        continue;
      }
      if (!headingAnchors(readFileSync(dest, "utf8")).has(fragment)) broken.push(`${at} (no heading with that anchor)`);
    }
  }
  return broken;
}
