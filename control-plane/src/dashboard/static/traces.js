// The traces section, as a Jaeger search page reads: the newest sampled LLM calls of the route
// (duration, TTFT, tokens, status, model), filters for errors and a minimum duration, a lookup by
// x-token-trace-id or trace id, a row's whole trace as a waterfall on click (waterfall.js), the
// calls of one chart point's window above its value (showWindow, from a click on a latency chart),
// and each trace id linked to the tracing UI through the configured template ({traceId},
// {spanId}, {startMs}, {endMs}).
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
  /** A latency chart's point: calls started in [fromMs, toMs] at least as slow as its value. */
  let windowFilter = null;

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
        void openTrace(c);
      });
    }
  }

  /** Every span of the call's trace (the model server's too) as a waterfall, the call's attributes below. */
  async function openTrace(call) {
    $("trace-detail").textContent = JSON.stringify(call, null, 2);
    $("trace-raw").hidden = false;
    const res = await fetch(`/v1/dashboard/traces?id=${encodeURIComponent(call.traceId)}`, { cache: "no-store", headers: dash().authHeaders() });
    const body = await res.json();
    const box = $("trace-waterfall");
    if (!res.ok) {
      box.textContent = dash().describeError(body);
      box.hidden = false;
      return;
    }
    window.tokentraceWaterfall.render(box, body.items.length > 0 ? body.items : [call]);
    box.dataset.spans = String(body.items.length);
    box.hidden = false;
  }

  async function load() {
    if (!enabled) return;
    const q = new window.URLSearchParams();
    if (lookupId) q.set("id", lookupId);
    else {
      if (windowFilter) {
        q.set("fromMs", String(Math.floor(windowFilter.fromMs)));
        q.set("toMs", String(Math.ceil(windowFilter.toMs)));
        q.set(windowFilter.metric === "ttft" ? "minTtftMs" : "minDurationMs", String(Math.floor(windowFilter.minMs)));
      }
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
    // A lookup answers every span of the trace; the table lists its LLM calls (the waterfall shows the rest).
    const calls = body.items.filter((c) => c.operation !== "");
    const rows = calls.length > 0 ? calls : body.items;
    render(rows);
    result.className = "";
    result.textContent = lookupId
      ? body.items.length === 0
        ? `no span with trace id or x-token-trace-id ${lookupId} among the newest ${body.held} spans (only sampled requests are exported)`
        : `${rows.length} call(s) for ${lookupId}, ${body.items.length} span(s) in the trace`
      : `${body.items.length} newest of ${body.held} spans held (at most ${body.maxSpans})`;
    $("trace-table").dataset.rows = String(rows.length);
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
  $("trace-window-clear").addEventListener("click", () => {
    windowFilter = null;
    $("trace-window").hidden = true;
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
    /** From a latency chart's point: the calls of its window at or above its value (`metric`: "ttft" or "duration"). */
    showWindow(filter) {
      windowFilter = filter;
      lookupId = "";
      $("trace-window-text").textContent = `calls started ${formatTime(filter.fromMs / 1000)}–${formatTime(filter.toMs / 1000)} with ${filter.metric === "ttft" ? "TTFT" : "duration"} ≥ ${formatValue(filter.minMs, "ms")} (${filter.label} of that window)`;
      $("trace-window").hidden = false;
      $("traces").scrollIntoView({ block: "start" });
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
