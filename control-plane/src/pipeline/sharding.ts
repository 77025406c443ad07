// Which replica scrapes which target. A target's shard key goes through Prometheus's `hashmod`
// (model/relabel/relabel.go, case HashMod: md5 of the value, its last 8 bytes as a big-endian
// uint64, modulo) into one of SHARD_SLOTS slots, and each slot belongs to the live member with the
// highest rendezvous weight for it. Unlike `hashmod` over the replica count, losing a replica moves
// only that replica's slots (survivors keep theirs), so a takeover never has two live replicas
// scraping one target. The shard key is the target's node when known, else its identity: the join
// is per node (dcgm-exporter maps the pods of its own node, tokens per joule sums the node's pods),
// so a node's sidecars, vLLM servers and dcgm-exporter stay on one replica, as Prometheus users
// shard with hashmod on `__meta_kubernetes_pod_node_name` for node-local joins.
import { createHash } from "node:crypto";
import type { ScrapeTarget } from "../scrape/targets.js";

/** Slots the targets are hashed into (many more than replicas, so slots spread evenly). */
export const SHARD_SLOTS = 1024;

/** Prometheus's hashmod: md5 of `value`, the last 8 bytes as a big-endian uint64, modulo `modulus`. */
export function hashmod(value: string, modulus: number): number {
  const digest = createHash("md5").update(value).digest();
  return Number(digest.readBigUInt64BE(8) % BigInt(modulus));
}

/** What a target is sharded by: its node when known, else its identity (kind, URL, pod). */
export function shardKey(t: ScrapeTarget): string {
  return t.node !== undefined ? `node/${t.node}` : `target/${t.id}`;
}

function weight(member: string, slot: number): bigint {
  return createHash("md5").update(`${member}\x00${slot}`).digest().readBigUInt64BE(0);
}

/** The member owning each slot (rendezvous hashing), for a sorted member list. */
export function slotOwners(members: readonly string[]): string[] {
  const owners: string[] = [];
  for (let slot = 0; slot < SHARD_SLOTS; slot++) {
    let best: string | undefined;
    let bestWeight = -1n;
    for (const m of members) {
      const w = weight(m, slot);
      if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
        best = m;
        bestWeight = w;
      }
    }
    owners.push(best ?? "");
  }
  return owners;
}

/**
 * Which member owns which target for one membership. When targets change hands is the hand-over's
 * business (handover.ts): rendezvous hashing moves a slot only to a member that joined, or away
 * from one that left.
 */
export class ShardAssignment {
  readonly owners: string[];
  private readonly slotOfKey = new Map<string, number>();

  constructor(readonly members: readonly string[], readonly self: string) {
    this.owners = slotOwners(members);
  }

  /** The slot `t` hashes into. */
  slotOf(t: ScrapeTarget): number {
    const key = shardKey(t);
    let slot = this.slotOfKey.get(key);
    if (slot === undefined) this.slotOfKey.set(key, (slot = hashmod(key, SHARD_SLOTS)));
    return slot;
  }

  /** The member owning `t` ("" while there is none). */
  ownerOf(t: ScrapeTarget): string {
    return this.owners[this.slotOf(t)] ?? "";
  }
}
