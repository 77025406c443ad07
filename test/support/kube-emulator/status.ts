// Kubernetes `Status` objects as the apiserver returns them for failed requests (and for
// watch ERROR events). Clients (including @kubernetes/client-node) read `code` and `reason`.

/** One field-level cause of an Invalid status. */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** A metav1.Status with the fields clients look at. */
export interface KubeStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message: string;
  reason: string;
  details?: { name?: string; group?: string; kind?: string; causes?: StatusCause[] };
  code: number;
}

/** Builds a failure Status; `details` follows the apiserver's StatusDetails. */
export function failure(code: number, reason: string, message: string, details?: KubeStatus["details"]): KubeStatus {
  const status: KubeStatus = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
  if (details !== undefined) status.details = details;
  return status;
}

/** Identifies the object a status is about, as `<plural>.<group>` plus name. */
export interface Target {
  plural: string;
  group: string;
  kind: string;
  name: string;
}

function qualified(target: Target): string {
  return target.group === "" ? target.plural : `${target.plural}.${target.group}`;
}

/** 404 `<resource> "<name>" not found`. */
export function notFound(target: Target): KubeStatus {
  return failure(404, "NotFound", `${qualified(target)} "${target.name}" not found`, {
    name: target.name,
    group: target.group,
    kind: target.plural,
  });
}

/** 409 on create of an existing name. */
export function alreadyExists(target: Target): KubeStatus {
  return failure(409, "AlreadyExists", `${qualified(target)} "${target.name}" already exists`, {
    name: target.name,
    group: target.group,
    kind: target.plural,
  });
}

/** 409 on a write whose metadata.resourceVersion is not the stored one. */
export function conflict(target: Target): KubeStatus {
  return failure(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualified(target)} "${target.name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name: target.name, group: target.group, kind: target.plural },
  );
}

/** 422 with one cause per field error; the message lists them like the apiserver does. */
export function invalid(target: Target, causes: StatusCause[]): KubeStatus {
  const parts = causes.map((c) => `${c.field}: ${c.message}`);
  const joined = parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`;
  const kindGroup = target.group === "" ? target.kind : `${target.kind}.${target.group}`;
  return failure(422, "Invalid", `${kindGroup} "${target.name}" is invalid: ${joined}`, {
    name: target.name,
    group: target.group,
    kind: target.kind,
    causes,
  });
}

/** 400 for a request the server cannot decode or that contradicts its URL. */
export function badRequest(message: string): KubeStatus {
  return failure(400, "BadRequest", message);
}

/** 410 for a resourceVersion or continue token older than the retained history. */
export function expired(message: string): KubeStatus {
  return failure(410, "Expired", message);
}
