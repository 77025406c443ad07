// What istiod and Envoy make of the project's WasmPlugin and EnvoyFilter for one sidecar, reduced to
// the decisions that can cost traffic or data: which listeners a WasmPlugin lands on, where its
// HTTP filter sits in the chain, how an EnvoyFilter patch moves a filter, and what an ECDS filter
// slot does with the configuration istio-agent sends it. Read at istio/istio 86c9f01f and
// envoyproxy/envoy (source/common/filter/config_discovery_impl.cc @040783c8,
// source/common/http/filter_chain_helper.h @00282562); each rule names the function it mirrors.

/** Type URLs an ECDS slot may be configured with. */
export const WASM_HTTP_TYPE = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";
export const RBAC_HTTP_TYPE = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC";

/** Listener classes of a sidecar (istio pilot/pkg/networking ListenerClass). */
export type ListenerClass = "SIDECAR_INBOUND" | "SIDECAR_OUTBOUND" | "GATEWAY";

/** A WasmPlugin's traffic selector (istio/api extensions/v1alpha1/wasm.proto TrafficSelector). */
export interface TrafficSelector {
  mode?: "UNDEFINED" | "CLIENT" | "SERVER" | "CLIENT_AND_SERVER";
  ports?: { number: number }[];
}

// pilot/pkg/model/extensions.go workloadModeForListenerClass.
function workloadMode(listener: ListenerClass): "CLIENT" | "SERVER" {
  return listener === "SIDECAR_INBOUND" ? "SERVER" : "CLIENT";
}

/** pilot/pkg/model/extensions.go matchTrafficExtensionSelectors: no match selects every listener. */
export function wasmPluginApplies(match: TrafficSelector[] | undefined, listener: ListenerClass, port: number): boolean {
  if (match === undefined || match.length === 0) return true;
  return match.some((selector) => {
    // matchMode: CLIENT_AND_SERVER and UNDEFINED (the default) select both directions.
    const mode = selector.mode ?? "UNDEFINED";
    const modeOk = mode === "CLIENT_AND_SERVER" || mode === "UNDEFINED" || mode === workloadMode(listener);
    // matchPorts: no ports selects every port.
    const portOk = (selector.ports ?? []).length === 0 || (selector.ports ?? []).some((p) => p.number === port);
    return modeOk && portOk;
  });
}

/** One HTTP filter of a connection manager: a name, and for an ECDS slot the type URLs it accepts. */
export interface HttpFilter {
  name: string;
  typeUrls?: string[];
}

/** A WasmPlugin reduced to what places its filter. */
export interface PlacedPlugin {
  name: string;
  phase: "AUTHN" | "AUTHZ" | "STATS" | "UNSPECIFIED_PHASE";
}

/**
 * The HTTP filters Istio builds for a sidecar's inbound listener (listener_builder.go
 * buildHTTPConnectionManager), with no AuthorizationPolicy or RequestAuthentication in force:
 * metadata exchange, then AUTHN, AUTHZ, STATS and unspecified-phase WasmPlugins in that order,
 * then grpc_stats, fault, cors, the telemetry filter istio.stats, and the router. Each WasmPlugin
 * slot accepts the Wasm and the RBAC type (extension/extensionfilter.go toEnvoyHTTPTrafficExtension).
 */
export function inboundHttpFilters(plugins: PlacedPlugin[]): HttpFilter[] {
  const slot = (p: PlacedPlugin): HttpFilter => ({ name: p.name, typeUrls: [WASM_HTTP_TYPE, RBAC_HTTP_TYPE] });
  const inPhase = (phase: PlacedPlugin["phase"]): HttpFilter[] => plugins.filter((p) => p.phase === phase).map(slot);
  return [
    { name: "istio.metadata_exchange" },
    ...inPhase("AUTHN"),
    ...inPhase("AUTHZ"),
    ...inPhase("STATS"),
    ...inPhase("UNSPECIFIED_PHASE"),
    { name: "envoy.filters.http.grpc_stats" },
    { name: "envoy.filters.http.fault" },
    { name: "envoy.filters.http.cors" },
    { name: "istio.stats" },
    { name: "envoy.filters.http.router" },
  ];
}

/** An EnvoyFilter HTTP_FILTER patch, as the project writes them. */
export interface HttpFilterPatch {
  operation: "ADD" | "INSERT_FIRST" | "INSERT_BEFORE" | "INSERT_AFTER";
  subFilter: string | undefined;
  value: HttpFilter;
}

/** envoyfilter/listener_patch.go patchHTTPFilters (with util.go insertBeforeFunc/insertAfterFunc): the first match wins; no match, no change. */
export function applyHttpFilterPatch(filters: HttpFilter[], patch: HttpFilterPatch): { filters: HttpFilter[]; applied: boolean } {
  const out = [...filters];
  if (patch.operation === "ADD") return { filters: [...out, patch.value], applied: true };
  if (patch.operation === "INSERT_FIRST" || (patch.operation === "INSERT_BEFORE" && patch.subFilter === undefined)) return { filters: [patch.value, ...out], applied: true };
  if (patch.operation === "INSERT_AFTER" && patch.subFilter === undefined) return { filters: [...out, patch.value], applied: true };
  const at = out.findIndex((f) => f.name === patch.subFilter);
  if (at < 0) return { filters: out, applied: false };
  out.splice(patch.operation === "INSERT_BEFORE" ? at : at + 1, 0, patch.value);
  return { filters: out, applied: true };
}

