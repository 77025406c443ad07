// The OpenAPI 3.1 description served at /openapi.json. Schemas come from the same objects the
// server validates with (policy schema, filter pluginConfig schema), so they cannot drift; a
// test checks that every route the app serves is described here and nothing else is.
import { readFileSync } from "node:fs";
import { filterSchemaUrl, policySchema } from "../policy/validate.js";

const filterSchema = JSON.parse(readFileSync(filterSchemaUrl, "utf8")) as Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: object) => ({ "application/json": { schema } });
const errorResponse = (description: string) => ({ description, content: jsonContent(ref("Error")) });

const nameParam = { name: "name", in: "path", required: true, schema: { type: "string" } };
const ifMatch = { name: "If-Match", in: "header", required: false, schema: { type: "string" }, description: 'Quoted version (ETag); the write fails with 412 unless it is current. "*" requires the policy to exist.' };
const etagHeader = { ETag: { schema: { type: "string" }, description: "Quoted version of the policy." } };
const writeErrors = {
  "400": errorResponse("Invalid body; nothing changed."),
  "401": errorResponse("Missing or unknown bearer token."),
  "412": errorResponse("If-Match is not the current version."),
  "413": errorResponse("Body larger than api.bodyLimitBytes."),
  "415": errorResponse("Wrong Content-Type."),
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

/** The document (built once). */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "tokentrace control plane",
    version: "0.1.0",
    description: "Sampling policies for the tokentrace filter: REST API, pull endpoint for filters, health and metrics. Writes need a bearer token; reads are public unless api.reads is \"token\".",
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
      HistoryEntry: {
        type: "object",
        required: ["action", "version", "at", "by"],
        properties: {
          action: { enum: ["create", "replace", "patch", "rollback", "delete"] },
          version: { type: "string" },
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
  paths: {
    "/v1/policies": {
      get: {
        operationId: "listPolicies",
        summary: "List policies",
        responses: { "200": { description: "All policies by name.", content: jsonContent({ type: "object", properties: { items: { type: "array", items: ref("PolicyRecord") } } }) }, "401": errorResponse("Token required for reads.") },
      },
      post: {
        operationId: "createPolicy",
        summary: "Create a policy",
        security: [{ bearer: [] }],
        requestBody: { required: true, content: jsonContent(ref("Policy")) },
        responses: { "201": { description: "Created.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, "409": errorResponse("A policy with this name exists."), ...writeErrors },
      },
    },
    "/v1/policies/{name}": {
      parameters: [nameParam],
      get: {
        operationId: "getPolicy",
        summary: "Get a policy",
        responses: { "200": { description: "The policy.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, "404": errorResponse("No such policy.") },
      },
      put: {
        operationId: "replacePolicy",
        summary: "Create or replace a policy",
        security: [{ bearer: [] }],
        parameters: [ifMatch],
        requestBody: { required: true, content: jsonContent(ref("Policy")) },
        responses: { "200": { description: "Replaced.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, "201": { description: "Created.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, ...writeErrors },
      },
      patch: {
        operationId: "patchPolicy",
        summary: "Merge-patch a policy (RFC 7386)",
        security: [{ bearer: [] }],
        parameters: [ifMatch],
        requestBody: { required: true, content: { "application/merge-patch+json": { schema: { type: "object" } }, "application/json": { schema: { type: "object" } } } },
        responses: { "200": { description: "Patched.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, "404": errorResponse("No such policy."), ...writeErrors },
      },
      delete: {
        operationId: "deletePolicy",
        summary: "Delete a policy (its history is kept)",
        security: [{ bearer: [] }],
        parameters: [ifMatch],
        responses: { "204": { description: "Deleted." }, "404": errorResponse("No such policy."), "401": writeErrors["401"], "412": writeErrors["412"] },
      },
    },
    "/v1/policies/{name}/history": {
      parameters: [nameParam],
      get: {
        operationId: "policyHistory",
        summary: "History of a policy, oldest first",
        responses: { "200": { description: "History.", content: jsonContent({ type: "object", properties: { items: { type: "array", items: ref("HistoryEntry") } } }) }, "404": errorResponse("Name never used.") },
      },
    },
    "/v1/policies/{name}/rollback": {
      parameters: [nameParam],
      post: {
        operationId: "rollbackPolicy",
        summary: "Make an earlier version current again (as a new version)",
        security: [{ bearer: [] }],
        parameters: [ifMatch],
        requestBody: { required: true, content: jsonContent({ type: "object", additionalProperties: false, required: ["version"], properties: { version: { type: "string" } } }) },
        responses: { "200": { description: "Rolled back.", headers: etagHeader, content: jsonContent(ref("PolicyRecord")) }, "404": errorResponse("No such policy or version."), ...writeErrors },
      },
    },
    "/v1/validate": {
      post: {
        operationId: "validatePolicy",
        summary: "Validate a policy without storing it (dry run)",
        security: [{ bearer: [] }],
        requestBody: { required: true, content: jsonContent(ref("Policy")) },
        responses: { "200": { description: "Valid.", content: jsonContent({ type: "object", required: ["valid"], properties: { valid: { const: true }, policy: ref("Policy") } }) }, ...writeErrors },
      },
    },
    "/v1/filters/{workload}/config": {
      get: {
        operationId: "filterConfig",
        summary: "Effective config for a pulling filter",
        description: "Picks the policy whose target namespace is the workload's and whose selector.matchLabels are all in `labels` (default app=<name>); most labels wins, ties by name. Policies with targetRefs are for Kubernetes mode and never match here.",
        parameters: [
          { name: "workload", in: "path", required: true, schema: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?\\..+$" }, description: "<namespace>.<name>" },
          { name: "version", in: "query", required: false, schema: { type: "string" }, description: "The version the filter has; 304 when current." },
          { name: "labels", in: "query", required: false, schema: { type: "string" }, description: "k=v pairs separated by commas." },
          { name: "If-None-Match", in: "header", required: false, schema: { type: "string" } },
        ],
        responses: {
          "200": { description: "Current config.", headers: { ETag: { schema: { type: "string" }, description: "Quoted version." } }, content: jsonContent(ref("FilterConfigResponse")) },
          "304": { description: "The filter's version is current." },
          "400": errorResponse("Malformed workload or query."),
          "404": errorResponse("No policy selects the workload."),
        },
      },
    },
    "/v1/dashboard/series": {
      get: {
        operationId: "dashboardSeries",
        summary: "The dashboard's series for one route (the page at /dashboard draws them)",
        description: "Columns for uPlot from the metrics pipeline's joined scrapes: t (s), ttft/decode/total at P50/P95/P99 (ms), outputTokensPerSecond, requestsPerSecond, gpuUtilizationPercent, gpuPowerWatts, sampledPerSecond, targetSampledPerSecond; null where unknown.",
        parameters: [{ name: "route", in: "query", required: false, schema: { type: "string" }, description: "Route name; default the first route with data." }],
        responses: { "200": { description: "Routes with data and the chosen route's columns.", content: jsonContent({ type: "object" }) }, "401": errorResponse("Token required for reads."), "404": errorResponse("No data for this route.") },
      },
    },
    "/openapi.json": { get: { operationId: "openapi", summary: "This document", responses: { "200": { description: "OpenAPI 3.1.", content: jsonContent({ type: "object" }) } } } },
    "/healthz": { get: { operationId: "healthz", summary: "Liveness", responses: { "200": { description: "The process serves requests.", content: jsonContent({ type: "object" }) } } } },
    "/readyz": {
      get: {
        operationId: "readyz",
        summary: "Readiness: store loaded and, in Kubernetes mode, the WasmPlugin informer synced and the API reachable",
        responses: { "200": { description: "Ready.", content: jsonContent({ type: "object" }) }, "503": { description: "Not ready; checks say why.", content: jsonContent({ type: "object" }) } },
      },
    },
    "/metrics": { get: { operationId: "metrics", summary: "Prometheus metrics", responses: { "200": { description: "Text exposition format.", content: { "text/plain": { schema: { type: "string" } } } } } } },
  },
} as const;
