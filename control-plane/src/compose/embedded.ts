// Embedded mode: policies live in the journaled file store on this process's disk, and filters pull.
import type { AuditSink } from "../policy/audit.js";
import type { StoreConfig } from "../policy/config.js";
import { FilePolicyStore } from "../policy/file-store.js";
import type { Runtime } from "./runtime.js";

/** Opens the file store; throws a start-up failure when the file cannot be read or replayed. */
export function openEmbeddedPolicies(store: Pick<StoreConfig, "path">, runtime: Pick<Runtime, "log" | "nowMs">, audit: AuditSink): FilePolicyStore {
  return new FilePolicyStore({ path: store.path, audit, log: runtime.log, nowMs: runtime.nowMs });
}
