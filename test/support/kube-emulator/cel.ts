// x-kubernetes-validations: CEL rules of a CRD schema, compiled when the CRD is registered and
// evaluated on every write, with the semantics of k8s.io/apiextensions-apiserver
// (1aa2717a pkg/apiserver/schema/cel/validation.go, pkg/apis/apiextensions/validation/validation.go):
// `self` is the value at the node that declares the rule, `oldSelf` its previous value (a rule
// using oldSelf is a transition rule, evaluated only on updates that had an old value), integers
// are CEL ints and numbers doubles, an object is a map. Evaluation is the real CEL language
// (@bufbuild/cel) with Kubernetes' URL library (cel-urls.ts); what the emulator cannot check it
// refuses at registration, never skips.
import { celEnv, parse, plan, type CelInput } from "@bufbuild/cel";
import { urlFunctionNames, urlFunctions, urlMethodNames } from "./cel-urls.js";
import type { Json } from "./patch.js";
import type { StructuralSchema } from "./schema.js";

/** One x-kubernetes-validations entry. */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

type Program = ReturnType<typeof plan>;
type Expr = ReturnType<typeof parse>["expr"];

/** A compiled rule. */
export interface CompiledRule {
  source: ValidationRule;
  program: Program;
  usesOldSelf: boolean;
}

// The CEL standard library @bufbuild/cel implements, and Kubernetes' URL library; Kubernetes'
// other libraries (quantity, format, the lists and regex extensions, ...) are not here, so rules
// using them are refused by the emulator rather than evaluated wrongly.
const knownFunctions = new Set<string>([
  "size", "has", "all", "exists", "exists_one", "map", "filter", "matches", "startsWith", "endsWith", "contains",
  "int", "uint", "double", "string", "bool", "bytes", "type", "dyn", "duration", "timestamp",
  ...urlFunctionNames,
]);

const env = celEnv({ funcs: urlFunctions });

// True for `url(...)`, the only expression of type URL the emulator knows.
const isUrlCall = (expr: Expr | undefined): boolean => expr?.exprKind.case === "callExpr" && expr.exprKind.value.function === "url" && expr.exprKind.value.target === undefined;
const compiled = new Map<string, { program: Program; usesOldSelf: boolean; error?: string }>();

/** Why a rule cannot be compiled against `schema` (the API server's compile errors), or undefined. */
export function compileError(rule: string, schema: StructuralSchema): string | undefined {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rule);
  } catch (error) {
    return `compilation failed: ${(error as Error).message}`;
  }
  const problems: string[] = [];
  visit(parsed.expr, schema, problems);
  return problems[0];
}

// Undefined fields of `self` are compile errors (the rule is type-checked against the schema).
function visit(expr: Expr | undefined, schema: StructuralSchema, problems: string[]): void {
  if (expr === undefined) return;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr": {
      // A URL has no fields (checker: type 'kubernetes.URL' does not support field selection).
      if (isUrlCall(kind.value.operand)) problems.push(`compilation failed: ERROR: <input>: type 'kubernetes.URL' does not support field selection`);
      const chain = selfChain(expr);
      // At a resource's root only metadata.name and metadata.generateName are visible (schema/cel/model).
      if (chain !== undefined && chain[0] === "metadata" && schema.properties?.apiVersion !== undefined) {
        if (chain.length > 1 && chain[1] !== "name" && chain[1] !== "generateName") problems.push(`compilation failed: ERROR: <input>: undefined field '${chain[1]}'`);
        return;
      }
      if (chain !== undefined) {
        let node: StructuralSchema | undefined = schema;
        for (const field of chain) {
          if (node === undefined || node["x-kubernetes-preserve-unknown-fields"] || node.additionalProperties !== undefined) break;
          const next: StructuralSchema | undefined = node.properties !== undefined && Object.hasOwn(node.properties, field) ? node.properties[field] : undefined;
          if (next === undefined) {
            problems.push(`compilation failed: ERROR: <input>: undefined field '${field}'`);
            return;
          }
          node = next;
        }
      }
      visit(kind.value.operand, schema, problems);
      return;
    }
    case "callExpr": {
      const name = kind.value.function;
      if (!/^[_@!]/.test(name) && !knownFunctions.has(name)) problems.push(`kube-emulator: CEL function ${name}() is not implemented in the emulator`);
      // urls.go declares the getters as URL members only, and a URL has no index operator.
      if (urlMethodNames.has(name) && (kind.value.target === undefined || !isUrlCall(kind.value.target))) problems.push(`compilation failed: ERROR: <input>: found no matching overload for '${name}'`);
      if (name === "_[_]" && isUrlCall(kind.value.args[0])) problems.push(`compilation failed: ERROR: <input>: found no matching overload for '_[_]' applied to '(kubernetes.URL, string)'`);
      // A URL's other uses: ==/!= between two URLs (URL.Equal) is the only one the emulator types;
      // the rest (size(), +, string(), a URL in a list, ...) it refuses rather than evaluate a map.
      const urlOperands = [kind.value.target, ...kind.value.args].filter(isUrlCall).length;
      const typedUse = (urlMethodNames.has(name) && urlOperands === 1 && isUrlCall(kind.value.target)) || ((name === "_==_" || name === "_!=_") && urlOperands === 2) || name === "_[_]";
      if (urlOperands > 0 && !typedUse) problems.push(`kube-emulator: url(...) as an operand of ${name} is not type-checked by the emulator`);
      visit(kind.value.target, schema, problems);
      for (const arg of kind.value.args) visit(arg, schema, problems);
      return;
    }
    case "comprehensionExpr":
      if (isUrlCall(kind.value.iterRange)) problems.push("kube-emulator: url(...) as the range of a comprehension is not type-checked by the emulator");
      for (const part of [kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result]) visit(part, schema, problems);
      return;
    case "listExpr":
      if (kind.value.elements.some(isUrlCall)) problems.push("kube-emulator: url(...) in a list literal is not type-checked by the emulator");
      for (const element of kind.value.elements) visit(element, schema, problems);
      return;
    case "structExpr":
      for (const entry of kind.value.entries) {
        if ((entry.keyKind.case === "mapKey" && isUrlCall(entry.keyKind.value)) || isUrlCall(entry.value)) problems.push("kube-emulator: url(...) in a map literal is not type-checked by the emulator");
        if (entry.keyKind.case === "mapKey") visit(entry.keyKind.value, schema, problems);
        visit(entry.value, schema, problems);
      }
      return;
    default:
      return;
  }
}

