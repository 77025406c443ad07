// The "Latency by length class" panel of the route: TTFT by input-length class, duration and decode
// by output-length class, over the page's range (the series answer's lengthClasses, drawn by app.js
// at each refresh). Class names come from traffic: text nodes only.
/* global document, window */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  const cell = (tr, text) => {
    const td = tr.insertCell();
    td.append(document.createTextNode(text));
  };

  const ms = (v) => window.tokentraceCharts.formatValue(v, "ms");
  const calls = (v) => (v >= 1000 ? window.tokentraceCharts.formatValue(v, "") : String(Math.round(v)));
  const share = (part, all) => (all > 0 ? `${((part / all) * 100).toFixed(1)} %` : "–");

  /** One table's rows; `columns` makes a row's cells after the class, the calls and their share. */
  function fill(table, rows, columns) {
    const all = rows.reduce((n, r) => n + r.calls, 0);
    const tbody = table.tBodies[0];
    tbody.replaceChildren();
    table.dataset.rows = String(rows.length);
    for (const r of rows) {
      const tr = tbody.insertRow();
      tr.dataset.lengthClass = r.lengthClass;
      cell(tr, r.lengthClass);
      cell(tr, calls(r.calls));
      cell(tr, share(r.calls, all));
      for (const text of columns(r)) cell(tr, text);
    }
  }

  /** Draws the series answer's lengthClasses (null without a route). */
  function show(body) {
    const figure = $("length-classes");
    if (!figure) return;
    const lc = body.lengthClasses;
    const scope = body.model === null ? "all models" : `model ${body.model}`;
    $("length-classes-caption").textContent = `Latency by length class, ${scope} (over the last ${body.rangeSeconds / 60} min)`;
    const input = lc?.ttft ?? [];
    const decode = new Map((lc?.decode ?? []).map((r) => [r.lengthClass, r]));
    const output = lc?.duration ?? [];
    fill($("length-class-input"), input, (r) => [ms(r.p50), ms(r.p99)]);
    fill($("length-class-output"), output, (r) => [ms(r.p50), ms(r.p99), ms(decode.get(r.lengthClass)?.p99 ?? null)]);
    const none = body.route !== null && input.length === 0 && output.length === 0;
    $("length-classes-note").textContent = none
      ? "No length class on this route's histograms: the filter labels them (llm.lengthClasses, on by default) once Istio's extraStatTags list input_length and output_length."
      : "A P99 of 20% long prompts and a P99 of a slow engine look the same; per length class they do not.";
  }

  window.tokentraceLengthClasses = { show };
})();
