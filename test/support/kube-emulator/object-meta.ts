// ObjectMeta validation every resource gets, read at kubernetes/apimachinery eed236ce:
// pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor, ValidateAnnotations) and
// pkg/api/validate/content/kube.go (IsLabelKey, IsLabelValue).
import type { StatusCause } from "./status.js";
import type { ObjectMeta } from "./store.js";

const dns1123Label = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const dns1123Subdomain = new RegExp(`^${dns1123Label}(\\.${dns1123Label})*$`);
const labelKeyName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** objectmeta.go TotalAnnotationSizeLimitB: keys plus values, 256 KiB. */
export const totalAnnotationSizeLimitBytes = 256 * 1024;

/** content.IsDNS1123Subdomain's message, for names. */
export function dnsSubdomainErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 253) errors.push("must be no more than 253 characters");
  if (!dns1123Subdomain.test(value)) {
    errors.push("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character");
  }
  return errors;
}

/** content.IsLabelKey: optional DNS-subdomain prefix and '/', then a name of at most 63 characters. */
export function labelKeyErrors(key: string): string[] {
  const parts = key.split("/");
  if (parts.length > 2) return ["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/'"];
  const errors: string[] = [];
  const name = parts.length === 2 ? (parts[1] as string) : (parts[0] as string);
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix === "") errors.push("prefix part must be non-empty");
    else errors.push(...dnsSubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  }
  if (name === "") errors.push("name part must be non-empty");
  else if (name.length > 63) errors.push("name part must be no more than 63 characters");
  if (!labelKeyName.test(name)) errors.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
  return errors;
}

/** content.IsLabelValue: empty, or at most 63 characters of [-A-Za-z0-9_.] starting and ending alphanumeric. */
export function labelValueErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 63) errors.push("must be no more than 63 characters");
  if (!labelValue.test(value)) errors.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
  return errors;
}

/** ValidateObjectMetaAccessor for name, labels and annotations (the rest is the server's). */
export function validateObjectMeta(meta: ObjectMeta): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = meta.name ?? "";
  if (name === "") {
    causes.push({ reason: "FieldValueRequired", field: "metadata.name", message: "Required value: name or generateName is required" });
  } else {
    for (const message of dnsSubdomainErrors(name)) causes.push({ reason: "FieldValueInvalid", field: "metadata.name", message: `Invalid value: ${JSON.stringify(name)}: ${message}` });
  }
  for (const [key, value] of Object.entries(meta.labels ?? {})) {
    for (const message of labelKeyErrors(key)) causes.push({ reason: "FieldValueInvalid", field: "metadata.labels", message: `Invalid value: ${JSON.stringify(key)}: ${message}` });
    if (typeof value !== "string") {
      causes.push({ reason: "FieldValueTypeInvalid", field: `metadata.labels.${key}`, message: "Invalid value: must be a string" });
      continue;
    }
    for (const message of labelValueErrors(value)) causes.push({ reason: "FieldValueInvalid", field: `metadata.labels`, message: `Invalid value: ${JSON.stringify(value)}: ${message}` });
  }
  let annotationBytes = 0;
  for (const [key, value] of Object.entries(meta.annotations ?? {})) {
    for (const message of labelKeyErrors(key.toLowerCase())) causes.push({ reason: "FieldValueInvalid", field: "metadata.annotations", message: `Invalid value: ${JSON.stringify(key)}: ${message}` });
    annotationBytes += Buffer.byteLength(key) + Buffer.byteLength(String(value));
  }
  if (annotationBytes > totalAnnotationSizeLimitBytes) {
    causes.push({ reason: "FieldValueTooLong", field: "metadata.annotations", message: `Too long: may not be more than ${totalAnnotationSizeLimitBytes} bytes` });
  }
  return causes;
}
