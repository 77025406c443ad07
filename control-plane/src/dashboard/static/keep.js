// The keep-reasons panel (/v1/dashboard/keep): for the page's route, why its sidecars exported
// spans (the head decision, a force rule, tail keep for slow or failed requests) and what the span
// budget dropped, as rates; beside it the tail-keep thresholds in force for the route and each model
// (the live ones the control plane serves, their floor and ceiling, the static fallback). The route
// and range are the page's (kept in its address by app.js).
/* global document, window */
"use strict";

(() => {
  const REFRESH_MS = 2000;
  const { createPanel } = window.tokentraceCharts;
  const $ = (id) => document.getElementById(id);

  const SPEC = {
    unit: "/s",
    series: [
      { key: "keptHeadPerSecond", label: "head (sampled)", stroke: "#2f6fd0" },
      { key: "keptForcedPerSecond", label: "forced", stroke: "#7b1fa2" },
      { key: "keptSlowPerSecond", label: "slow (tail keep)", stroke: "#e08a00" },
      { key: "keptErrorPerSecond", label: "error (tail keep)", stroke: "#c62828" },
      { key: "budgetDroppedPerSecond", label: "dropped for the budget", stroke: "#616161", dash: [5, 3] },
    ],
  };

  let panel = null;

  const ms = (v) => (v === null ? "–" : `${v} ms`);

  /** One table row of cells (text only: route and model names come from sidecars). */
  function row(cells, head) {
    const tr = document.createElement("tr");
    for (const text of cells) tr.append(Object.assign(document.createElement(head ? "th" : "td"), { textContent: text }));
    return tr;
  }

  function describe(body) {
    const t = body.thresholds;
    if (body.route === null) return body.pipeline === "off" ? "The metrics pipeline is off." : "No route with data yet.";
    if (t === null) return `No policy targets namespace ${body.namespace}: its sidecars keep by their start-up configuration.`;
    if (!t.tailKeep) return `Policy ${t.policy} has no tail keep (spans.keep): only sampled and forced requests are exported.`;
    const parts = [`Policy ${t.policy}: tail keep ${t.errors ? "keeps errors and" : "keeps"} requests slower than the threshold for their route and model`];
    parts.push(t.staticMs === null ? "no static threshold" : `static ${t.staticMs} ms (${t.staticFrom}) where no live entry applies`);
    if (t.budgetTracesPerSecond !== null) parts.push(`budget ${t.budgetTracesPerSecond} traces/s`);
    parts.push(t.liveFrom !== null ? `live thresholds ${t.liveFrom}` : "no live thresholds (this control plane computes none: adaptive.liveThresholds or the metrics pipeline is off)");
    if (t.settings !== null) parts.push(`P${Math.round(t.settings.quantile * 100)} x ${t.settings.margin} over ${t.settings.windowSeconds} s, every ${t.settings.intervalSeconds} s, between ${t.settings.floorMs} and ${t.settings.ceilingMs} ms`);
    return `${parts.join("; ")}.`;
  }

  async function refresh() {
    const page = new window.URLSearchParams(window.location.search);
    const q = new window.URLSearchParams({ range: page.get("range") || "900" });
    for (const key of ["route", "namespace"]) if (page.get(key)) q.set(key, page.get(key));
    const dashboard = window.tokentraceDashboard;
    const res = await window.tokentraceFetch(`/v1/dashboard/keep?${q}`, { cache: "no-store", headers: dashboard ? dashboard.authHeaders() : {} });
    const body = await res.json();
    await dashboard?.firstScreen;
    if (!res.ok) {
      $("keep-note").textContent = dashboard ? dashboard.describeError(body) : String(body.error);
      return;
    }
    $("keep").hidden = body.pipeline === "off";
    if (!panel) {
      panel = createPanel($("chart-keep"), SPEC);
      if (dashboard?.charts) dashboard.charts["chart-keep"] = panel;
    }
    document.querySelector('[data-caption-for="chart-keep"]').textContent =
      body.route === null ? "Spans exported per second, by why" : `Spans exported per second by why, ${body.route} (${body.namespace}), every model (rate over ${body.windowSeconds} s)`;
    panel.setData(body.columns);
    $("keep-note").textContent = describe(body);
    const table = $("keep-thresholds");
    const live = body.thresholds?.live ?? [];
    table.dataset.rows = String(live.length);
    const settings = body.thresholds?.settings ?? null;
    table.tBodies[0].replaceChildren(
      ...live.map((l) => {
        const tr = row([l.model ?? "(every model)", ms(l.durationMs), ms(l.ttftMs), settings ? `${settings.floorMs} – ${settings.ceilingMs} ms` : "–"]);
        tr.dataset.model = l.model ?? "";
        return tr;
      }),
    );
  }

  window.tokentraceKeep = { refresh };
  void refresh().catch(() => undefined);
  window.setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
})();
