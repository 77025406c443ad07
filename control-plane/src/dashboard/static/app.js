// The dashboard page: polls /v1/dashboard/series for the chosen route and draws it with uPlot;
// the policy editor reads and writes /v1/policies (PUT with If-Match). The token typed by the user
// goes with every request, so the page also works when the API runs with api.reads = token.
/* global document, window, uPlot, Option */
"use strict";

const REFRESH_MS = 2000;
const $ = (id) => document.getElementById(id);
const charts = {};
let currentRoute = "";

const COLORS = { ttft: "#1f77b4", decode: "#ff7f0e", total: "#2ca02c" };
const DASH = { P50: [], P95: [6, 3], P99: [2, 3] };

function chartSpecs(quantileNames) {
  const latency = [];
  for (const phase of ["ttft", "decode", "total"]) {
    for (const q of quantileNames) latency.push({ key: `${phase}${q}`, label: `${phase} ${q}`, stroke: COLORS[phase], dash: DASH[q] || [] });
  }
  return {
    latency: { el: "chart-latency", series: latency, axes: [{ label: "ms" }] },
    tokens: { el: "chart-tokens", series: [{ key: "outputTokensPerSecond", label: "output tokens/s", stroke: "#9467bd" }], axes: [{ label: "tokens/s" }] },
    gpu: {
      el: "chart-gpu",
      series: [
        { key: "gpuUtilizationPercent", label: "GPU util %", stroke: "#d62728", scale: "%" },
        { key: "gpuPowerWatts", label: "power W", stroke: "#8c564b", scale: "W" },
      ],
      axes: [{ label: "%", scale: "%" }, { label: "W", scale: "W", side: 1 }],
    },
    sampling: {
      el: "chart-sampling",
      series: [
        { key: "sampledPerSecond", label: "sampled/s", stroke: "#17becf" },
        { key: "targetSampledPerSecond", label: "target/s", stroke: "#7f7f7f", dash: [6, 3] },
      ],
      axes: [{ label: "traces/s" }],
    },
  };
}

function makeChart(spec) {
  const el = $(spec.el);
  const opts = {
    width: Math.max(300, el.clientWidth || 480),
    height: 220,
    scales: { x: { time: true } },
    series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.stroke, dash: s.dash, scale: s.scale || "y", spanGaps: true, width: 1.5 }))],
    axes: [{}, ...spec.axes.map((a) => ({ label: a.label, scale: a.scale || "y", side: a.side === 1 ? 1 : 3, grid: { show: a.side !== 1 } }))],
  };
  const data = [[], ...spec.series.map(() => [])];
  return new uPlot(opts, data, el);
}

/** Request headers with the typed token as a bearer token (none when the field is empty). */
function authHeaders(extra) {
  const headers = { ...extra };
  const token = $("token").value.trim();
  if (token) headers.authorization = `Bearer ${token}`;
  return headers;
}

