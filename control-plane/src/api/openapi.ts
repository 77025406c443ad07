// The OpenAPI 3.1 description served at /openapi.json, and the one list of what the API serves:
// the method guard (method-guard.ts) answers 405 and OPTIONS from its paths, and tests check that
// the app routes exactly these operations and that every status a real response carries is
// listed for its operation. Schemas come from the objects the server validates with (policy
// schema, filter pluginConfig schema), so they cannot drift.
import { readFileSync } from "node:fs";
import { filterSchemaUrl, policySchema } from "../policy/validate.js";

const filterSchema = JSON.parse(readFileSync(filterSchemaUrl, "utf8")) as Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: object) => ({ "application/json": { schema } });
const errorResponse = (description: string) => ({ description, content: jsonContent(ref("Error")) });

const nameParam = { name: "name", in: "path", required: true, schema: { type: "string" } };
const ifMatch = {
  name: "If-Match",
  in: "header",
  required: false,
  schema: { type: "string" },
  description: '"*" or a list of quoted versions (strong comparison: W/"..." never matches); 412 unless the current version is listed ("*": unless the policy exists).',
};
const ifNoneMatchWrite = {
  name: "If-None-Match",
  in: "header",
  required: false,
  schema: { type: "string" },
  description: '"*" (create only when absent) or a list of quoted versions; 412 when the policy exists ("*") or is at a listed version.',
};
const ifNoneMatchRead = { name: "If-None-Match", in: "header", required: false, schema: { type: "string" }, description: "Quoted versions (weak comparison) or \"*\"; 304 when the current one is listed. Ignored when malformed." };
const etagHeader = { ETag: { schema: { type: "string" }, description: "Quoted version (strong)." } };

/** Reads are public unless api.reads is "token". */
const readSecurity = [{}, { bearer: [] }];
const writeSecurity = [{ bearer: [] }];
/** Scope admin: key material. */
const adminSecurity = [{ bearer: [] }];

/** The dashboard endpoints' time range (dashboard/query.ts RANGES_SECONDS). */
const rangeParameter = { name: "range", in: "query", required: false, schema: { enum: ["300", "900", "1800", "3600"] }, description: "Seconds back from now; default 900." };
/** The dashboard endpoints' choice of one route (dashboard/query.ts routeOf). */
const routeParameters = [
  { name: "route", in: "query", required: false, schema: { type: "string" }, description: "Route name; default the first route with data." },
  { name: "namespace", in: "query", required: false, schema: { type: "string" }, description: "Namespace of the route; default the first with that route." },
];

const status = {
  badPath: "Malformed percent-encoding in the path.",
  readToken: 'api.reads is "token" and no known bearer token was sent.',
  writeToken: "Missing or unknown bearer token.",
  writeScope: "The token's scope (api.scopes) is read; policy writes need write or admin.",
  tooLarge: "Body larger than api.bodyLimitBytes.",
  mediaType: "Not application/json (PATCH: or application/merge-patch+json), a charset other than utf-8, or a Content-Encoding other than identity.",
  unavailable: "The store cannot write now (disk failure, cluster unreachable); nothing changed. Retry-After says when to retry.",
};

const bodyErrors = {
  "413": errorResponse(status.tooLarge),
  "415": errorResponse(status.mediaType),
};

function policyComponent(): Record<string, unknown> {
  const schema = structuredClone(policySchema) as unknown as Record<string, unknown>;
  delete schema.$id;
  (schema.properties as Record<string, unknown>).pluginConfig = ref("FilterConfig");
  return schema;
}

function filterComponent(): Record<string, unknown> {
  const schema = structuredClone(filterSchema);
  delete schema.$id;
  delete schema.$schema;
  return schema;
}

