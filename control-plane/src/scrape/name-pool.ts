// Label values kept past the scrape they came from (a model or route name in an hour of dashboard
// history, in a rate's last two scrapes): the text parser slices them out of the scraped text, and a
// kept slice keeps that whole text alive (V8 holds a slice of 13 characters or more as a view of its
// parent). A pool gives each name once, as a copy, to every holder.

/** The bytes V8 stores a string's characters in: one each, two each when any is past Latin-1. */
export function stringBytes(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return 2 * s.length;
  return s.length;
}

/** A copy of `s` that shares nothing with the string it came from. */
export function ownCopy(s: string): string {
  return Buffer.from(s, "utf8").toString("utf8");
}

/** Longest name pooled: a longer one is copied for each holder. */
export const MAX_POOLED_CHARS = 256;

/**
 * Names by their text, each a copy, shared by whoever keeps them; past `max` names (or past
 * MAX_POOLED_CHARS characters) each is copied afresh and not pooled, so the pool holds at most
 * max x MAX_POOLED_CHARS characters.
 */
export class NamePool {
  private readonly pool = new Map<string, string>();

  constructor(private readonly max = 1024) {}

  of(name: string): string {
    const known = this.pool.get(name);
    if (known !== undefined) return known;
    const copy = ownCopy(name);
    if (this.pool.size < this.max && copy.length <= MAX_POOLED_CHARS) this.pool.set(copy, copy);
    return copy;
  }

  /** Names pooled. */
  get size(): number {
    return this.pool.size;
  }
}
