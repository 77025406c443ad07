// Pull mode: the root context polls the control plane for this workload's policy
// (GET /v1/filters/{workload}/config?version=<last>) and hands a validated configuration back to
// be swapped in atomically. Anything else (an error status, a timeout, an invalid policy) keeps
// the last good configuration and is counted.
import { PolicySourceConfig, parsePulledConfig, Config } from "./config";
import * as host from "../host/host";
import { JsonKind, JsonParser } from "./json";
import { ACCEPT, AUTHORITY, GET, JSON_TYPE, METHOD, PATH, STATUS } from "../host/names";

const NS_PER_MS: u64 = 1_000_000;

/** Outcome of one poll response. */
export const enum PollOutcome { NotOurs, Unchanged, Updated, Failed }

/** Percent-encodes what an opaque version string may contain, so it can travel in a query. */
function queryEscape(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e) {
      out += String.fromCharCode(c);
    } else {
      // (ASCII only is expected; a wider unit is cut to its low byte, which the server then rejects)
      out += "%" + "0123456789ABCDEF".charAt((c >> 4) & 0xf) + "0123456789ABCDEF".charAt(c & 0xf);
    }
  }
  return out;
}

export class PolicyPoller {
  private inFlightToken: i64 = -1;
  private nextPollNs: u64 = 0;
  /** The version of the policy in force ("" before the first one). */
  version: string = "";
  /** The pulled configuration of the last Updated outcome. */
  pulled: Config | null = null;
  /** Why the last poll failed, for the log. */
  failure: string = "";

  /** A new local policy source: poll at the next tick, and start over. */
  reset(): void {
    this.nextPollNs = 0;
    this.version = "";
  }

  /** Sends a poll when one is due and none is in flight. */
  maybePoll(source: PolicySourceConfig): void {
    if (this.inFlightToken >= 0) return;
    const now = host.nowNs();
    if (now < this.nextPollNs) return;
    this.nextPollNs = now + <u64>source.intervalMs * NS_PER_MS;
    let path = "/v1/filters/" + source.workload + "/config";
    let sep = "?";
    if (this.version.length > 0) {
      path += "?version=" + queryEscape(this.version);
      sep = "&";
    }
    if (source.labels.length > 0) path += sep + "labels=" + source.labels;
    const headers = host.encodePairs([METHOD, PATH, AUTHORITY, ACCEPT], [GET, String.UTF8.encode(path), source.authority, JSON_TYPE]);
    const token = host.httpCall(source.cluster, headers, new ArrayBuffer(0), <u32>source.timeoutMs);
    if (token >= 0) this.inFlightToken = token;
    else this.failure = "the host refused the poll (no such cluster?)";
  }

  /** Handles an HTTP call response; Updated leaves the new configuration in `pulled`. */
  onResponse(token: u32, headerCount: u32, bodySize: u32): PollOutcome {
    if (<i64>token != this.inFlightToken) return PollOutcome.NotOurs;
    this.inFlightToken = -1;
    const status = host.HTTP_CALL_STATUS;
    const code = headerCount != 0 && host.readHttpCallResponseHeader(STATUS, status) ? String.UTF8.decodeUnsafe(status.ptr, status.length) : "";
    if (code == "304") return PollOutcome.Unchanged;
    if (code != "200") return this.fail("the control plane answered " + (code.length > 0 ? code : "nothing (timeout or reset)"));
    const body = host.getHttpCallResponseBody(bodySize);
    if (body === null) return this.fail("could not read the response body");
    const parser = new JsonParser(String.UTF8.decode(body));
    const doc = parser.parse();
    if (doc === null || doc.kind != JsonKind.Object) return this.fail("the response is not a JSON object");
    const version = doc.get("version");
    const config = doc.get("config");
    if (version === null || version.kind != JsonKind.String || config === null) return this.fail("the response lacks version or config");
    const result = parsePulledConfig(config);
    const pulled = result.config;
    if (pulled === null) return this.fail("policy " + version.str + " rejected: " + result.error);
    this.pulled = pulled;
    this.version = version.str;
    return PollOutcome.Updated;
  }

  private fail(reason: string): PollOutcome {
    this.failure = reason;
    return PollOutcome.Failed;
  }
}
