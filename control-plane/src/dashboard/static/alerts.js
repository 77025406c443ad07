// The alert list (/v1/dashboard/alerts): firing and pending alerts from the configured
// Prometheus's rules API with their summary, description and runbook, "alerts unavailable" when
// a read fails, and what to configure when no Prometheus is; each alert's start (activeAt) is
// marked on every chart (charts.js setMarkers).
/* global document, window */
"use strict";

(() => {
  const REFRESH_MS = 5000;
  const $ = (id) => document.getElementById(id);
  const { formatTime, setMarkers } = window.tokentraceCharts;

  /** A cell of text only (alert annotations come from rule files and label values). */
  const cell = (tr, text) => tr.insertCell().append(document.createTextNode(text));

  function render(body) {
    const tbody = $("alert-table").tBodies[0];
    tbody.replaceChildren();
    $("alert-table").dataset.rows = String(body.alerts.length);
    if (body.source === "none") $("alerts-note").textContent = body.hint;
    else if (!body.available) $("alerts-note").textContent = `Alerts unavailable (${body.reason}: ${body.detail}); read from ${body.from}.`;
    else $("alerts-note").textContent = `${body.alerts.length} firing or pending${body.truncated > 0 ? ` (and ${body.truncated} more)` : ""}, from ${body.from} at ${formatTime(Date.parse(body.readAt) / 1000)}.`;
    for (const a of body.alerts) {
      const tr = tbody.insertRow();
      tr.className = a.state;
      tr.dataset.alert = a.name;
      cell(tr, a.name);
      cell(tr, a.severity === null ? a.state : `${a.state} (${a.severity})`);
      cell(tr, formatTime(a.activeAtMs / 1000));
      const text = tr.insertCell();
      text.append(document.createTextNode(a.summary ?? ""));
      if (a.description) text.append(document.createElement("br"), document.createTextNode(a.description));
      const runbook = tr.insertCell();
      if (a.runbookUrl) runbook.append(Object.assign(document.createElement("a"), { href: a.runbookUrl, textContent: "runbook", rel: "noopener noreferrer", target: "_blank" }));
      else if (a.runbook) runbook.append(Object.assign(document.createElement("details"), { textContent: a.runbook }));
    }
    setMarkers(body.alerts.map((a) => ({ tSec: a.activeAtMs / 1000, label: a.name, state: a.state })));
  }

  async function refresh() {
    const dashboard = window.tokentraceDashboard;
    try {
      const res = await fetch("/v1/dashboard/alerts", { cache: "no-store", headers: dashboard ? dashboard.authHeaders() : {} });
      const body = await res.json();
      if (!res.ok) {
        $("alerts-note").textContent = dashboard ? dashboard.describeError(body) : String(body.error);
        return;
      }
      render(body);
    } catch (error) {
      $("alerts-note").textContent = `Alerts unavailable: ${error}`;
    }
  }

  refresh();
  window.setInterval(refresh, REFRESH_MS);
})();
