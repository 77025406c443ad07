// The dashboard page: polls /v1/dashboard/series for the chosen route, model and time range and
// draws the golden signals (charts.js) and the route's latency by length class (length-classes.js),
// /v1/dashboard/errors for the "Errors by model" table of the route's namespace, and
// /v1/dashboard/models for one engine SLO panel per model of the route's namespace; policies.js and
// traces.js run the other two sections. The token typed by the user goes with every request, so
// the page also works with api.reads = token.
/* global document, window */
"use strict";

const REFRESH_MS = 2000;
const $ = (id) => document.getElementById(id);
const { createPanel, formatTime } = window.tokentraceCharts;

const LATENCY = (phase) => [
  { key: `${phase}P50`, label: "P50", stroke: "#2f6fd0" },
  { key: `${phase}P95`, label: "P95", stroke: "#e08a00" },
  { key: `${phase}P99`, label: "P99", stroke: "#c62828" },
];

/** Panels by element id; captions are set from the answer (they state windows and scope). */
const PANELS = {
  "chart-requests": { unit: "/s", series: [{ key: "requestsPerSecond", label: "requests/s (route)", stroke: "#2f6fd0" }, { key: "llmRequestsPerSecond", label: "LLM calls/s", stroke: "#7b1fa2", dash: [5, 3] }] },
  "chart-errors": {
    unit: "ratio",
    series: [
      { key: "ratio4xx", label: "4xx", stroke: "#e08a00" },
      { key: "ratio5xx", label: "5xx", stroke: "#c62828" },
      { key: "ratioReset", label: "reset before response", stroke: "#6d4c41", dash: [5, 3] },
    ],
  },
  // Output tokens on an axis of their own (right): beside prompts ten times their size they look flat.
  "chart-tokens": { unit: "/s", series: [{ key: "inputTokensPerSecond", label: "input tokens/s (left axis)", stroke: "#00897b" }, { key: "outputTokensPerSecond", label: "output tokens/s (right axis)", stroke: "#7b1fa2", scale: "y2" }] },
  "chart-ttft": { unit: "ms", series: LATENCY("ttft"), onPick: (p) => showTracesOf("ttft", p) },
  "chart-decode": { unit: "ms", series: LATENCY("decode") },
  "chart-duration": { unit: "ms", series: LATENCY("duration"), onPick: (p) => showTracesOf("duration", p) },
  "chart-gpu-util": { unit: "%", series: [{ key: "gpuUtilizationPercent", label: "GPU utilisation", stroke: "#2e7d32" }] },
  "chart-gpu-power": { unit: "W", series: [{ key: "gpuPowerWatts", label: "GPU power", stroke: "#8d6e63" }] },
  "chart-sampling": {
    unit: "/s",
    series: [
      { key: "sampledPerSecond", label: "sampled traces/s", stroke: "#2f6fd0" },
      { key: "adaptiveTargetTracesPerSecond", label: "adaptive target (traces/s)", stroke: "#616161", dash: [6, 4] },
    ],
  },
};

/** The engine SLO panel of each model: the three signals, and each threshold dashed in its colour. */
const ENGINE_SERIES = [
  { key: "gpuUtilization", label: "GPU utilisation", stroke: "#2e7d32" },
  { key: "prefixCacheHitRatio", label: "prefix-cache hit ratio", stroke: "#e08a00" },
  { key: "specDecodeAcceptance", label: "speculative acceptance", stroke: "#7b1fa2" },
];
const THRESHOLD_SERIES = ENGINE_SERIES.map((s) => ({ key: `${s.key}Threshold`, label: `${s.label} alert threshold`, stroke: s.stroke, dash: [4, 4] }));

/** The rate window of the series shown (seconds); a chart point summarises the calls of the window before it. */
let windowSeconds = 0;

/** A click on a latency chart's point: the traces of that point's window at or above its percentile. */
function showTracesOf(metric, point) {
  if (!window.tokentraceTraces || windowSeconds <= 0) return;
  const toMs = point.tSeconds * 1000;
  window.tokentraceTraces.showWindow({ metric, fromMs: toMs - windowSeconds * 1000, toMs, minMs: point.value, label: point.label });
}

