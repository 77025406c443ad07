// Pods as Istio deploys them in ambient mode, for discovery and the pipeline: a waypoint's pod as the
// gateway deployment controller renders the `waypoint` template, and an ambient workload's pod.
import type { V1Pod } from "@kubernetes/client-node";

/**
 * A waypoint's pod for Gateway `gateway` (class istio-waypoint). Labels, annotations and ports as
 * istio/istio 86c9f01f manifests/charts/istio-control/istio-discovery/files/waypoint.yaml writes the
 * Deployment's pod template: gateway-name, gateway-class-name, gateway.istio.io/managed =
 * istio.io-mesh-controller (pkg/config/constants/constants.go ManagedGatewayMeshControllerLabel),
 * sidecar injection off, dataplane-mode none; prometheus.io annotations pointing at pilot-agent's
 * 15020; istio-proxy a plain container (`proxy waypoint`) with ports metrics 15020, status-port
 * 15021 and http-envoy-prom 15090. No sidecar.istio.io/status: waypoints are not injected.
 */
export function waypointPod(o: { name: string; namespace: string; gateway: string; node: string; ip: string }): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: o.name,
      namespace: o.namespace,
      labels: {
        "sidecar.istio.io/inject": "false",
        "istio.io/dataplane-mode": "none",
        "service.istio.io/canonical-name": o.gateway,
        "service.istio.io/canonical-revision": "latest",
        "gateway.networking.k8s.io/gateway-name": o.gateway,
        "gateway.networking.k8s.io/gateway-class-name": "istio-waypoint",
        "gateway.istio.io/managed": "istio.io-mesh-controller",
      },
      annotations: { "istio.io/rev": "default", "prometheus.io/path": "/stats/prometheus", "prometheus.io/port": "15020", "prometheus.io/scrape": "true" },
    },
    spec: {
      nodeName: o.node,
      serviceAccountName: o.gateway,
      containers: [{
        name: "istio-proxy",
        image: "docker.io/istio/proxyv2:1.28.0",
        args: ["proxy", "waypoint", "--domain", `${o.namespace}.svc.cluster.local`],
        ports: [{ containerPort: 15020, name: "metrics", protocol: "TCP" }, { containerPort: 15021, name: "status-port", protocol: "TCP" }, { containerPort: 15090, name: "http-envoy-prom", protocol: "TCP" }],
      }],
    },
    status: { phase: "Running", podIP: o.ip, podIPs: [{ ip: o.ip }] },
  };
}

/** An ambient workload's pod: no sidecar, so no Envoy of its own to scrape; istio-cni marks its redirection with ambient.istio.io/redirection (istio/istio 86c9f01f pkg/config/constants/constants.go, annotation.AmbientRedirection). */
export function ambientPod(o: { name: string; namespace: string; node: string; ip: string }): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: o.name, namespace: o.namespace, labels: { app: "vllm" }, annotations: { "ambient.istio.io/redirection": "enabled" } },
    spec: { nodeName: o.node, containers: [{ name: "vllm", image: "vllm/vllm-openai:v0.11.0" }] },
    status: { phase: "Running", podIP: o.ip, podIPs: [{ ip: o.ip }] },
  };
}
