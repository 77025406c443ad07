// Reads PromQL with Prometheus's own grammar (@prometheus-io/lezer-promql): which series an
// expression selects, with which label matchers, which labels it groups by, and which labels its
// result carries, so dashboards and alerts can be checked against the series the project produces.
import { parser } from "@prometheus-io/lezer-promql";
import type { SyntaxNode } from "@lezer/common";
import type { SeriesCatalogue } from "./produced-series.js";

/** Grafana's interval variables, replaced by a duration before parsing. */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b/g, "5m");
}

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

function descendants(node: SyntaxNode, name: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const walk = (n: SyntaxNode): void => {
    if (n.name === name) out.push(n);
    for (const c of children(n)) walk(c);
  };
  walk(node);
  return out;
}

/** Problems with one expression: syntax errors, unknown series, labels a series does not carry. */
export function checkExpression(expr: string, catalogue: SeriesCatalogue): { problems: string[]; outputLabels: Set<string>; series: string[] } {
  const text = withoutGrafanaVariables(expr);
  const tree = parser.parse(text);
  const problems: string[] = [];
  const src = (n: SyntaxNode): string => text.slice(n.from, n.to);
  tree.iterate({ enter: (n) => { if (n.type.isError) problems.push(`syntax error at ${n.from}: ${JSON.stringify(text.slice(Math.max(0, n.from - 20), n.to + 20))}`); } });
  const top = tree.topNode;
  const series: string[] = [];

  const labelsOfSelector = (sel: SyntaxNode): Set<string> => {
    const id = children(sel).find((c) => c.name === "Identifier");
    if (!id) {
      problems.push(`selector without a metric name: ${src(sel)}`);
      return new Set();
    }
    const name = src(id);
    series.push(name);
    const labels = catalogue.get(name);
    if (!labels) {
      problems.push(`${name} is not a series the project produces`);
      return new Set();
    }
    for (const ln of descendants(sel, "LabelName")) if (!labels.has(src(ln))) problems.push(`${name} has no label ${src(ln)}`);
    // A copy: a group_left adds labels to its result, and histogram_quantile takes le away.
    return new Set(labels);
  };

  const grouping = (clause: SyntaxNode | undefined): string[] => (clause ? descendants(clause, "LabelName").map(src) : []);

  // Labels of the result of a node.
  const output = (n: SyntaxNode): Set<string> => {
    switch (n.name) {
      case "PromQL":
      case "ParenExpr":
      case "FunctionCallBody": {
        const inner = children(n).filter((c) => !["(", ")", ","].includes(c.name));
        // A function body: the vector argument is the last non-literal one.
        const vector = [...inner].reverse().find((c) => !["NumberDurationLiteral", "StringLiteral"].includes(c.name));
        return vector ? output(vector) : new Set();
      }
      case "VectorSelector":
        return labelsOfSelector(n);
      case "MatrixSelector":
      case "SubqueryExpr":
        return output(children(n)[0]!);
      case "NumberDurationLiteral":
      case "StringLiteral":
        return new Set();
      case "UnaryExpr":
        return output(children(n).at(-1)!);
      case "AggregateExpr": {
        const modifier = children(n).find((c) => c.name === "AggregateModifier");
        const body = children(n).find((c) => c.name === "FunctionCallBody")!;
        const inner = output(body);
        for (const l of grouping(modifier)) if (!inner.has(l)) problems.push(`${src(n).slice(0, 40)}...: groups by ${l}, which none of its series carries`);
        if (!modifier) return new Set();
        const by = grouping(modifier);
        if (children(modifier).some((c) => c.name === "Without")) return new Set([...inner].filter((l) => !by.includes(l)));
        return new Set(by);
      }
      case "FunctionCall": {
        const fn = src(children(n).find((c) => c.name === "FunctionIdentifier")!);
        const body = children(n).find((c) => c.name === "FunctionCallBody")!;
        const inner = output(body);
        if (fn === "histogram_quantile") {
          if (!inner.has("le")) problems.push(`histogram_quantile over a result without le: ${src(n).slice(0, 60)}`);
          inner.delete("le");
        }
        if (fn === "label_replace" || fn === "label_join") problems.push(`${fn} is not checked; avoid it`);
        return inner;
      }
      case "BinaryExpr": {
        const parts = children(n);
        const operands = parts.filter((c) => !["MatchingModifierClause", "BoolModifier"].includes(c.name) && !/^(Add|Sub|Mul|Div|Mod|Pow|Eql|Neq|Gtr|Lss|Gte|Lte|And|Or|Unless|Atan2)$/.test(c.name));
        const [left, right] = [operands[0]!, operands[1]!];
        const l = output(left);
        const r = output(right);
        const clause = parts.find((c) => c.name === "MatchingModifierClause");
        // on (...) labels must be on both sides; group_left (...) / group_right (...) labels are copied from the "one" side.
        const side = clause && children(clause).find((c) => c.name === "GroupLeft" || c.name === "GroupRight");
        const labelLists = clause ? children(clause).filter((c) => c.name === "GroupingLabels") : [];
        const matching = labelLists.find((c) => !side || c.from < side.from);
        const include = side && labelLists.find((c) => c.from > side.from);
        for (const label of grouping(matching)) if (!l.has(label) || !r.has(label)) problems.push(`${src(clause!)}: ${label} is not on both sides`);
        if (side) {
          const [many, one] = side.name === "GroupLeft" ? [l, r] : [r, l];
          for (const label of grouping(include)) {
            if (!one.has(label)) problems.push(`${src(clause!)}: ${label} is not on the one side`);
            many.add(label);
          }
          return many;
        }
        const op = parts.find((c) => /^(Or)$/.test(c.name));
        if (op) return new Set([...l, ...r]);
        // A vector compared with or combined with a scalar keeps the vector's labels.
        return descendants(left, "VectorSelector").length === 0 ? r : l;
      }
      default:
        problems.push(`unhandled PromQL node ${n.name} in ${src(n).slice(0, 60)}`);
        return new Set();
    }
  };
  const outputLabels = output(top);
  return { problems, outputLabels, series };
}