/** What an ECDS slot ends up doing for requests. */
export type SlotOutcome =
  | { kind: "configured"; typeUrl: string }
  | { kind: "missing-config"; status: 500; rejected: string };

/**
 * config_discovery_impl.cc FilterConfigSubscription::onConfigUpdate: a config whose type URL the
 * slot does not list is rejected (validateTypeUrlHelper: "filter config has type URL ... but
 * expect ..."); a slot that never accepted one runs filter_chain_helper.h MissingConfigFilter,
 * which answers every request with a local 500 (response flag NoFilterConfigFound).
 */
export function deliverExtensionConfig(slot: HttpFilter, typeUrl: string): SlotOutcome {
  if ((slot.typeUrls ?? []).includes(typeUrl)) return { kind: "configured", typeUrl };
  return { kind: "missing-config", status: 500, rejected: `Error: filter config has type URL ${typeUrl} but expect ${(slot.typeUrls ?? []).join(", ")}.` };
}

/** A proxy as istiod sees it for policy attachment: a sidecar or an ambient waypoint. */
export interface AttachProxy {
  namespace: string;
  labels: Record<string, string>;
  /** model.Proxy.IsWaypointProxy (node type Waypoint). */
  waypoint: boolean;
  /** Services whose traffic a waypoint listener carries (ListenerInfo.Services): Kubernetes Services or ServiceEntries. */
  services?: { name: string; namespace: string; registry: "Kubernetes" | "External" }[];
}

/** What attachment reads of a WasmPlugin (a TrafficExtension at this commit). */
export interface AttachPlugin {
  namespace: string;
  name: string;
  selector?: { matchLabels?: Record<string, string> };
  targetRefs?: { group?: string; kind: string; name: string; namespace?: string }[];
  match?: TrafficSelector[];
}

/** The label naming the Gateway a workload is an instance of (policyattachment.go workloadGatewayName). */
export const GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name";

// pkg/config/model.go CanonicalGroup: an empty group is "core".
const canonicalGroup = (group: string | undefined): string => (group === undefined || group === "" ? "core" : group);
// policyattachment.go matchesGroupKind.
const matchesGroupKind = (ref: { group?: string; kind: string }, group: string, kind: string): boolean => canonicalGroup(ref.group) === canonicalGroup(group) && ref.kind === kind;

/** pilot/pkg/model/policyattachment.go ShouldAttachPolicy (EnableSelectorBasedK8sGatewayPolicy at its default, true). */
export function shouldAttachPolicy(proxy: AttachProxy, plugin: AttachPlugin, rootNamespace: string): boolean {
  const gatewayName = proxy.labels[GATEWAY_NAME_LABEL];
  const refs = plugin.targetRefs ?? [];
  // isSelected: no selector selects every workload.
  const selected = (): boolean => Object.entries(plugin.selector?.matchLabels ?? {}).every(([k, v]) => proxy.labels[k] === v);
  // Not a Gateway API workload (a sidecar): a policy with targetRefs is ignored altogether.
  if (gatewayName === undefined) return refs.length === 0 && selected();
  // A gateway with no targetRefs falls back to the selector; a waypoint never uses it.
  if (refs.length === 0) return !proxy.waypoint && selected();
  for (const ref of refs) {
    const services = proxy.services ?? [];
    if (proxy.waypoint && matchesGroupKind(ref, "", "Service") && services.some((s) => s.name === ref.name && s.namespace === plugin.namespace && s.registry === "Kubernetes")) return true;
    if (proxy.waypoint && matchesGroupKind(ref, "networking.istio.io", "ServiceEntry") && services.some((s) => s.name === ref.name && s.namespace === plugin.namespace && s.registry === "External")) return true;
    // constants.WaypointGatewayClassName, for a policy in the root namespace only.
    if (plugin.namespace === rootNamespace && proxy.waypoint && matchesGroupKind(ref, "gateway.networking.k8s.io", "GatewayClass") && ref.name === "istio-waypoint") return true;
    if (proxy.namespace !== plugin.namespace) continue;
    if (!(ref.namespace === undefined || ref.namespace === "" || ref.namespace === proxy.namespace)) continue;
    if (matchesGroupKind(ref, "gateway.networking.k8s.io", "Gateway") && ref.name === gatewayName) return true;
  }
  return false;
}

/**
 * The WasmPlugins on a proxy's HTTP listener: push_context.go TrafficExtensionsByListenerInfo looks
 * in the proxy's namespace, the root namespace and its services' namespaces, then
 * extensions.go MatchListener (ShouldAttachPolicy, then the traffic selectors). A waypoint's
 * listener is class SidecarInbound with no port (listener_waypoint.go buildWaypointHTTPFilters).
 */
export function pluginsOnHttpListener(proxy: AttachProxy, plugins: AttachPlugin[], rootNamespace: string, port: number): string[] {
  const namespaces = new Set([proxy.namespace, rootNamespace, ...(proxy.services ?? []).map((s) => s.namespace)]);
  const listenerPort = proxy.waypoint ? 0 : port;
  return plugins
    .filter((p) => namespaces.has(p.namespace) && shouldAttachPolicy(proxy, p, rootNamespace) && wasmPluginApplies(p.match, "SIDECAR_INBOUND", listenerPort))
    .map((p) => `${p.namespace}/${p.name}`);
}