const paths = {
  "/v1/policies": {
    get: {
      operationId: "listPolicies",
      summary: "List policies",
      security: readSecurity,
      responses: { "200": { description: "All policies by name.", content: jsonContent({ type: "object", properties: { items: { type: "array", items: ref("PolicyRecord") } } }) }, "401": errorResponse(status.readToken) },
    },
    post: {
      operationId: "createPolicy",
      summary: "Create a policy",
      description: "Conditional headers are refused (400): use PUT with If-None-Match: * for a create-only-if-absent.",
      security: writeSecurity,
      requestBody: { required: true, content: jsonContent(ref("PolicyWrite")) },
      responses: {
        "201": { description: "Created.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "400": errorResponse("Invalid body (strict JSON: duplicate keys refused), a version in the body, or a conditional header; nothing changed."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        "409": errorResponse("A policy with this name exists."),
        ...bodyErrors,
        "503": errorResponse(status.unavailable),
      },
    },
  },
  "/v1/policies/{name}": {
    parameters: [nameParam],
    get: {
      operationId: "getPolicy",
      summary: "Get a policy",
      security: readSecurity,
      parameters: [ifNoneMatchRead],
      responses: {
        "200": { description: "The policy; PUT accepts this document back.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "304": { description: "If-None-Match names the current version.", headers: etagHeader },
        "400": errorResponse(status.badPath),
        "401": errorResponse(status.readToken),
        "404": errorResponse("No such policy."),
      },
    },
    put: {
      operationId: "replacePolicy",
      summary: "Create or replace a policy",
      description: "The body is a policy, or the record GET returned (its version is then a precondition, 409 when stale; updatedAt and updatedBy are ignored). A body equal to the stored policy changes nothing: 200 with the current ETag, no new version.",
      security: writeSecurity,
      parameters: [ifMatch, ifNoneMatchWrite],
      requestBody: { required: true, content: jsonContent(ref("PolicyWrite")) },
      responses: {
        "200": { description: "Replaced, or unchanged.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "201": { description: "Created.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "400": errorResponse("Invalid body or header; nothing changed."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        "409": errorResponse("The body's version is not the current one (or the policy no longer exists)."),
        "412": errorResponse("If-Match or If-None-Match does not hold."),
        ...bodyErrors,
        "503": errorResponse(status.unavailable),
      },
    },
    patch: {
      operationId: "patchPolicy",
      summary: "Merge-patch a policy (RFC 7396)",
      description: "The patch applies to the policy (the `policy` member of what GET returns). A patch that changes nothing creates no version.",
      security: writeSecurity,
      parameters: [ifMatch, ifNoneMatchWrite],
      requestBody: { required: true, content: { "application/merge-patch+json": { schema: { type: "object" } }, "application/json": { schema: { type: "object" } } } },
      responses: {
        "200": { description: "Patched, or unchanged.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "400": errorResponse("Invalid patch, patched policy or header; nothing changed."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        "404": errorResponse("No such policy."),
        "412": errorResponse("If-Match or If-None-Match does not hold."),
        ...bodyErrors,
        "503": errorResponse(status.unavailable),
      },
    },
    delete: {
      operationId: "deletePolicy",
      summary: "Delete a policy (its history is kept)",
      security: writeSecurity,
      parameters: [ifMatch, ifNoneMatchWrite],
      responses: {
        "204": { description: "Deleted." },
        "400": errorResponse("Malformed percent-encoding in the path, or a malformed If-Match / If-None-Match."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        "404": errorResponse("No such policy."),
        "412": errorResponse("If-Match or If-None-Match does not hold."),
        "503": errorResponse(status.unavailable),
      },
    },
  },
  "/v1/policies/{name}/history": {
    parameters: [nameParam],
    get: {
      operationId: "policyHistory",
      summary: "History of a policy, oldest first (each entry is also its audit record)",
      security: readSecurity,
      responses: {
        "200": { description: "History.", content: jsonContent({ type: "object", properties: { items: { type: "array", items: ref("HistoryEntry") } } }) },
        "400": errorResponse(status.badPath),
        "401": errorResponse(status.readToken),
        "404": errorResponse("Name never used."),
      },
    },
  },
  "/v1/policies/{name}/rollback": {
    parameters: [nameParam],
    post: {
      operationId: "rollbackPolicy",
      summary: "Make an earlier version current again (as a new version; none when it already is)",
      security: writeSecurity,
      parameters: [ifMatch, ifNoneMatchWrite],
      requestBody: { required: true, content: jsonContent({ type: "object", additionalProperties: false, required: ["version"], properties: { version: { type: "string" } } }) },
      responses: {
        "200": { description: "Rolled back, or already current.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) },
        "400": errorResponse("Invalid body or header, or that version is not valid under today's rules; nothing changed."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        "404": errorResponse("No such policy or version."),
        "412": errorResponse("If-Match or If-None-Match does not hold."),
        ...bodyErrors,
        "503": errorResponse(status.unavailable),
      },
    },
  },
  "/v1/validate": {
    post: {
      operationId: "validatePolicy",
      summary: "Validate a policy without storing it (dry run)",
      security: writeSecurity,
      requestBody: { required: true, content: jsonContent(ref("PolicyWrite")) },
      responses: {
        "200": { description: "Valid.", content: jsonContent({ type: "object", required: ["valid"], properties: { valid: { const: true }, policy: ref("Policy") } }) },
        "400": errorResponse("Invalid body; the details are what a write would answer."),
        "401": errorResponse(status.writeToken),
        "403": errorResponse(status.writeScope),
        ...bodyErrors,
      },
    },
  },
  "/v1/content-keys": {
    get: {
      operationId: "contentKeys",
      summary: "The pseudonym keys' state: configured, the version in force, the versions read, the last problem. Never a key: the keys reach only the filters, on the filter-facing listener.",
      security: adminSecurity,
      responses: {
        "200": { description: "State of content.keysDir.", content: jsonContent({ type: "object", required: ["configured", "current", "versions", "problem"], properties: { configured: { type: "boolean" }, current: { type: ["string", "null"] }, versions: { type: "array", items: { type: "string" } }, problem: { type: ["string", "null"] } } }) },
        "401": errorResponse(status.writeToken),
        "403": errorResponse("The token's scope (api.scopes) is below admin."),
      },
    },
  },
  "/v1/filters/{workload}/config": {
    parameters: [{ name: "workload", in: "path", required: true, schema: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?\\..+$" }, description: "<namespace>.<name>" }],
    get: {
      operationId: "filterConfig",
      summary: "Effective config for a pulling filter",
      description: "Picks the policy whose target namespace is the workload's and whose selector.matchLabels are all in `labels` (default app=<name>); most labels wins, ties by name. Policies with targetRefs are for Kubernetes mode and never match here.",
      security: readSecurity,
      parameters: [
        { name: "version", in: "query", required: false, schema: { type: "string" }, description: "The version the filter has; 304 when current." },
        { name: "labels", in: "query", required: false, schema: { type: "string" }, description: "k=v pairs separated by commas." },
        ifNoneMatchRead,
      ],
      responses: {
        "200": { description: "Current config.", headers: etagHeader, content: jsonContent(ref("FilterConfigResponse")) },
        "304": { description: "The filter's version is current.", headers: etagHeader },
        "400": errorResponse("Malformed workload or query."),
        "401": errorResponse(status.readToken),
        "404": errorResponse("No policy selects the workload."),
      },
    },
  },
  "/v1/dashboard/series": {
    get: {
      operationId: "dashboardSeries",
      summary: "The dashboard's golden signals for one route (the page at /dashboard draws them)",
      description:
        "Columns for uPlot from the metrics pipeline's joined scrapes, one point per step over the range: t (s); requestsPerSecond, llmRequestsPerSecond; ratio4xx, ratio5xx, ratioReset (shares of all requests); inputTokensPerSecond, outputTokensPerSecond; ttft, decode and duration at P50/P95/P99 (ms, histogram_quantile over windowSeconds); gpuUtilizationPercent (mean over the route's pods), gpuPowerWatts (sum); sampledPerSecond (over samplingWindowSeconds); adaptiveTargetTracesPerSecond (null unless the policy in force had one). Null where nothing was observed. lengthClasses, over the whole range (null without a route): ttft by the filter's input_length, decode and duration by output_length, each a list of { lengthClass, calls, p50, p99 (ms) } sorted by boundary (le512 < le2048 < le8192 < gt8192, unknown last), empty when the route's filters label no class.",
      security: readSecurity,
      parameters: [
        ...routeParameters,
        { name: "model", in: "query", required: false, schema: { type: "string" }, description: "One model's LLM figures; default all models." },
        rangeParameter,
      ],
      responses: { "200": { description: "Routes with data and the chosen route's columns.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken), "404": errorResponse("No data for this route.") },
    },
  },
  "/v1/dashboard/models": {
    get: {
      operationId: "dashboardModels",
      summary: "The engine SLO signals per model (one dashboard panel each), from the metrics pipeline's model-server scrapes",
      description:
        "Per model (namespace, model): columns for uPlot, one point per step over the range: t (s); gpuUtilization (ratio of the pods' GPUs busy, tokentrace_model_gpu_utilization_percent / 100), prefixCacheHitRatio, specDecodeAcceptance; each the mean over the model's pods of their newest value within lookbackSeconds, rounded to 4 decimals, null where none. thresholds: the SLO alerts' thresholds (gpuUtilization 0.85, prefixCacheHitRatio 0.92, specDecodeAcceptance 0.8). adapters: the LoRA adapters whose base model it is, now (each pod's newest state within lookbackSeconds): adapter; runningPods and waitingPods, the pods where it has running (waiting) requests; pods, every pod reporting it (vLLM exports which adapters have requests, not how many); and, from the sidecars of those pods over the last adapterWindowSeconds (300, as the tokentrace.lora-adapters recording rules), requestsPerSecond, inputTokensPerSecond, outputTokensPerSecond, ttftP99Ms and durationP99Ms of the calls whose model is the adapter (null where those sidecars reported none).",
      security: readSecurity,
      parameters: [
        { name: "namespace", in: "query", required: false, schema: { type: "string" }, description: "Only this namespace's models; default every namespace." },
        rangeParameter,
      ],
      responses: { "200": { description: "Models with data and their columns.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/gpus": {
    get: {
      operationId: "dashboardGpus",
      summary: "The GPU health panels per pod (utilisation beside SM, tensor and DRAM activity, busy but starved, stragglers, throttling, temperature), from the metrics pipeline's joined scrapes",
      description:
        "Per pod (namespace, pod) with GPUs: gpuCount; smSource (sm_active or gr_engine_active: which DCGM field SM activity comes from); basis (sm_active or tensor_dram: what activity per busy second is measured on); problems (its GPUs' current XIDs and memory errors, as text); columns for uPlot, one point per step over the range: t (s); utilization, smActive, tensorActive, dramActive, smOccupancy, activityWhileBusy (ratios; the least active GPU for activityWhileBusy, means over the pod's GPUs otherwise), utilizationSpreadPercent, memorySpreadRatio, thermalThrottled, powerThrottled (1 while any GPU of the pod throttles for that cause), temperatureC (the hottest GPU); each the pod's newest value within lookbackSeconds, null where none. thresholds: the GPU alerts' (istio/observability/gpu-health-rules.yaml); needs: what each panel needs dcgm-exporter to export; exporterNotes: the dcgm-exporters (url) that label pods other than their default way (spelling old_namespace: --use-old-namespace; honor_labels_renamed: exported_pod and exported_namespace from a Prometheus scrape with honor_labels false), each with the message that names what to change, at most 32.",
      security: readSecurity,
      parameters: [
        { name: "namespace", in: "query", required: false, schema: { type: "string" }, description: "Only this namespace's pods; default every namespace." },
        rangeParameter,
      ],
      responses: { "200": { description: "Pods with GPU data and their columns.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/engine-causes": {
    get: {
      operationId: "dashboardEngineCauses",
      summary: "The cause panels per model (why it is slow): waiting and running requests, KV-cache usage, preemptions, prefix-cache hits, speculative acceptance, TPOT percentiles and the engine's P99 split into queue, prefill and decode beside the sidecars' TTFT P99; prefix-cache hits per tier and the external KV-connector cache; waiting requests by reason, prompt tokens computed and preemptions per finished request",
      description:
        "Per model (namespace, model) its model servers report, from the metrics pipeline's joined scrapes (tokentrace_model_*): pods; tpotSource (request_tpot: vLLM's per-request time per output token; inter_token: its inter-token latency where the server exports no per-request TPOT; null: neither); columns for uPlot, one point per step over the range, latencies (…Ms) rounded to 0.1 ms and the rest to 3 decimals: t (s); requestsWaiting, requestsRunning, preemptionsPerSecond (summed over pods); kvCacheUsage, prefixCacheHitRatio, specDecodeAcceptance (ratios, mean over pods); tpotP50Ms, tpotP95Ms, tpotP99Ms, queueP99Ms, prefillP99Ms, decodeP99Ms (ms, the worst pod's); externalPrefixCacheHitRatio (vLLM's KV-connector cache: tokens hit over tokens queried), promptTokensComputedPerRequest (to 0.1 token) and preemptionsPerRequest (means per finished request over the rate window; all three mean over pods); each pod's newest value within lookbackSeconds, null where none; sidecarTtftP99Ms (the sidecar filters' TTFT P99 of that model over every route of its namespace, histogram over lookbackSeconds). waitingByReason: [{reason, values}] (vLLM's waiting requests by reason, capacity or deferred, summed over pods) and prefixCacheHitsByTier: [{tier, values}] (SGLang's cached prompt tokens from each cache_source, device, host or storage_<backend>, over all its prompt tokens, mean over pods), values on the steps of t, sorted by reason and tier, only those with a value in the range; at most 4 of each per model, each at most 32 characters of A-Z, a-z, 0-9, _, . and - (others are not kept). needs: what each panel needs the model server to export (queue, kvCache, cacheHits, tpot, phases, cacheTiers, waitReasons).",
      security: readSecurity,
      parameters: [
        { name: "namespace", in: "query", required: false, schema: { type: "string" }, description: "Only this namespace's models; default every namespace." },
        rangeParameter,
      ],
      responses: { "200": { description: "Models with engine data and their cause columns.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/keep": {
    get: {
      operationId: "dashboardKeep",
      summary: "Why one route's spans were kept (head, forced, slow, error) and what the span budget dropped, as rates, beside the tail-keep thresholds in force for the route and each model",
      description:
        "From the metrics pipeline's joined scrapes of tokentrace_spans_kept_total and tokentrace_spans_budget_dropped_total (by keep_reason): columns for uPlot, one point per step over the range: t (s); keptHeadPerSecond, keptForcedPerSecond, keptSlowPerSecond, keptErrorPerSecond, budgetDroppedPerSecond (every reason), each a rate over windowSeconds summed per pod then added across pods, null where nothing was observed. thresholds (null when no policy targets the namespace): policy; tailKeep (spans.keep set); errors; budgetTracesPerSecond; live, the route's entries of spans.keep.live in the config the filters are served (model null: the route's entry for every model; durationMs, ttftMs); liveFrom (the policy's own, this replica as leader, or the leader's read from the policy's status); staticMs and staticFrom (the threshold where no live entry applies: a route rule or slowerThanMs); settings (quantile, margin, floorMs, ceilingMs, intervalSeconds, windowSeconds of adaptive.liveThresholds; null when the control plane computes none for this policy).",
      security: readSecurity,
      parameters: [
        ...routeParameters,
        rangeParameter,
      ],
      responses: { "200": { description: "The route's keep rates and thresholds.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken), "404": errorResponse("No data for this route.") },
    },
  },
  "/v1/dashboard/errors": {
    get: {
      operationId: "dashboardErrors",
      summary: "Errors by model: per route and model, the failed share of LLM calls and failures per second by error_type over the range, from the metrics pipeline's joined scrapes of tokentrace_llm_requests_total",
      description:
        "rows, most failures per second first, at most 100 (truncated counts the rest): namespace, route, model; calls and failed (LLM calls, and those with an error_type, counted in the intervals that ended within the range); failedShare (failed / calls, 4 decimals; null without calls); callsPerSecond and failuresPerSecond (summed per pod then added across pods, 3 decimals); errorTypes (errorType, failed, perSecond; most first; at most 8 types per route and model and _OTHER, as the filter labels them). Without route: every route with data (of namespace, when given).",
      security: readSecurity,
      parameters: [
        { name: "route", in: "query", required: false, schema: { type: "string" }, description: "Only this route; default every route with data." },
        { name: "namespace", in: "query", required: false, schema: { type: "string" }, description: "Only this namespace's routes; default every namespace." },
        rangeParameter,
      ],
      responses: { "200": { description: "Per route and model, the failures over the range.", content: jsonContent({ type: "object" }) }, "400": errorResponse("Bad range."), "401": errorResponse(status.readToken), "404": errorResponse("No data for this route.") },
    },
  },
  "/v1/dashboard/alerts": {
    get: {
      operationId: "dashboardAlerts",
      summary: "Firing and pending alerts with their annotations, from the Prometheus rules API the control plane is configured with (alerts.prometheusUrl, else adaptive.prometheus.url)",
      description:
        "Always 200. source: prometheus or none (then hint says what to configure). available: false when the last read failed (reason: timeout, unreachable, http_status, too_large, invalid, error_status; detail). alerts, firing before pending, then by severity and oldest first, at most alerts.maxAlerts (truncated counts the rest): name, state, severity, activeAt (ISO) and activeAtMs (when the expression started holding), forSeconds, value, summary, description, runbook, runbookUrl (http(s) only), labels (the others, bounded). A read is shared for alerts.cacheMs.",
      security: readSecurity,
      responses: { "200": { description: "The alerts, or why they are unavailable.", content: jsonContent({ type: "object" }) }, "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/slo": {
    get: {
      operationId: "dashboardSlo",
      summary: "Per route and model, the SLO objective in force, goodput, 30-day error budget left and fast and slow burn rates, from the Prometheus the alerts are read from (its records of prometheus-rules.yaml's SLO groups)",
      description:
        "Always 200. source: prometheus or none (then hint says what to configure). available: false when the last read failed (reason: timeout, unreachable, http_status, too_large, invalid, error_status; detail). windows: goodput (1h), budget (30d), burnFast and burnSlow (window and the alerts' threshold: 1h at 14.4, 1d at 3). ttft (per namespace, route and model) and errors (per namespace and route), worst fast burn first, at most alerts.maxAlerts rows each (truncated counts the rest): objective, goodput, budgetLeft, burnFast, burnSlow, null where Prometheus has no value yet. One instant query per figure (/api/v1/query), all within alerts.timeoutMs, each answer at most alerts.maxBytes; a read is shared for alerts.cacheMs.",
      security: readSecurity,
      responses: { "200": { description: "The SLO figures, or why they are unavailable.", content: jsonContent({ type: "object" }) }, "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/status": {
    get: {
      operationId: "dashboardStatus",
      summary: "Whether the metrics pipeline and the span receiver are on (with how to turn them on), the trace link template, the ranges offered",
      security: readSecurity,
      responses: { "200": { description: "Status.", content: jsonContent({ type: "object" }) }, "401": errorResponse(status.readToken) },
    },
  },
  "/v1/dashboard/traces": {
    get: {
      operationId: "dashboardTraces",
      summary: "Recent sampled LLM calls the span receiver holds (newest first), or every span of a trace id or x-token-trace-id; served when traces.enabled",
      security: readSecurity,
      parameters: [
        { name: "route", in: "query", required: false, schema: { type: "string" } },
        { name: "id", in: "query", required: false, schema: { type: "string" }, description: "A W3C trace id (any case) or an x-token-trace-id; then route and filters are ignored." },
        { name: "errors", in: "query", required: false, schema: { enum: ["true", "false"] } },
        { name: "minDurationMs", in: "query", required: false, schema: { type: "number", minimum: 0 } },
        { name: "minTtftMs", in: "query", required: false, schema: { type: "number", minimum: 0 }, description: "Calls whose first chunk came at least this late (calls without a TTFT are left out)." },
        { name: "fromMs", in: "query", required: false, schema: { type: "number", minimum: 0 }, description: "Calls started at or after this Unix time (ms)." },
        { name: "toMs", in: "query", required: false, schema: { type: "number", minimum: 0 }, description: "Calls started at or before this Unix time (ms)." },
        { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 500 } },
      ],
      responses: {
        "200": { description: "Calls.", content: jsonContent({ type: "object" }) },
        "400": errorResponse("Bad query."),
        "401": errorResponse(status.readToken),
        "404": errorResponse("The span receiver is off (traces.enabled is false)."),
      },
    },
  },
  "/openapi.json": { get: { operationId: "openapi", summary: "This document", responses: { "200": { description: "OpenAPI 3.1.", content: jsonContent({ type: "object" }) } } } },
  "/healthz": { get: { operationId: "healthz", summary: "Liveness", responses: { "200": { description: "The process serves requests.", content: jsonContent({ type: "object" }) } } } },
  "/readyz": {
    get: {
      operationId: "readyz",
      summary: "Readiness: store loaded and writable and, in Kubernetes mode, the WasmPlugin informer synced and the API reachable",
      responses: { "200": { description: "Ready.", content: jsonContent({ type: "object" }) }, "503": { description: "Not ready; checks say why.", content: jsonContent({ type: "object" }) } },
    },
  },
  "/metrics": { get: { operationId: "metrics", summary: "Prometheus metrics", responses: { "200": { description: "Text exposition format.", content: { "text/plain": { schema: { type: "string" } } } } } } },
};

type Operation = { operationId: string; responses: Record<string, { description: string; headers?: object }> } & Record<string, unknown>;

/** HEAD wherever GET (same statuses, no content, RFC 9110 §9.3.2), OPTIONS everywhere, 405 for the rest. */
function withDerivedOperations(input: typeof paths): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [path, item] of Object.entries(input)) {
    const derived: Record<string, unknown> = { ...item };
    let get = (item as { get?: Operation }).get;
    if (get !== undefined && get.responses["304"] === undefined) {
      // RFC 9110 §13.1.2: If-None-Match: * is false whenever a representation exists, so a GET
      // that would answer 2xx answers 304 (installConditionalGet evaluates every response).
      get = { ...get, responses: { ...get.responses, "304": { description: "If-None-Match: * and the resource exists." } } };
      derived.get = get;
    }
    const methods = Object.keys(item).filter((k) => k !== "parameters").map((m) => m.toUpperCase());
    if (get !== undefined) {
      const responses = Object.fromEntries(Object.entries(get.responses).map(([code, r]) => [code, r.headers ? { description: r.description, headers: r.headers } : { description: r.description }]));
      derived.head = { ...get, operationId: `${get.operationId}Head`, summary: `${String(get.summary)} (headers only)`, responses };
      methods.push("HEAD");
    }
    methods.push("OPTIONS");
    const allow = { Allow: { schema: { type: "string" }, description: `The methods this path serves: ${methods.join(", ")}.` } };
    derived.options = { operationId: `options${path.replace(/[^A-Za-z0-9]+/g, "_")}`, summary: "The methods this path serves", responses: { "204": { description: "No content.", headers: allow } } };
    // Methods outside the item get 405 with Allow (RFC 9110 §15.5.6); OpenAPI has no operation for "any other method".
    derived["x-other-methods"] = { responses: { "405": { description: "Method not served on this path.", headers: allow, content: jsonContent(ref("Error")) } } };
    out[path] = derived;
  }
  return out;
}

/** The document (built once). */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "tokentrace control plane",
    version: "0.1.0",
    description:
      'Sampling policies for the tokentrace filter: REST API, pull endpoint for filters, health and metrics. Writes need a bearer token of scope write or admin (api.scopes; scheme case-insensitive); reads are public unless api.reads is "token", then any token (scope read or more). The span receiver and the content key are served on the filter-facing listener, not here. Errors are {error, details: [{field, reason}]}. Request bodies are decoded strictly (duplicate keys and nesting deeper than 64 levels are refused naming the field). Every path answers OPTIONS (204 with Allow) and other methods with 405 and Allow (x-other-methods).',
  },
  jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    schemas: {
      Policy: policyComponent(),
      FilterConfig: filterComponent(),
      PolicyRecord: {
        type: "object",
        required: ["version", "updatedAt", "updatedBy", "policy"],
        properties: { version: { type: "string" }, updatedAt: { type: "string", format: "date-time" }, updatedBy: { type: "string" }, policy: ref("Policy") },
      },
      PolicyWrite: {
        description: "A policy, or a PolicyRecord as GET returned it (version = precondition; updatedAt, updatedBy ignored).",
        anyOf: [
          ref("Policy"),
          {
            type: "object",
            additionalProperties: false,
            required: ["policy"],
            properties: { version: { type: "string" }, updatedAt: { type: "string" }, updatedBy: { type: "string" }, policy: ref("Policy") },
          },
        ],
      },
      HistoryEntry: {
        type: "object",
        required: ["action", "version", "previousVersion", "at", "by"],
        properties: {
          action: { enum: ["create", "replace", "patch", "rollback", "delete"] },
          version: { type: "string" },
          previousVersion: { type: ["string", "null"] },
          at: { type: "string", format: "date-time" },
          by: { type: "string" },
          policy: ref("Policy"),
        },
      },
      FilterConfigResponse: {
        type: "object",
        required: ["version", "policy", "config"],
        properties: { version: { type: "string", description: "Opaque; changes whenever the config changes." }, policy: { type: "string" }, config: ref("FilterConfig") },
      },
      Error: {
        type: "object",
        required: ["error", "details"],
        properties: {
          error: { type: "string" },
          details: { type: "array", items: { type: "object", required: ["field", "reason"], properties: { field: { type: "string" }, reason: { type: "string" } } } },
        },
      },
    },
  },
  paths: withDerivedOperations(paths),
};