// `self.a.b` -> ["a", "b"]; undefined when the chain is not rooted at self.
function selfChain(expr: Expr): string[] | undefined {
  const fields: string[] = [];
  let node: Expr | undefined = expr;
  while (node?.exprKind.case === "selectExpr") {
    fields.unshift(node.exprKind.value.field);
    node = node.exprKind.value.operand;
  }
  return node?.exprKind.case === "identExpr" && node.exprKind.value.name === "self" ? fields : undefined;
}

function usesIdent(expr: Expr | undefined, name: string): boolean {
  if (expr === undefined) return false;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "identExpr":
      return kind.value.name === name;
    case "selectExpr":
      return usesIdent(kind.value.operand, name);
    case "callExpr":
      return usesIdent(kind.value.target, name) || kind.value.args.some((a) => usesIdent(a, name));
    case "comprehensionExpr":
      return [kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result].some((p) => usesIdent(p, name));
    case "listExpr":
      return kind.value.elements.some((e) => usesIdent(e, name));
    case "structExpr":
      return kind.value.entries.some((e) => usesIdent(e.value, name) || (e.keyKind.case === "mapKey" && usesIdent(e.keyKind.value, name)));
    default:
      return false;
  }
}

/** Compiles (cached by text); call {@link compileError} first. */
export function compileRule(rule: ValidationRule): CompiledRule {
  let entry = compiled.get(rule.rule);
  if (entry === undefined) {
    const parsed = parse(rule.rule);
    entry = { program: plan(env, parsed), usesOldSelf: usesIdent(parsed.expr, "oldSelf") };
    compiled.set(rule.rule, entry);
  }
  return { source: rule, program: entry.program, usesOldSelf: entry.usesOldSelf };
}

/** JSON -> CEL values by the schema: integer fields are ints, objects maps (schema/cel/values.go). */
export function toCel(value: Json | undefined, schema: StructuralSchema | undefined): CelInput {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") return schema?.type !== "number" && Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map((item) => toCel(item, schema?.items));
  if (typeof value === "object") {
    const out = new Map<string, CelInput>();
    for (const [key, child] of Object.entries(value)) {
      const sub = schema?.properties !== undefined && Object.hasOwn(schema.properties, key) ? schema.properties[key] : typeof schema?.additionalProperties === "object" ? schema.additionalProperties : undefined;
      out.set(key, toCel(child, sub));
    }
    return out;
  }
  return value;
}

/** A resource's root as rules see it: metadata reduced to name and generateName. */
export function rootForRules(object: Json): Json {
  if (typeof object !== "object" || object === null || Array.isArray(object) || typeof object.metadata !== "object" || object.metadata === null || Array.isArray(object.metadata)) return object;
  const meta = object.metadata;
  const visible: { [key: string]: Json } = {};
  for (const key of ["name", "generateName"]) if (meta[key] !== undefined) visible[key] = meta[key] as Json;
  return { ...object, metadata: visible };
}

/** The outcome of one rule on one value: undefined when it holds, else the message to report. */
export function evaluateRule(rule: CompiledRule, self: Json, oldSelf: Json | undefined, schema: StructuralSchema): string | undefined {
  // Transition rules are evaluated only when an old value exists (schema/cel/validation.go).
  if (rule.usesOldSelf && oldSelf === undefined && rule.source.optionalOldSelf !== true) return undefined;
  const result = rule.program({ self: toCel(self, schema), oldSelf: oldSelf === undefined ? null : toCel(oldSelf, schema) });
  if (result === true) return undefined;
  if (result !== false) return `${rule.source.rule}: ${(result as Error)?.message ?? "no such key"}`;
  if (rule.source.messageExpression !== undefined) {
    const message = compileRule({ rule: rule.source.messageExpression }).program({ self: toCel(self, schema), oldSelf: oldSelf === undefined ? null : toCel(oldSelf, schema) });
    if (typeof message === "string" && message.trim() !== "") return message;
  }
  return rule.source.message ?? `failed rule: ${rule.source.rule}`;
}
