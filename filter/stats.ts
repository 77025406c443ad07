// Stats defined once per VM: ids are cached by route so that the request path costs one map
// lookup, and distinct route labels are capped (Envoy never frees a stat: REFERENCE section 2).
import { equalBuffers } from "./bytes";
import * as host from "./host";
import {
  CODE_CLASS_COUNT, codeClassName, ErrorReason, errorReasonName, FILTER_ERRORS_TOTAL, REQUEST_DURATION_MS,
  REQUESTS_TOTAL, ROUTE_DEFAULT, ROUTE_OTHER, sanitizeLabelValue, tagSegment, TAG_REASON, TAG_RESPONSE_CODE_CLASS, TAG_ROUTE, TRACES_SAMPLED_TOTAL,
  TRACES_STARTED_TOTAL,
} from "./metrics";

/** The stat ids of one route label value. */
export class RouteStats {
  label: string;
  private prefix: string;
  private requests: StaticArray<u32> = new StaticArray<u32>(CODE_CLASS_COUNT);
  durationMs: u32;
  tracesStarted: u32;
  tracesSampled: u32;

  constructor(label: string) {
    this.label = label;
    this.prefix = tagSegment(TAG_ROUTE, label);
    for (let i = 0; i < CODE_CLASS_COUNT; i++) this.requests[i] = host.NO_METRIC;
    this.durationMs = host.defineMetric(host.MetricKind.Histogram, this.prefix + REQUEST_DURATION_MS);
    this.tracesStarted = host.defineMetric(host.MetricKind.Counter, this.prefix + TRACES_STARTED_TOTAL);
    this.tracesSampled = host.defineMetric(host.MetricKind.Counter, this.prefix + TRACES_SAMPLED_TOTAL);
  }

  /** The request counter of one response code class, defined on first use. */
  requestsFor(codeClass: i32): u32 {
    let id = this.requests[codeClass];
    if (id == host.NO_METRIC) {
      id = host.defineMetric(
        host.MetricKind.Counter,
        this.prefix + tagSegment(TAG_RESPONSE_CODE_CLASS, codeClassName(codeClass)) + REQUESTS_TOTAL,
      );
      this.requests[codeClass] = id;
    }
    return id;
  }
}

export class Stats {
  private routes: Map<string, RouteStats> = new Map();
  private other: RouteStats | null = null;
  private errors: StaticArray<u32> = new StaticArray<u32>(ErrorReason.COUNT);
  maxRoutes: i32;

  constructor(maxRoutes: i32) {
    this.maxRoutes = maxRoutes;
    for (let i = 0; i < ErrorReason.COUNT; i++) {
      this.errors[i] = host.defineMetric(
        host.MetricKind.Counter,
        tagSegment(TAG_REASON, errorReasonName(<ErrorReason>i)) + FILTER_ERRORS_TOTAL,
      );
    }
  }

  // Most requests on a VM hit the same route as the one before: compare raw bytes, skip the decode.
  private lastRouteName: ArrayBuffer = new ArrayBuffer(0);
  private lastRoute: RouteStats | null = null;

  /** The stats of a route given its raw xds.route_name (null or empty: "default"). */
  forRouteName(raw: ArrayBuffer | null): RouteStats {
    const name = raw === null ? new ArrayBuffer(0) : raw;
    const last = this.lastRoute;
    if (last !== null && equalBuffers(name, this.lastRouteName)) return last;
    const stats = this.forRoute(name.byteLength == 0 ? ROUTE_DEFAULT : sanitizeLabelValue(String.UTF8.decode(name)));
    // Overflowed routes count an error per request, so they are not cached.
    if (stats.label != ROUTE_OTHER) {
      this.lastRouteName = name;
      this.lastRoute = stats;
    }
    return stats;
  }

  /** The stats of a sanitised route label; past the cap, the shared "other" route. */
  forRoute(label: string): RouteStats {
    if (this.routes.has(label)) return this.routes.get(label);
    if (this.routes.size >= this.maxRoutes) {
      this.error(ErrorReason.RouteOverflow);
      let other = this.other;
      if (other === null) {
        other = new RouteStats(ROUTE_OTHER);
        this.other = other;
      }
      return other;
    }
    const stats = new RouteStats(label);
    this.routes.set(label, stats);
    return stats;
  }

  error(reason: ErrorReason): void {
    host.incrementCounter(this.errors[reason], 1);
  }

  /** Reports host calls that failed since the last report. */
  flushHostFailures(): void {
    const n = host.takeFailedHostCalls();
    if (n > 0) host.incrementCounter(this.errors[ErrorReason.HostCallFailed], n);
  }
}
