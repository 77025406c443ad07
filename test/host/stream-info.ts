// What Envoy's StreamInfo, route, cluster, connection and local info know about a stream: the facts
// behind the attributes proxy_get_property serves (properties.ts). Tests set them through these
// typed fields only, so a value can exist only where Envoy serves one.
import type { JsonObject } from "./proto.js";

/** An address as Envoy prints it ("10.0.0.1:8080") and its port. */
export interface PeerAddress {
  address: string;
  port: number;
}

/** What Envoy's Ssl::ConnectionInfo answers (the connection.* / upstream.* TLS attributes). */
export interface TlsInfo {
  tlsVersion: string;
  subjectLocalCertificate: string;
  subjectPeerCertificate: string;
  uriSanLocalCertificate?: string;
  uriSanPeerCertificate?: string;
  dnsSanLocalCertificate?: string;
  dnsSanPeerCertificate?: string;
  sha256PeerCertificateDigest?: string;
  /** peerCertificatePresented(): connection.mtls. */
  peerCertificatePresented: boolean;
}

/** envoy.config.core.v3.Locality. */
export interface Locality {
  region?: string;
  zone?: string;
  subZone?: string;
}

/** The upstream host a request went to (StreamInfo::upstreamInfo()). */
export interface UpstreamFacts {
  address: string;
  port: number;
  localAddress?: string;
  locality?: Locality;
  transportFailureReason?: string;
  /** upstreamTiming().connectionPoolCallbackLatency(), ns. */
  poolReadyNs?: bigint;
  tls?: TlsInfo;
  /** The upstream host's endpoint metadata (xds.upstream_host_metadata): filter_metadata by namespace. */
  hostMetadata?: Record<string, JsonObject>;
}

/** An object in the stream's filter state (filter_state.<name>): its serializeAsString() bytes. */
export type FilterStateValue = Uint8Array | string;

/** Per-stream facts a test gives newStream; every field is one Envoy serves. */
export interface StreamProperties {
  /** The matched route's name (xds.route_name); absent: no route matched (NotFound). */
  routeName?: string;
  routeMetadata?: Record<string, JsonObject>;
  virtualHostName?: string;
  virtualHostMetadata?: Record<string, JsonObject>;
  /** The upstream cluster's name (xds.cluster_name). */
  clusterName?: string;
  clusterMetadata?: Record<string, JsonObject>;
  /** request.time, default clock.realtimeNs() when the stream starts. */
  startTimeNs?: bigint;
  /** request.protocol ("HTTP/1.1", "HTTP/2" ...). */
  protocol?: string;
  source?: PeerAddress;
  destination?: PeerAddress;
  /** connection.id and the wasm-only connection_id. */
  connectionId?: bigint;
  requestedServerName?: string;
  downstreamTls?: TlsInfo;
  connectionTerminationDetails?: string;
  downstreamTransportFailureReason?: string;
  upstream?: UpstreamFacts;
  /** upstream.request_attempt_count, default 0 until the router tries. */
  attemptCount?: number;
  filterChainName?: string;
  listenerDirection?: number;
  listenerMetadata?: Record<string, JsonObject>;
  /** The stream's dynamic metadata (metadata.filter_metadata.<namespace>). */
  dynamicMetadata?: Record<string, JsonObject>;
  filterState?: Record<string, FilterStateValue>;
  /** response.flags (Envoy's legacy response flags bit set). */
  responseFlags?: number;
}

/** StreamInfo as the host keeps it for one stream: what a test gave plus what the stream did. */
export interface StreamInfo extends StreamProperties {
  startTimeNs: bigint;
  monoStartNs: bigint;
  /** requestComplete(): set when the stream ends. */
  durationNs?: bigint;
  /** responseCode(): from the upstream's :status (the router) or a local reply. */
  responseCode?: number;
  responseCodeDetails?: string;
  bytesReceived: number;
  bytesSent: number;
  /** Filter state objects (set_property writes CelState objects under "wasm.<path>"). */
  state: Map<string, Uint8Array>;
}

/** The VM's local info and plugin, answered in any context. */
export interface NodeFacts {
  id: string;
  cluster: string;
  metadata?: JsonObject;
  locality?: Locality;
}

const NO_STATE: Map<string, Uint8Array> = new Map();