const charts = {};
/** Engine panels by namespace and model; created as models appear. */
const engineCharts = new Map();
// The view is in the address (as Grafana keeps its variables there), so a link shows the same panels.
const fromUrl = new window.URLSearchParams(window.location.search);
const state = { namespace: fromUrl.get("namespace") || "", route: fromUrl.get("route") || "", model: fromUrl.get("model") || "", range: fromUrl.get("range") || "900" };
$("range").value = state.range;

function keepInUrl() {
  const q = new window.URLSearchParams();
  for (const key of ["route", "namespace", "model", "range"]) if (state[key]) q.set(key, state[key]);
  window.history.replaceState(null, "", `${window.location.pathname}?${q}`);
}

/** Request headers with the typed token as a bearer token (none when the field is empty). */
function authHeaders(extra) {
  const headers = { ...extra };
  const token = $("token").value.trim();
  if (token) headers.authorization = `Bearer ${token}`;
  return headers;
}

function describeError(body) {
  if (!body || typeof body !== "object") return "unexpected answer";
  const details = Array.isArray(body.details) ? body.details.map((d) => `${d.field}: ${d.reason}`).join("; ") : "";
  return details ? `${body.error}: ${details}` : String(body.error);
}

function showStatus(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

function setCaption(id, text) {
  const el = document.querySelector(`[data-caption-for="${id}"]`);
  if (el) el.textContent = text;
}

function fillSelect(select, options, value) {
  const known = [...select.options].map((o) => `${o.value}=${o.textContent}`).join(",");
  const wanted = options.map(([v, t]) => `${v}=${t}`).join(",");
  if (known !== wanted) select.replaceChildren(...options.map(([v, t]) => new window.Option(t, v)));
  select.value = value;
}

function samplingText(s, body) {
  if (!s) return `Sampled traces/s (mean over ${body.samplingWindowSeconds} s); no policy targets namespace ${body.namespace}`;
  const rate = `${+(s.rate * 100).toFixed(4)} %`;
  const adaptive = s.adaptiveTargetTracesPerSecond === null ? "no adaptive target" : `adaptive target ${s.adaptiveTargetTracesPerSecond}/s for ${s.adaptiveTargetAppliesTo}`;
  return `Sampled traces/s (mean over ${body.samplingWindowSeconds} s); policy ${s.policy}: ${rate} (${s.from}${s.adjustedByAdaptive ? ", set by adaptive sampling" : ""}), ${adaptive}`;
}

let firstScreenPainted;
const firstScreenShown = new Promise((resolve) => {
  firstScreenPainted = resolve;
});

/** Resolves once the browser has painted what was drawn before the call. */
const afterPaint = () => new Promise((resolve) => window.requestAnimationFrame(() => window.setTimeout(resolve, 0)));

/** GET of a JSON path with the typed token: the answer's status and body. */
async function getJson(path) {
  const res = await window.tokentraceFetch(path, { cache: "no-store", headers: authHeaders() });
  return { ok: res.ok, body: await res.json() };
}

function modelsPath(namespace) {
  const q = new window.URLSearchParams({ range: state.range });
  if (namespace) q.set("namespace", namespace);
  return `/v1/dashboard/models?${q}`;
}

function errorsPath(namespace) {
  const q = new window.URLSearchParams({ range: state.range });
  if (namespace) q.set("namespace", namespace);
  return `/v1/dashboard/errors?${q}`;
}

/** Error types shown per row; the rest are counted. */
const TOP_ERROR_TYPES = 3;

/** The "Errors by model" table: per route and model over the range, worst first. Text nodes only: route, model and error type come from traffic. */
function showModelErrors(body) {
  $("model-errors").hidden = body.pipeline === "off";
  const rows = body.rows;
  const table = $("model-errors-table");
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  table.dataset.rows = String(rows.length);
  const failing = rows.filter((r) => r.failed > 0).length;
  const range = `${body.rangeSeconds / 60} min`;
  $("model-errors-note").textContent =
    rows.length === 0
      ? `No LLM calls in the last ${range}.`
      : `LLM calls per route and model over the last ${range} (tokentrace_llm_requests_total; failed: those with an error_type), worst first: ${failing} of ${rows.length} failing${body.truncated > 0 ? ` (and ${body.truncated} more rows)` : ""}.`;
  const cell = (tr, text, className) => {
    const td = tr.insertCell();
    td.append(document.createTextNode(text));
    if (className) td.className = className;
  };
  for (const r of rows) {
    const tr = tbody.insertRow();
    tr.dataset.route = r.route;
    tr.dataset.model = r.model;
    cell(tr, `${r.route} (${r.namespace})`);
    cell(tr, r.model || "(none)");
    cell(tr, String(r.callsPerSecond));
    cell(tr, r.failedShare === null ? "–" : `${(r.failedShare * 100).toFixed(2)}%`, r.failed > 0 ? "bad" : "");
    cell(tr, String(r.failuresPerSecond));
    const top = r.errorTypes.slice(0, TOP_ERROR_TYPES).map((e) => `${e.errorType} ${e.perSecond}/s`);
    if (r.errorTypes.length > TOP_ERROR_TYPES) top.push(`${r.errorTypes.length - TOP_ERROR_TYPES} more`);
    cell(tr, top.join(", ") || "–");
  }
}

async function refresh() {
  // The engine panels' models are asked for beside the series, not after them (a chain the first
  // paint waits on): under the namespace known so far, none on a first visit, which asks for every
  // namespace and keeps the route's below.
  const askedNamespace = state.namespace;
  const models = getJson(modelsPath(askedNamespace)).catch(() => undefined);
  let body;
  try {
    const q = new window.URLSearchParams({ range: state.range });
    if (state.route) q.set("route", state.route);
    if (state.namespace) q.set("namespace", state.namespace);
    if (state.model) q.set("model", state.model);
    const res = await window.tokentraceFetch(`/v1/dashboard/series?${q}`, { cache: "no-store", headers: authHeaders() });
    body = await res.json();
    if (!res.ok) {
      showStatus(describeError(body), true);
      state.route = "";
      return;
    }
  } catch (e) {
    showStatus(`cannot load series: ${e}`, true);
    return;
  }
  fillSelect($("route"), body.routes.map((r) => [`${r.namespace}\u0000${r.route}`, `${r.route} (${r.namespace})`]), body.route === null ? "" : `${body.namespace}\u0000${body.route}`);
  fillSelect($("model"), [["", "all models"], ...body.models.map((m) => [m, m || "(none)"])], body.model ?? "");
  if (body.route !== null) {
    state.route = body.route;
    state.namespace = body.namespace;
    // Not before every script has sent its first request, from the address as loaded (index.html's early answers).
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", keepInUrl, { once: true });
    else keepInUrl();
  }
  const scope = body.model === null ? "all models" : `model ${body.model}`;
  windowSeconds = body.windowSeconds;
  const w = `${body.windowSeconds} s`;
  setCaption("chart-requests", `Requests per second (rate over ${w})`);
  setCaption("chart-errors", `Share of requests by status class (route, every model; over ${w})`);
  setCaption("chart-tokens", `Tokens per second, ${scope} (over ${w})`);
  setCaption("chart-ttft", `Time to first token, streaming, ${scope} (histogram over ${w})`);
  setCaption(
    "chart-decode",
    body.route !== null && !body.histograms.includes("decode")
      ? "Decode: no tokentrace_llm_decode_ms from this route's filters (a filter built before the decode histogram)"
      : `Decode: first token to last byte, streaming, ${scope} (histogram over ${w})`,
  );
  setCaption("chart-duration", `Request duration, every LLM call, ${scope} (histogram over ${w})`);
  setCaption("chart-gpu-util", `GPU utilisation of the route's pods (mean; dcgm-exporter's default counters, DCGM_FI_DEV_GPU_UTIL)`);
  setCaption("chart-gpu-power", `GPU power of the route's pods (sum; dcgm-exporter's default counters, DCGM_FI_DEV_POWER_USAGE)`);
  setCaption("chart-sampling", samplingText(body.sampling, body));
  for (const [id, spec] of Object.entries(PANELS)) {
    if (!charts[id]) charts[id] = createPanel($(id), spec);
    charts[id].setData(body.columns);
  }
  window.tokentraceLengthClasses?.show(body);
  const t = body.columns.t;
  const lastWithData = [...(body.columns.requestsPerSecond || [])].reverse().findIndex((v) => v !== null);
  const lastTime = lastWithData < 0 ? null : t[t.length - 1 - lastWithData];
  if (body.route === null) showStatus(body.pipeline === "off" ? "metrics pipeline off" : "no data yet (the pipeline needs two scrapes of a pod)", false);
  else showStatus(`${body.route} on ${body.pods.join(", ")}: step ${body.stepSeconds} s, last data ${formatTime(lastTime)}`, false);
  window.tokentraceTraces?.setRoute(state.route);
  // The engine panels are below the first screen: they wait until it has been painted.
  await afterPaint();
  firstScreenPainted();
  // The table is below the first screen too, and asked for after it: the browser's six connections
  // to the host are the first answers' until then. The route's namespace is known by now.
  const errors = getJson(errorsPath(state.namespace)).catch(() => undefined);
  let answer = await models;
  // The route chosen is in another namespace than the one asked for: ask again.
  if (askedNamespace && askedNamespace !== state.namespace) answer = await getJson(modelsPath(state.namespace)).catch(() => undefined);
  if (answer?.ok) showEngine(answer.body, state.namespace);
  const failures = await errors;
  if (failures?.ok) showModelErrors(failures.body);
}

/** One engine panel per model of `namespace` (every namespace when empty). */
function showEngine(body, namespace) {
  const shown = namespace ? body.models.filter((m) => m.namespace === namespace) : body.models;
  $("engine-note").textContent =
    shown.length === 0
      ? "No model server reports these signals yet (the pipeline scrapes vLLM, SGLang and TGI as targets of kind vllm)."
      : `Per model: GPU utilisation of its pods, prefix-cache hit ratio and speculative acceptance (mean over pods, step ${body.stepSeconds} s), each alert threshold dashed. All three past their thresholds together is TokentraceGPUBusyKVCacheMissSpecRejected.`;
  for (const m of shown) {
    const key = `${m.namespace}\u0000${m.model}`;
    let chart = engineCharts.get(key);
    if (!chart) {
      const figure = document.createElement("figure");
      const caption = document.createElement("figcaption");
      caption.textContent = `${m.model || "(no model name)"} (${m.namespace}): engine SLO signals`;
      const el = document.createElement("div");
      el.id = `chart-engine-${engineCharts.size}`;
      el.className = "chart";
      el.dataset.model = m.model;
      el.dataset.points = "0";
      figure.append(caption, el);
      $("engine-panels").append(figure);
      chart = createPanel(el, { unit: "ratio", series: [...ENGINE_SERIES, ...THRESHOLD_SERIES] });
      chart.figure = figure;
      engineCharts.set(key, chart);
      charts[el.id] = chart;
    }
    const columns = { ...m.columns };
    for (const s of ENGINE_SERIES) columns[`${s.key}Threshold`] = m.columns.t.map(() => body.thresholds[s.key]);
    chart.setData(columns);
    renderAdapters(chart, m.adapters ?? [], body.adapterWindowSeconds ?? 300);
  }
}

/**
 * The LoRA adapters of a base model after its panel, the grid's whole width: per adapter, its calls
 * as the sidecars of the pods that load it saw them over the last `windowSeconds` (requests/s,
 * tokens/s in and out, P99 TTFT and duration), then where it has requests running and waiting now
 * (vLLM says which adapters, not how many requests).
 */
function renderAdapters(chart, adapters, windowSeconds) {
  if (adapters.length === 0) {
    chart.adapters?.remove();
    chart.adapters = undefined;
    return;
  }
  if (!chart.adapters) {
    chart.adapters = document.createElement("div");
    chart.adapters.className = "adapters-row";
    chart.adapters.append(document.createElement("table"));
    chart.adapters.firstChild.className = "adapters";
    chart.adapters.firstChild.dataset.model = chart.figure.querySelector(".chart")?.dataset.model ?? "";
    chart.figure.after(chart.adapters);
  }
  const table = chart.adapters.firstChild;
  const { formatAxis } = window.tokentraceCharts;
  const caption = document.createElement("caption");
  caption.textContent = `LoRA adapters: their calls over the last ${windowSeconds / 60} min on the pods that load them, and where they run now`;
  const head = document.createElement("tr");
  for (const h of ["LoRA adapter", "requests/s", "tokens/s in / out", "TTFT P99", "duration P99", "running on", "waiting on", "loaded on"]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  const num = (v, unit) => (v === null || v === undefined ? "-" : formatAxis(v, unit));
  const rows = adapters.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.adapter = a.adapter;
    const cells = [
      a.adapter,
      num(a.requestsPerSecond, "/s"),
      a.inputTokensPerSecond === null || a.inputTokensPerSecond === undefined ? "-" : `${num(a.inputTokensPerSecond, "/s")} / ${num(a.outputTokensPerSecond, "/s")}`,
      num(a.ttftP99Ms, "ms"),
      num(a.durationP99Ms, "ms"),
      a.runningPods.join(", ") || "-",
      a.waitingPods.join(", ") || "-",
      a.pods.join(", "),
    ];
    for (const v of cells) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    if (a.waitingPods.length > 0) tr.className = "waiting";
    return tr;
  });
  table.replaceChildren(caption, head, ...rows);
}

