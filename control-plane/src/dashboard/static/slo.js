// The SLO view (/v1/dashboard/slo): per route and model the objective, goodput, 30-day error budget
// left and the fast and slow burn from the configured Prometheus (the SLO records of
// prometheus-rules.yaml), worst first; a burn past its alert's threshold is marked; "SLO
// unavailable" when a read fails, and what to configure when no Prometheus is.
/* global document, window */
"use strict";

(() => {
  const REFRESH_MS = 15000;
  const $ = (id) => document.getElementById(id);
  const { formatTime } = window.tokentraceCharts;

  const percent = (v) => (v === null ? "–" : `${(v * 100).toFixed(2)}%`);
  const times = (v) => (v === null ? "–" : `${v.toFixed(2)}x`);
  const cell = (tr, text, className) => {
    const td = tr.insertCell();
    td.append(document.createTextNode(text));
    if (className) td.className = className;
  };

  function render(body) {
    const tbody = $("slo-table").tBodies[0];
    tbody.replaceChildren();
    const rows = [...body.ttft.map((r) => ({ ...r, sli: "TTFT" })), ...body.errors.map((r) => ({ ...r, sli: "errors" }))];
    $("slo-table").dataset.rows = String(rows.length);
    if (body.source === "none") $("slo-note").textContent = body.hint;
    else if (!body.available) $("slo-note").textContent = `SLO unavailable (${body.reason}: ${body.detail}); read from ${body.from}.`;
    else $("slo-note").textContent = `${rows.length} objectives${body.truncated > 0 ? ` (and ${body.truncated} more)` : ""}, worst burn first; goodput over ${body.windows.goodput}, budget over ${body.windows.budget}; from ${body.from} at ${formatTime(Date.parse(body.readAt) / 1000)}.`;
    $("slo-burn-fast").textContent = `burn ${body.windows.burnFast.window} (page > ${body.windows.burnFast.threshold})`;
    $("slo-burn-slow").textContent = `burn ${body.windows.burnSlow.window} (ticket > ${body.windows.burnSlow.threshold})`;
    for (const r of rows) {
      const tr = tbody.insertRow();
      tr.dataset.slo = `${r.sli} ${r.namespace}/${r.route}${r.model === undefined ? "" : ` ${r.model}`}`;
      cell(tr, r.sli);
      cell(tr, `${r.namespace}/${r.route}`);
      cell(tr, r.model ?? "all");
      cell(tr, percent(r.objective));
      cell(tr, percent(r.goodput), r.goodput !== null && r.objective !== null && r.goodput < r.objective ? "bad" : "");
      cell(tr, percent(r.budgetLeft), r.budgetLeft !== null && r.budgetLeft < 0 ? "bad" : "");
      cell(tr, times(r.burnFast), r.burnFast !== null && r.burnFast > body.windows.burnFast.threshold ? "bad" : "");
      cell(tr, times(r.burnSlow), r.burnSlow !== null && r.burnSlow > body.windows.burnSlow.threshold ? "bad" : "");
    }
  }

  async function refresh() {
    const dashboard = window.tokentraceDashboard;
    try {
      const res = await fetch("/v1/dashboard/slo", { cache: "no-store", headers: dashboard ? dashboard.authHeaders() : {} });
      const body = await res.json();
      if (!res.ok) {
        $("slo-note").textContent = dashboard ? dashboard.describeError(body) : String(body.error);
        return;
      }
      render(body);
    } catch (error) {
      $("slo-note").textContent = `SLO unavailable: ${error}`;
    }
  }

  refresh();
  window.setInterval(refresh, REFRESH_MS);
})();
