// The traces section, as a Jaeger search page reads: the newest sampled LLM calls of the route
// (duration, TTFT, tokens, status, model), filters for errors and a minimum duration, a lookup by
// x-token-trace-id or trace id, a row's span details on click, and each trace id linked to the
// tracing UI through the configured template ({traceId}, {spanId}, {startMs}, {endMs}).
/* global document, window */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const dash = () => window.tokentraceDashboard;
  const { formatTime, formatValue } = window.tokentraceCharts;
  let enabled = false;
  let linkTemplate = "";
  let route = "";
  let lookupId = "";

  function linkFor(call) {
    if (!linkTemplate) return null;
    return linkTemplate
      .replaceAll("{traceId}", encodeURIComponent(call.traceId))
      .replaceAll("{spanId}", encodeURIComponent(call.spanId))
      .replaceAll("{startMs}", String(Math.floor(call.startMs) - 60_000))
      .replaceAll("{endMs}", String(Math.ceil(call.startMs + call.durationMs) + 60_000));
  }

  function statusText(call) {
    const http = call.httpStatus === null ? "reset" : String(call.httpStatus);
    return call.statusCode === 2 ? `${http} error` : http;
  }

  function render(items) {
    const tbody = $("trace-table").tBodies[0];
    tbody.replaceChildren();
    for (const c of items) {
      const tr = tbody.insertRow();
      tr.dataset.traceId = c.traceId;
      tr.dataset.tokenTraceId = c.tokenTraceId;
      if (c.statusCode === 2 || (c.httpStatus ?? 0) >= 400) tr.className = "failed";
      const cells = [formatTime(c.startMs / 1000), c.model || "–", statusText(c), formatValue(c.durationMs, "ms"), formatValue(c.ttftMs, "ms"), `${c.inputTokens ?? "–"} / ${c.outputTokens ?? "–"}`, c.tokenTraceId || "–"];
      for (const text of cells) tr.insertCell().textContent = text;
      const idCell = tr.insertCell();
      const href = linkFor(c);
      if (href) {
        const a = document.createElement("a");
        a.href = href;
        a.target = "_blank";
        a.rel = "noopener";
        a.textContent = c.traceId;
        idCell.appendChild(a);
      } else idCell.textContent = c.traceId;
      tr.addEventListener("click", (e) => {
        if (e.target.tagName === "A") return;
        const pre = $("trace-detail");
        pre.textContent = JSON.stringify(c, null, 2);
        pre.hidden = false;
      });
    }
  }

  async function load() {
    if (!enabled) return;
    const q = new window.URLSearchParams();
    if (lookupId) q.set("id", lookupId);
    else {
      if (route) q.set("route", route);
      if ($("trace-errors").checked) q.set("errors", "true");
      const min = $("trace-min-ms").value.trim();
      if (min !== "") q.set("minDurationMs", min);
    }
    const res = await fetch(`/v1/dashboard/traces?${q}`, { cache: "no-store", headers: dash().authHeaders() });
    const body = await res.json();
    const result = $("trace-result");
    if (!res.ok) {
      result.textContent = dash().describeError(body);
      result.className = "error";
      return;
    }
    render(body.items);
    result.className = "";
    result.textContent = lookupId
      ? body.items.length === 0
        ? `no span with trace id or x-token-trace-id ${lookupId} among the newest ${body.held} spans (only sampled requests are exported)`
        : `${body.items.length} span(s) for ${lookupId}`
      : `${body.items.length} newest of ${body.held} spans held (at most ${body.maxSpans})`;
    $("trace-table").dataset.rows = String(body.items.length);
  }

  $("trace-lookup").addEventListener("submit", (e) => {
    e.preventDefault();
    lookupId = $("trace-id").value.trim();
    void load();
  });
  $("trace-clear").addEventListener("click", () => {
    lookupId = "";
    $("trace-id").value = "";
    void load();
  });
  $("trace-errors").addEventListener("change", () => void load());
  $("trace-min-ms").addEventListener("change", () => void load());

  window.tokentraceTraces = {
    configure(traces) {
      enabled = traces.enabled;
      linkTemplate = traces.linkTemplate || "";
      $("trace-lookup").hidden = !enabled;
      $("trace-table").hidden = !enabled;
      $("traces-off").hidden = enabled;
      $("traces-off").textContent = enabled ? "" : traces.hint;
      void load();
    },
    setRoute(r) {
      route = r;
      $("traces-route").textContent = r ? `on route ${r}` : "";
      // The list follows new calls; a lookup result stays until cleared.
      if (!lookupId) void load();
    },
  };
})();