function showStatus(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

async function refresh() {
  let body;
  try {
    const q = currentRoute ? `?route=${encodeURIComponent(currentRoute)}` : "";
    const res = await fetch(`/v1/dashboard/series${q}`, { cache: "no-store", headers: authHeaders() });
    body = await res.json();
    if (!res.ok) {
      showStatus(describeError(body), true);
      currentRoute = "";
      return;
    }
  } catch (e) {
    showStatus(`cannot load series: ${e}`, true);
    return;
  }
  const select = $("route");
  const known = [...select.options].map((o) => o.value).join(",");
  if (known !== body.routes.join(",")) {
    select.replaceChildren(...body.routes.map((r) => new Option(r, r)));
  }
  if (body.route) {
    currentRoute = body.route;
    select.value = body.route;
  }
  const specs = chartSpecs(body.quantiles.map((q) => `P${Math.round(q * 100)}`));
  const cols = body.columns;
  for (const [name, spec] of Object.entries(specs)) {
    if (!charts[name]) charts[name] = makeChart(spec);
    const data = [cols.t, ...spec.series.map((s) => cols[s.key] || [])];
    charts[name].setData(data);
    const withValues = spec.series.reduce((n, s) => n + (cols[s.key] || []).filter((v) => v !== null).length, 0);
    $(spec.el).dataset.points = String(withValues);
  }
  const n = cols.t.length;
  showStatus(body.route ? `${body.route} on ${body.pod}: ${n} points, last ${n ? new Date(cols.t[n - 1] * 1000).toLocaleTimeString() : "-"}` : "no data yet (the pipeline needs two scrapes)", false);
}

function describeError(body) {
  if (!body || typeof body !== "object") return "unexpected answer";
  const details = Array.isArray(body.details) ? body.details.map((d) => `${d.field}: ${d.reason}`).join("; ") : "";
  return details ? `${body.error}: ${details}` : String(body.error);
}

// Policy editor.
let policyEtag = "";

async function loadPolicies(selectName) {
  const res = await fetch("/v1/policies", { cache: "no-store", headers: authHeaders() });
  const body = await res.json();
  if (!res.ok) {
    showPolicyResult(describeError(body), body.details, true);
    return;
  }
  const select = $("policy");
  select.replaceChildren(...body.items.map((r) => new Option(r.policy.name, r.policy.name)));
  if (selectName) select.value = selectName;
  if (select.value) await loadPolicy(select.value);
}

async function loadPolicy(name) {
  const res = await fetch(`/v1/policies/${encodeURIComponent(name)}`, { cache: "no-store", headers: authHeaders() });
  const body = await res.json();
  if (!res.ok) {
    showPolicyResult(describeError(body), body.details, true);
    return;
  }
  policyEtag = res.headers.get("etag") || "";
  showPolicyResult("", [], false);
  $("policy-editor").value = JSON.stringify(body.policy, null, 2);
  $("policy-version").textContent = `version ${body.version}, by ${body.updatedBy}`;
  showTailKeep(body.policy);
}

// Tail keep: the two common settings of pluginConfig.spans.keep as fields; routes stay in the JSON.
function showTailKeep(policy) {
  const keep = (policy && policy.pluginConfig && policy.pluginConfig.spans && policy.pluginConfig.spans.keep) || {};
  $("keep-errors").checked = keep.errors === true;
  $("keep-slower-ms").value = keep.slowerThanMs === undefined ? "" : String(keep.slowerThanMs);
}

/** The editor's policy document, or null (the parse error shown). */
function editedPolicy() {
  try {
    return JSON.parse($("policy-editor").value);
  } catch (e) {
    showPolicyResult("not valid JSON", [{ field: "(body)", reason: String(e.message || e) }], true);
    return null;
  }
}

function applyTailKeep() {
  const doc = editedPolicy();
  if (doc === null) return;
  const spans = doc.pluginConfig && doc.pluginConfig.spans;
  if (!spans) {
    showPolicyResult("tail keep needs span export", [{ field: "pluginConfig.spans", reason: "set spans.cluster first" }], true);
    return;
  }
  const keep = { ...(spans.keep || {}) };
  if ($("keep-errors").checked) keep.errors = true;
  else delete keep.errors;
  const ms = $("keep-slower-ms").value.trim();
  if (ms === "") delete keep.slowerThanMs;
  else keep.slowerThanMs = Number(ms);
  if (Object.keys(keep).length === 0) delete spans.keep;
  else spans.keep = keep;
  $("policy-editor").value = JSON.stringify(doc, null, 2);
  showPolicyResult("tail keep written into the policy: save to apply", [], false);
}

function showPolicyResult(text, details, isError) {
  const el = $("policy-result");
  el.textContent = text;
  el.className = isError ? "error" : "ok";
  $("policy-errors").replaceChildren(
    ...(details || []).map((d) => {
      const li = document.createElement("li");
      li.dataset.field = d.field;
      li.textContent = `${d.field}: ${d.reason}`;
      return li;
    }),
  );
}

async function savePolicy() {
  const name = $("policy").value;
  const doc = editedPolicy();
  if (doc === null) return;
  const headers = authHeaders({ "content-type": "application/json" });
  if (policyEtag) headers["if-match"] = policyEtag;
  const res = await fetch(`/v1/policies/${encodeURIComponent(name)}`, { method: "PUT", headers, body: JSON.stringify(doc) });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) {
    showPolicyResult(`${res.status} ${body.error || ""}`.trim(), body.details, true);
    return;
  }
  policyEtag = res.headers.get("etag") || "";
  $("policy-version").textContent = `version ${body.version}, by ${body.updatedBy}`;
  showPolicyResult(`saved: version ${body.version}`, [], false);
}

$("route").addEventListener("change", (e) => {
  currentRoute = e.target.value;
  void refresh();
});
$("policy").addEventListener("change", (e) => void loadPolicy(e.target.value));
$("save").addEventListener("click", () => void savePolicy());
$("keep-apply").addEventListener("click", applyTailKeep);
$("reload").addEventListener("click", () => void loadPolicy($("policy").value));
// A token typed (or changed) may open reads that were refused: load again with it. The policy list
// is loaded only if it was refused, so an edit in progress is never replaced.
$("token").addEventListener("change", () => {
  void refresh();
  if ($("policy").options.length === 0) void loadPolicies().catch((e) => showPolicyResult(`cannot load policies: ${e}`, [], true));
});

window.tokentraceDashboard = { charts, refresh };
void loadPolicies().catch((e) => showPolicyResult(`cannot load policies: ${e}`, [], true));
void refresh();
window.setInterval(() => void refresh(), REFRESH_MS);
