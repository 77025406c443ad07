// One structured audit line per committed policy change: who (a token id, never the token),
// what, when, and the old and new versions. The store writes the same facts in the same atomic
// record as the change (file-store.ts), so a change can never be committed without them; the
// line is emitted from that record after the commit, and again, marked `recovered`, at the next
// start when a crash came between the commit and the line.

/** An audit record. */
export interface AuditRecord {
  who: string;
  action: "create" | "replace" | "patch" | "delete" | "rollback";
  policy: string;
  oldVersion: string | null;
  newVersion: string | null;
  /** When the change was committed (ISO 8601). */
  at: string;
  /** True when emitted at start-up for a change whose line a crash may have prevented. */
  recovered?: true;
}

/** Receives audit records. */
export type AuditSink = (record: AuditRecord) => void;

/** Writes `{"time":..,"level":"info","msg":"audit",...}` lines through `write`. */
export function jsonLineAudit(write: (line: string) => void, now: () => Date = () => new Date()): AuditSink {
  return (record) => write(`${JSON.stringify({ time: now().toISOString(), level: "info", msg: "audit", ...record })}\n`);
}