async function loadStatus() {
  const res = await window.tokentraceFetch("/v1/dashboard/status", { cache: "no-store", headers: authHeaders() });
  const body = await res.json();
  if (!res.ok) return;
  const banner = $("banner");
  banner.hidden = body.pipeline.enabled;
  banner.textContent = body.pipeline.enabled ? "" : body.pipeline.hint;
  $("charts").hidden = !body.pipeline.enabled;
  $("engine").hidden = !body.pipeline.enabled;
  window.tokentraceTraces?.configure(body.traces);
}

$("route").addEventListener("change", (e) => {
  const [namespace, route] = e.target.value.split("\u0000");
  state.namespace = namespace;
  state.route = route;
  state.model = "";
  void refresh();
});
$("model").addEventListener("change", (e) => {
  state.model = e.target.value;
  void refresh();
});
$("range").addEventListener("change", (e) => {
  state.range = e.target.value;
  void refresh();
});
window.addEventListener("resize", () => Object.values(charts).forEach((c) => c.resize()));
// A token typed (or changed) may open reads that were refused: load again with it.
$("token").addEventListener("change", () => {
  void loadStatus().then(refresh);
  window.tokentracePolicies?.tokenChanged();
});

// Status and series side by side: the charts do not wait for the banner.
void loadStatus().catch(() => undefined);
const firstRefresh = refresh().catch(() => undefined);
// The sections below the golden signals build their panels once the first screen is painted, so
// their work does not hold it back (gpu.js, keep.js, engine.js wait on this); at most 3 s.
const firstScreen = Promise.race([firstScreenShown, firstRefresh, new Promise((resolve) => window.setTimeout(resolve, 3000))]);
window.tokentraceDashboard = { charts, refresh, authHeaders, describeError, firstScreen };
// The golden-signal panels are built while the answers are on their way: once the page's other
// scripts have sent their requests too (DOMContentLoaded comes after every script has run).
document.addEventListener("DOMContentLoaded", () => {
  for (const [id, spec] of Object.entries(PANELS)) if (!charts[id]) charts[id] = createPanel($(id), spec);
});
// The policy editor's two requests wait for the charts' answers (a browser opens six connections to a host), or 2 s.
void Promise.race([firstRefresh, new Promise((r) => window.setTimeout(r, 2000))]).finally(() => window.tokentracePolicies.start());
window.setInterval(() => void refresh(), REFRESH_MS);
