// One structured audit line per policy change: who (token id, never the token), what, and the
// old and new versions.

/** An audit record. */
export interface AuditRecord {
  who: string;
  action: "create" | "replace" | "patch" | "delete" | "rollback";
  policy: string;
  oldVersion: string | null;
  newVersion: string | null;
}

/** Receives audit records. */
export type AuditSink = (record: AuditRecord) => void;

/** Writes `{"time":..,"level":"info","msg":"audit",...}` lines through `write`. */
export function jsonLineAudit(write: (line: string) => void, now: () => Date = () => new Date()): AuditSink {
  return (record) => write(`${JSON.stringify({ time: now().toISOString(), level: "info", msg: "audit", ...record })}\n`);
}