// One class, one shape: streams are made on every request, and objects spread from the test's
// facts (or with them as prototype) cost microseconds each in V8.
class StreamInfoImpl implements StreamInfo {
  routeName: string | undefined;
  routeMetadata: Record<string, JsonObject> | undefined;
  virtualHostName: string | undefined;
  virtualHostMetadata: Record<string, JsonObject> | undefined;
  clusterName: string | undefined;
  clusterMetadata: Record<string, JsonObject> | undefined;
  startTimeNs: bigint;
  protocol: string | undefined;
  source: PeerAddress | undefined;
  destination: PeerAddress | undefined;
  connectionId: bigint | undefined;
  requestedServerName: string | undefined;
  downstreamTls: TlsInfo | undefined;
  connectionTerminationDetails: string | undefined;
  downstreamTransportFailureReason: string | undefined;
  upstream: UpstreamFacts | undefined;
  attemptCount: number | undefined;
  filterChainName: string | undefined;
  listenerDirection: number | undefined;
  listenerMetadata: Record<string, JsonObject> | undefined;
  dynamicMetadata: Record<string, JsonObject> | undefined;
  filterState: Record<string, FilterStateValue> | undefined;
  responseFlags: number | undefined;
  monoStartNs: bigint;
  durationNs: bigint | undefined = undefined;
  responseCode: number | undefined = undefined;
  responseCodeDetails: string | undefined = undefined;
  bytesReceived = 0;
  bytesSent = 0;
  state: Map<string, Uint8Array> = NO_STATE;

  constructor(p: StreamProperties, startTimeNs: bigint, monoStartNs: bigint) {
    this.routeName = p.routeName;
    this.routeMetadata = p.routeMetadata;
    this.virtualHostName = p.virtualHostName;
    this.virtualHostMetadata = p.virtualHostMetadata;
    this.clusterName = p.clusterName;
    this.clusterMetadata = p.clusterMetadata;
    this.startTimeNs = p.startTimeNs ?? startTimeNs;
    this.protocol = p.protocol;
    this.source = p.source;
    this.destination = p.destination;
    this.connectionId = p.connectionId;
    this.requestedServerName = p.requestedServerName;
    this.downstreamTls = p.downstreamTls;
    this.connectionTerminationDetails = p.connectionTerminationDetails;
    this.downstreamTransportFailureReason = p.downstreamTransportFailureReason;
    this.upstream = p.upstream;
    this.attemptCount = p.attemptCount;
    this.filterChainName = p.filterChainName;
    this.listenerDirection = p.listenerDirection;
    this.listenerMetadata = p.listenerMetadata;
    this.dynamicMetadata = p.dynamicMetadata;
    this.filterState = p.filterState;
    this.responseFlags = p.responseFlags;
    this.monoStartNs = monoStartNs;
    const given = p.filterState;
    if (given !== undefined) {
      this.state = new Map();
      for (const k of Object.keys(given)) {
        const v = given[k]!;
        this.state.set(k, typeof v === "string" ? Buffer.from(v, "utf8") : v);
      }
    }
  }
}

const SERVED = new Set<string>([
  "routeName", "routeMetadata", "virtualHostName", "virtualHostMetadata", "clusterName", "clusterMetadata", "startTimeNs", "protocol",
  "source", "destination", "connectionId", "requestedServerName", "downstreamTls", "connectionTerminationDetails",
  "downstreamTransportFailureReason", "upstream", "attemptCount", "filterChainName", "listenerDirection", "listenerMetadata",
  "dynamicMetadata", "filterState", "responseFlags",
]);

/** A stream's info from the test's facts; a fact Envoy has no attribute for is refused, naming it. */
export function newStreamInfo(props: StreamProperties, startTimeNs: bigint, monoStartNs: bigint): StreamInfo {
  for (const key in props) {
    if (!SERVED.has(key)) throw new RangeError(`StreamProperties.${key}: Envoy serves no attribute from it (the facts are ${[...SERVED].join(", ")})`);
  }
  return new StreamInfoImpl(props, startTimeNs, monoStartNs);
}

/** The stream's filter state, made writable on first write. */
export function writableState(info: StreamInfo): Map<string, Uint8Array> {
  if (info.state === NO_STATE) info.state = new Map();
  return info.state;
}
