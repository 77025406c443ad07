// Contract tests of CustomResourceDefinitions written through the emulated kube-apiserver, as
// `kubectl apply -f crd.yaml` writes them: what the API server refuses (non-structural schemas,
// unsupported JSON-Schema, CEL that does not compile, bad printer columns), what it serves once
// Established (upstream's own CRDs included), CEL rules (transition rules with oldSelf, ints versus
// doubles), and the Table
// `kubectl get` prints from additionalPrinterColumns.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { KubeEmulator, startKubeEmulator } from "./index.js";
import { humanDuration, jsonPath } from "./table.js";

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const gadgets = (name = "") => `/apis/example.dev/v1/namespaces/lab/gadgets${name === "" ? "" : `/${name}`}`;
// The CRD is mutated by path in the table below; its shape is the test's own literal.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = Record<string, any>;
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

function gadgetCrd(): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "gadgets.example.dev" },
    spec: {
      group: "example.dev",
      scope: "Namespaced",
      names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: "Size", type: "integer", jsonPath: ".spec.size" },
          { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
          { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
        ],
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                required: ["owner"],
                properties: {
                  owner: { type: "string", "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "owner is immutable" }] },
                  size: { type: "integer" },
                  ratio: { type: "number" },
                },
                "x-kubernetes-validations": [{ rule: "!has(self.size) || self.size <= 10", message: "size is at most 10" }, { rule: "!has(self.ratio) || self.ratio < 1", fieldPath: ".ratio", message: "ratio below 1" }],
              },
              status: { type: "object", properties: { conditions: { type: "array", items: { type: "object", properties: { type: { type: "string" }, status: { type: "string" } } } } } },
            },
          },
        },
      }],
    },
  };
}

