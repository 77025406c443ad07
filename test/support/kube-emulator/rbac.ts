// RBAC authorization for the emulated apiserver: a request made with a known bearer token is
// allowed only when a Role or ClusterRole bound to its user grants it, as kube-apiserver's RBAC
// authorizer decides (kubernetes/kubernetes 05c351a9 pkg/registry/rbac/validation/rule.go
// VisitRulesFor and appliesToUser; 03bf11a3 pkg/apis/rbac/v1/evaluation_helpers.go RuleAllows'
// matchers). Requests without a token are the test's own (cluster-admin) and are not checked.

/** One rule of a Role or ClusterRole. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

/** What a request asks for (apiserver's request attributes). */
export interface RequestAttributes {
  user: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  /** "" for cluster-scoped requests. */
  namespace: string;
  /** "" for collections. */
  name: string;
}

interface RbacObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  rules?: PolicyRule[];
  roleRef?: { kind?: string; name?: string };
  subjects?: { kind?: string; name?: string; namespace?: string }[];
}

/**
 * The verb of a request, as RequestInfoFactory.NewRequestInfo (kubernetes/apiserver 24a394e5,
 * pkg/endpoints/request/requestinfo.go) derives it: GET/HEAD of a name is get (?watch does not
 * change it), of a collection watch or list; DELETE of a collection is deletecollection; other
 * methods have no verb.
 */
export function verbOf(method: string, named: boolean, watch: boolean): string {
  if (method === "GET" || method === "HEAD") return named ? "get" : watch ? "watch" : "list";
  if (method === "POST") return "create";
  if (method === "PUT") return "update";
  if (method === "PATCH") return "patch";
  if (method === "DELETE") return named ? "delete" : "deletecollection";
  return "";
}

const matches = (list: readonly string[] | undefined, wanted: string): boolean => (list ?? []).some((x) => x === "*" || x === wanted);

// evaluation_helpers.go ResourceMatches: "*", the exact resource/subresource, or "*/subresource".
function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  return (rule.resources ?? []).some((r) => r === "*" || r === combined || (subresource !== "" && r === `*/${subresource}`));
}

function ruleAllows(rule: PolicyRule, a: RequestAttributes): boolean {
  const combined = a.subresource === "" ? a.resource : `${a.resource}/${a.subresource}`;
  // ResourceNameMatches: an empty list is every name; a list never matches a collection request.
  const names = rule.resourceNames ?? [];
  return matches(rule.verbs, a.verb) && matches(rule.apiGroups, a.apiGroup) && resourceMatches(rule, combined, a.subresource) && (names.length === 0 || names.includes(a.name));
}

// rule.go appliesToUser: a ServiceAccount subject is the user system:serviceaccount:<ns>:<name>,
// its namespace defaulting to the binding's.
function subjectIs(subject: NonNullable<RbacObject["subjects"]>[number], user: string, bindingNamespace: string): boolean {
  if (subject.kind === "User") return subject.name === user;
  if (subject.kind !== "ServiceAccount") return false;
  const ns = subject.namespace || bindingNamespace;
  return ns !== "" && user === `system:serviceaccount:${ns}:${subject.name ?? ""}`;
}

/** Decides requests from RBAC objects (Roles, ClusterRoles and their bindings, as applied). */
export class RbacAuthorizer {
  constructor(private readonly objects: readonly RbacObject[]) {}

  private rulesOf(ref: RbacObject["roleRef"], bindingNamespace: string): PolicyRule[] {
    const role = this.objects.find((o) => o.kind === ref?.kind && o.metadata?.name === ref?.name && (ref?.kind === "ClusterRole" || o.metadata?.namespace === bindingNamespace));
    return role?.rules ?? [];
  }

  /** VisitRulesFor: ClusterRoleBindings everywhere, then the RoleBindings of the request's namespace. */
  allows(a: RequestAttributes): boolean {
    for (const b of this.objects) {
      const ns = b.metadata?.namespace ?? "";
      const applies = b.kind === "ClusterRoleBinding" ? true : b.kind === "RoleBinding" ? a.namespace !== "" && ns === a.namespace : false;
      if (!applies || !(b.subjects ?? []).some((s) => subjectIs(s, a.user, b.kind === "RoleBinding" ? ns : ""))) continue;
      if (this.rulesOf(b.roleRef, ns).some((rule) => ruleAllows(rule, a))) return true;
    }
    return false;
  }
}

/** The Forbidden status message: apimachinery errors.NewForbidden around responsewriters.forbiddenMessage (apiserver 24a394e5). */
export function forbiddenMessage(a: RequestAttributes): string {
  const resource = a.apiGroup === "" ? a.resource : `${a.resource}.${a.apiGroup}`;
  const what = a.name === "" ? resource : `${resource} "${a.name}"`;
  const sub = a.subresource === "" ? "" : `/${a.subresource}`;
  const scope = a.namespace === "" ? "at the cluster scope" : `in the namespace "${a.namespace}"`;
  return `${what} is forbidden: User "${a.user}" cannot ${a.verb} resource "${a.resource}${sub}" in API group "${a.apiGroup}" ${scope}`;
}
