// A header map as Envoy keeps one: ordered entries, lower-case names, duplicates allowed.
import type { Pairs } from "./pairs.js";

/** Read-only view of a header map as the filter left it. */
export interface HeaderMap {
  get(name: string): string | undefined;
  getAll(name: string): string[];
  entries(): Array<[string, string]>;
}

/** The mutable map behind a stream's request/response headers or trailers. */
export class HeaderList implements HeaderMap {
  private list: Pairs;

  constructor(pairs: ReadonlyArray<readonly [string, string]> = []) {
    this.list = pairs.map(([k, v]) => [k.toLowerCase(), v]);
  }

  get size(): number {
    return this.list.length;
  }

  /** Envoy's HeaderMap::byteSize: the sum of every key and value length in bytes. */
  byteSize(): number {
    let n = 0;
    for (const [k, v] of this.list) n += Buffer.byteLength(k) + Buffer.byteLength(v);
    return n;
  }

  // Lookups run on every host call of every request: index loops, no iterator or closure, and
  // no lower-casing of a name that is already lower-case (what modules send).
  get(name: string): string | undefined {
    const key = lower(name);
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e[0] === key) return e[1];
    }
    return undefined;
  }

  getAll(name: string): string[] {
    const key = name.toLowerCase();
    const out: string[] = [];
    for (const [k, v] of this.list) if (k === key) out.push(v);
    return out;
  }

  entries(): Array<[string, string]> {
    return this.list.map(([k, v]) => [k, v]);
  }

  /** The live entries, for serialising without a copy. */
  raw(): ReadonlyArray<readonly [string, string]> {
    return this.list;
  }

  add(name: string, value: string): void {
    this.list.push([name.toLowerCase(), value]);
  }

  /** Envoy's setCopy: every entry of the name goes, one entry with the new value stays (in the first one's place). */
  replace(name: string, value: string): void {
    const key = lower(name);
    const list = this.list;
    let first = -1;
    let more = false;
    for (let i = 0; i < list.length; i++) {
      if (list[i]![0] !== key) continue;
      if (first < 0) first = i;
      else more = true;
    }
    if (first < 0) {
      list.push([key, value]);
      return;
    }
    if (more) this.list = list.filter(([k], i) => k !== key || i === first);
    this.list[first] = [key, value];
  }

  remove(name: string): void {
    const key = lower(name);
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      if (list[i]![0] === key) {
        this.list = list.filter(([k]) => k !== key);
        return;
      }
    }
  }

  /** proxy_set_header_map_pairs: every entry removed, the new pairs added with lower-cased names. */
  setAll(pairs: Pairs): void {
    this.list = pairs.map(([k, v]) => [k.toLowerCase(), v]);
  }
}

/** `name` lower-cased, without a new string when it already is (header names modules send are). */
function lower(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return name.toLowerCase();
  }
  return name;
}