async function call(emulator: KubeEmulator, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${emulator.url}${path}`, { method, headers: { "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, warning: response.headers.get("warning"), json: (await response.json()) as Record<string, unknown> & { message?: string; metadata?: { resourceVersion?: string } } };
}

describe("kube emulator: CustomResourceDefinitions through the API", () => {
  let emulator: KubeEmulator;
  const clock = { ms: Date.parse("2026-12-02T10:00:00Z") };
  before(async () => {
    emulator = await startKubeEmulator({ now: () => new Date(clock.ms) });
  });
  after(() => emulator.close());

  const refusals: Array<[string, (crd: Loose) => void, RegExp]> = [
    ["a name that is not <plural>.<group>", (c) => { c.metadata.name = "gadget.example.dev"; }, /metadata\.name: Invalid value: "gadget\.example\.dev": must be spec\.names\.plural\+"\."\+spec\.group/],
    ["a field without a type (not structural)", (c) => { delete c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.type; }, /properties\[size\]\.type: Required value: must not be empty for specified object fields/],
    ["additionalProperties: false beside properties", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.additionalProperties = false; }, /additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive/],
    ["a $ref", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size = { $ref: "#/x" }; }, /\$ref: Forbidden: \$ref is not supported/],
    ["propertyNames, which JSONSchemaProps does not have", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.labels = { type: "object", propertyNames: { pattern: "^a" }, additionalProperties: { type: "string" } }; }, /propertyNames: Forbidden: unknown field/],
    ["a type inside anyOf", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.anyOf = [{ type: "object", required: ["size"] }]; }, /anyOf\[0\]\.type: Forbidden: must be empty to be structural/],
    ["a type deeper inside anyOf", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.anyOf = [{ properties: { size: { type: "integer" } } }]; }, /anyOf\[0\]\.properties\[size\]\.type: Forbidden: must be empty to be structural/],
    ["metadata named inside anyOf", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.anyOf = [{ properties: { metadata: { required: ["x"] } } }]; }, /anyOf\[0\]\.properties\[metadata\]: Forbidden: must not be specified in a nested context/],
    ["a CEL rule naming an undefined field", (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec["x-kubernetes-validations"] = [{ rule: "self.sise <= 10" }]; }, /undefined field 'sise'/],
    ["a printer column of an unknown type", (c) => { c.spec.versions[0].additionalPrinterColumns[0].type = "int"; }, /additionalPrinterColumns\[0\]\.type: Invalid value: "int": must be one of boolean,date,integer,number,string/],
    ["no storage version", (c) => { c.spec.versions[0].storage = false; }, /must have exactly one version marked as storage version/],
  ];
  for (const [what, mutate, message] of refusals) {
    it(`refuses a CRD with ${what} (422) and serves nothing`, async () => {
      const crd = structuredClone(gadgetCrd()) as Loose;
      mutate(crd);
      const result = await call(emulator, "POST", crdPath, crd);
      assert.equal(result.status, 422, JSON.stringify(result.json));
      assert.match(result.json.message ?? "", message);
      assert.equal((await call(emulator, "GET", gadgets())).status, 404);
    });
  }

  it("accepts the CRDs upstream ships (Istio's WasmPlugin and EnvoyFilter, prometheus-operator's PrometheusRule): int-or-string anyOf, a field named metadata below the root, CEL with the URL library", async () => {
    const fresh = await new KubeEmulator({}).listen();
    try {
      for (const file of ["istio-crds.yaml", "prometheusrule-crd.yaml"]) {
        for (const doc of parseAllDocuments(readFileSync(new URL(`../../fixtures/schemas/${file}`, import.meta.url), "utf8"))) {
          const crd = doc.toJS() as Loose;
          const created = await call(fresh, "POST", `${crdPath}?fieldValidation=Strict`, crd);
          assert.equal(created.status, 201, `${crd.metadata.name}: ${created.json.message ?? ""}`);
        }
      }
    } finally {
      await fresh.close();
    }
  });

  it("decides oneOf, allOf and not as kube-openapi's schemaPropsValidator does (Istio's EnvoyFilter match: at most one of listener, routeConfiguration, cluster, waypoint)", async () => {
    const fresh = await new KubeEmulator({}).listen();
    try {
      const crd = parseAllDocuments(readFileSync(new URL("../../fixtures/schemas/istio-crds.yaml", import.meta.url), "utf8")).map((d) => d.toJS() as Loose).find((c) => c.spec.names.kind === "EnvoyFilter")!;
      const served = crd.spec.versions.find((v: Loose) => v.name === "v1alpha3");
      // The same shape again on a field of our own, with allOf and not at the top.
      served.schema.openAPIV3Schema.properties.spec.properties.probe = { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, allOf: [{ required: ["a"] }, { not: { required: ["b"] } }] };
      assert.equal((await call(fresh, "POST", crdPath, crd)).status, 201);
      const envoyFilter = (name: string, spec: Loose) => call(fresh, "POST", "/apis/networking.istio.io/v1alpha3/namespaces/lab/envoyfilters", { apiVersion: "networking.istio.io/v1alpha3", kind: "EnvoyFilter", metadata: { name }, spec });
      const patch = (match: Loose) => ({ configPatches: [{ applyTo: "HTTP_FILTER", match, patch: { operation: "MERGE", value: {} } }] });
      assert.equal((await envoyFilter("none", patch({ context: "SIDECAR_INBOUND" }))).status, 201);
      assert.equal((await envoyFilter("one", patch({ listener: { portNumber: 8000 } }))).status, 201);
      const two = await envoyFilter("two", patch({ listener: { portNumber: 8000 }, cluster: { name: "x" } }));
      assert.equal(two.status, 422);
      assert.match(two.json.message ?? "", /spec\.configPatches\[0\]\.match in body must validate one and only one schema \(oneOf\)\. Found 2 valid alternatives/);
      assert.equal((await envoyFilter("probe-ok", { probe: { a: 1 } })).status, 201);
      const notA = await envoyFilter("probe-no-a", { probe: { b: 1 } });
      assert.match(notA.json.message ?? "", /spec\.probe in body must validate all the schemas \(allOf\)\. None validated/);
      const both = await envoyFilter("probe-both", { probe: { a: 1, b: 1 } });
      assert.match(both.json.message ?? "", /spec\.probe in body must validate all the schemas \(allOf\)/);
      assert.doesNotMatch(both.json.message ?? "", /None validated/);
    } finally {
      await fresh.close();
    }
  });

  it("serves a valid CRD once created, reports it Established, and stops serving it when deleted", async () => {
    const created = await call(emulator, "POST", crdPath, gadgetCrd());
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const conditions = (created.json.status as { conditions: { type: string; status: string }[] }).conditions;
    assert.deepEqual(conditions.map((c) => [c.type, c.status]), [["NamesAccepted", "True"], ["Established", "True"]]);
    const gadget = await call(emulator, "POST", gadgets(), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g1" }, spec: { owner: "team-a", size: 3, colour: "red" } });
    assert.equal(gadget.status, 201);
    assert.equal(gadget.warning, '299 - "unknown field \\"spec.colour\\""'.replace(/\\"/g, '"'));
    assert.deepEqual(gadget.json.spec, { owner: "team-a", size: 3 }, "unknown fields pruned");
  });

  it("evaluates CEL: a transition rule (oldSelf) only on updates, ints against int literals, a fieldPath placing the cause", async () => {
    const created = await call(emulator, "POST", gadgets(), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g2" }, spec: { owner: "team-a", size: 10 } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const rv = created.json.metadata?.resourceVersion;
    const changedOwner = await call(emulator, "PUT", gadgets("g2"), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g2", resourceVersion: rv }, spec: { owner: "team-b", size: 11, ratio: 1.5 } });
    assert.equal(changedOwner.status, 422);
    assert.equal(changedOwner.json.message, 'Gadget.example.dev "g2" is invalid: [spec: Invalid value: "object": size is at most 10, spec.ratio: Invalid value: "object": ratio below 1, spec.owner: Invalid value: "string": owner is immutable]');
    const fine = await call(emulator, "PUT", gadgets("g2"), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g2", resourceVersion: rv }, spec: { owner: "team-a", size: 4, ratio: 0.5 } });
    assert.equal(fine.status, 200, JSON.stringify(fine.json));
  });

  it("answers kubectl's Table request with Name and the printer columns, typed and found by JSONPath", async () => {
    const g3 = await call(emulator, "POST", gadgets(), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g3" }, spec: { owner: "team-c", size: 7 } });
    await call(emulator, "PUT", gadgets("g3/status"), { apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g3", resourceVersion: g3.json.metadata?.resourceVersion }, status: { conditions: [{ type: "Synced", status: "False" }, { type: "Ready", status: "True" }] } });
    clock.ms += 5 * 60_000 + 7_000;
    const table = await call(emulator, "GET", gadgets("g3"), undefined, { accept: tableAccept });
    assert.equal(table.json.kind, "Table");
    assert.deepEqual((table.json.columnDefinitions as { name: string; type: string }[]).map((c) => [c.name, c.type]), [["Name", "string"], ["Size", "integer"], ["Ready", "string"], ["Age", "date"]]);
    assert.deepEqual((table.json.rows as { cells: unknown[] }[])[0]?.cells, ["g3", 7, "True", "5m7s"]);
    const list = await call(emulator, "GET", gadgets(), undefined, { accept: tableAccept });
    assert.deepEqual((list.json.rows as { cells: unknown[] }[]).map((r) => r.cells[0]), ["g1", "g2", "g3"]);
    assert.deepEqual((list.json.rows as { cells: unknown[] }[])[0]?.cells.slice(1, 3), [3, null], "a missing key is an empty cell");
  });

  it("HumanDuration and JSONPath behave as apimachinery's and client-go's", () => {
    assert.deepEqual([0, 119_000, 120_000, 307_000, 3 * 3_600_000 + 60_000, 50 * 3_600_000, 400 * 86_400_000].map(humanDuration), ["0s", "119s", "2m", "5m7s", "3h1m", "2d2h", "400d"]);
    assert.deepEqual(jsonPath({ a: [{ t: "x", v: 1 }, { t: "y", v: 2 }] }, '.a[?(@.t=="y")].v'), [2]);
    assert.deepEqual(jsonPath({ a: [1, 2] }, ".a[-1]"), [2]);
  });

  it("deleting the CRD stops serving its resource", async () => {
    const deleted = await call(emulator, "DELETE", `${crdPath}/gadgets.example.dev`);
    assert.equal(deleted.status, 200);
    assert.equal((await call(emulator, "GET", gadgets())).status, 404);
  });
});
