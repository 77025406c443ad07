// A batch the receiver refuses as a whole (400) is split in halves, recursively, until each refused
// series is alone: the series the receiver takes arrive, only the refused ones are dropped (see
// rejection.ts for why a 1.0 400 refuses the whole request). Every request is a node of a binary tree
// whose leaves are single series and whose inner nodes have two children, so a batch of n series
// costs at most 2n - 1 requests; with one refused series, 2 log2(n) + 1.
import { seriesParts, type SeriesPart } from "./protobuf.js";
import type { SendResult } from "./transport.js";

function concat(v1: Uint8Array, parts: readonly SeriesPart[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.end - p.start;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(v1.subarray(p.start, p.end), at);
    at += p.end - p.start;
  }
  return out;
}

/** What a split delivery needs: one send (with its retries and protocol fallback) and the counters. */
export interface SplitHooks {
  /** Sends one 1.0 body of `samples` samples. */
  send(v1: Uint8Array, samples: number): Promise<SendResult>;
  accepted(samples: number): void;
  dropped(reason: string, samples: number): void;
}

// A 400 without a written count refused the whole request; one with it (a 2.0 partial write) stored
// the rest already, so splitting would only send stored samples again.
const refusedWhole = (r: SendResult): r is SendResult & { kind: "failed" } => r.kind === "failed" && r.status === 400 && r.samplesWritten === undefined;

/** Counts a final result; a retryable one (shutdown) counts nothing, its round is sent again. */
function count(r: SendResult, samples: number, hooks: SplitHooks): void {
  if (r.kind === "success") hooks.accepted(samples);
  else if (r.kind === "failed") {
    const written = Math.min(samples, r.samplesWritten ?? 0);
    if (written > 0) hooks.accepted(written);
    if (samples > written) hooks.dropped(r.reason, samples - written);
  }
}

/**
 * Sends a 1.0 body; on a whole-request 400 sends its halves, recursively, and drops only what is
 * refused alone. Returns retryable when the split was cut short (shutdown: the caller keeps the
 * round on disk), else the first result.
 */
export async function sendSplitting(v1: Uint8Array, samples: number, hooks: SplitHooks): Promise<SendResult> {
  const first = await hooks.send(v1, samples);
  if (!refusedWhole(first)) {
    count(first, samples, hooks);
    return first;
  }
  let parts: SeriesPart[] = [];
  try {
    parts = seriesParts(v1);
  } catch {
    // Our own encoding always parses; a body that does not cannot be split, only dropped.
  }
  if (parts.length <= 1) {
    hooks.dropped(first.reason, samples);
    return first;
  }
  return (await splitHalves(v1, parts, hooks)) ?? first;
}

/** Sends the two halves of `parts` in order, each split again on a whole-request 400; a retryable result stops it. */
async function splitHalves(v1: Uint8Array, parts: readonly SeriesPart[], hooks: SplitHooks): Promise<SendResult | undefined> {
  const mid = parts.length >> 1;
  for (const half of [parts.slice(0, mid), parts.slice(mid)]) {
    let n = 0;
    for (const p of half) n += p.samples;
    const r = await hooks.send(concat(v1, half), n);
    if (r.kind === "retryable") return r;
    if (refusedWhole(r) && half.length > 1) {
      const inner = await splitHalves(v1, half, hooks);
      if (inner) return inner;
    } else count(r, n, hooks);
  }
  return undefined;
}
