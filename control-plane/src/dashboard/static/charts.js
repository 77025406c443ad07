// Panels drawn with uPlot, the way a Grafana time-series panel behaves: one shared crosshair across
// every panel (uPlot cursor sync), one time format (24-hour HH:MM:SS, local time) on every axis and
// legend, and a legend table under each panel with the value at the cursor, last, mean and max over
// the range; a click on a legend row hides or shows that series.
/* global document, uPlot, window */
"use strict";

(() => {
  const SYNC_KEY = "tokentrace";

  /** Steps between time ticks (seconds). */
  const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200];

  /** The one time format of the page. */
  function formatTime(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const d = new Date(seconds * 1000);
    const two = (n) => String(n).padStart(2, "0");
    return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }

  const rounded = (v) => {
    const abs = Math.abs(v);
    return abs >= 100 ? v.toFixed(0) : abs >= 10 ? v.toFixed(1) : abs >= 1 ? v.toFixed(2) : v.toFixed(3);
  };

  /** A value with its unit, rounded for reading: ms as s from 1,000 ms, counts and rates with k and M. */
  function formatValue(v, unit) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    if (unit === "%") return `${v.toFixed(v < 10 ? 2 : 1)} %`;
    if (unit === "ratio") return `${(v * 100).toFixed(v < 0.1 ? 2 : 1)} %`;
    const abs = Math.abs(v);
    if (unit === "ms" && abs >= 1000) return `${rounded(v / 1000)} s`;
    if (unit === "" || unit === "/s") {
      const [scaled, prefix] = abs >= 1e6 ? [v / 1e6, "M"] : abs >= 1e3 ? [v / 1e3, "k"] : [v, ""];
      return `${rounded(scaled)}${prefix}${unit === "" ? "" : ` ${unit}`}`;
    }
    return `${rounded(v)} ${unit}`;
  }

  /** An axis label: the value's reading without trailing zeros, latencies with their unit ("250 ms", "1.5 s"), rates without "/s" (the caption says it). */
  function formatAxis(v, unit) {
    return formatValue(v, unit)
      .replace(/(\.\d*?)0+(?=\D|$)/, "$1")
      .replace(/\.(?=\D|$)/, "")
      .replace(/ (W|\/s)$/, "");
  }

  function summary(values) {
    let last = null;
    let sum = 0;
    let n = 0;
    let max = null;
    for (const v of values) {
      if (v === null || v === undefined) continue;
      last = v;
      sum += v;
      n++;
      if (max === null || v > max) max = v;
    }
    return { last, mean: n > 0 ? sum / n : null, max };
  }

  // Where alerts started (alerts.js sets them): a vertical mark on every panel at each activeAt.
  let markers = [];
  const panels = new Set();

  /** Draws `markers` ({tSec, label, state}) as vertical lines in the panel's overlay. */
  function drawMarkers(u) {
    for (const old of u.over.querySelectorAll(".alert-mark")) old.remove();
    const [min, max] = [u.scales.x.min, u.scales.x.max];
    if (min === undefined || max === undefined || min === null || max === null) return;
    for (const m of markers) {
      if (m.tSec < min || m.tSec > max) continue;
      const mark = document.createElement("div");
      mark.className = `alert-mark ${m.state}`;
      mark.style.left = `${u.valToPos(m.tSec, "x")}px`;
      mark.title = `${m.label}: ${m.state} since ${formatTime(m.tSec)}`;
      mark.dataset.alert = m.label;
      u.over.appendChild(mark);
    }
  }

  /** Sets the alert marks of every panel, now and for panels created later. */
  function setMarkers(list) {
    markers = list;
    for (const plot of panels) {
      if (plot.root.isConnected) drawMarkers(plot);
      else panels.delete(plot);
    }
  }

  // Panels are created in batches (a section's per-model figures in one loop): reading a width after
  // each panel's writes forced the browser to lay the page out again per panel. One measure per
  // grid per task; a grid's 1fr columns are as wide for every panel in it.
  const widths = new Map();
  function widthOf(el) {
    const grid = el.closest(".charts") || el.parentElement || el;
    let w = widths.get(grid);
    if (w === undefined) {
      if (widths.size === 0) queueMicrotask(() => widths.clear());
      w = Math.max(280, el.clientWidth || 420);
      widths.set(grid, w);
    }
    return w;
  }

  /**
   * A panel: a uPlot chart in `el` and its legend table; `spec` = {series: [{key, label, stroke,
   * dash?, scale?}], unit, units?, onPick?} (a series with scale "y2" is drawn against a right-hand
   * axis, in units.y2 where given: a ratio beside a count); onPick({tSeconds, key, label, value}) is called on a click on the plot.
   */
  function createPanel(el, spec) {
    const width = widthOf(el);
    const unit = spec.unit;
    const unitOf = (scale) => (spec.units && scale in spec.units ? spec.units[scale] : unit);
    const seriesUnits = spec.series.map((s) => unitOf(s.scale ?? "y"));
    const plotEl = document.createElement("div");
    const legend = document.createElement("table");
    legend.className = "legend";
    el.replaceChildren(plotEl, legend);
    const head = legend.createTHead().insertRow();
    for (const h of ["", "at cursor", "last", "mean", "max"]) {
      const th = document.createElement("th");
      th.textContent = h;
      head.appendChild(th);
    }
    const body = legend.createTBody();
    const rows = spec.series.map((s, i) => {
      const tr = body.insertRow();
      tr.dataset.series = s.key;
      const name = tr.insertCell();
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.borderColor = s.stroke;
      if (s.dash) swatch.style.borderTopStyle = "dashed";
      name.append(swatch, s.label);
      const cells = [tr.insertCell(), tr.insertCell(), tr.insertCell(), tr.insertCell()];
      tr.addEventListener("click", () => {
        const shown = !plot.series[i + 1].show;
        plot.setSeries(i + 1, { show: shown });
        tr.classList.toggle("hidden", !shown);
      });
      return { cells };
    });

    const updateCursorColumn = (u) => {
      const idx = u.cursor.idx;
      head.cells[1].textContent = idx === null || idx === undefined ? "at cursor" : formatTime(u.data[0][idx]);
      rows.forEach((r, i) => {
        r.cells[0].textContent = idx === null || idx === undefined ? "" : formatValue(u.data[i + 1][idx], seriesUnits[i]);
      });
    };

    // A click names the point under the cursor and the shown series nearest to it (a percentile line).
    const pick = (u) => {
      const idx = u.cursor.idx;
      if (idx === null || idx === undefined || u.cursor.top === undefined || u.cursor.top < 0) return;
      const y = u.posToVal(u.cursor.top, "y");
      let best = null;
      spec.series.forEach((s, i) => {
        const v = u.data[i + 1][idx];
        if (!u.series[i + 1].show || v === null || v === undefined) return;
        if (best === null || Math.abs(v - y) < Math.abs(best.value - y)) best = { key: s.key, label: s.label, value: v };
      });
      if (best !== null) spec.onPick({ tSeconds: u.data[0][idx], ...best });
    };

    const range = (u, min, max) => [Math.min(0, min ?? 0), max === null || max <= 0 ? 1 : max * 1.1];
    const yScales = [...new Set(["y", ...spec.series.map((s) => s.scale ?? "y")])];
    const plot = new uPlot(
      {
        width,
        height: 180,
        legend: { show: false },
        cursor: { sync: { key: SYNC_KEY, setSeries: false }, drag: { x: false, y: false } },
        scales: { x: { time: true }, ...Object.fromEntries(yScales.map((k) => [k, { range }])) },
        series: [{ value: (u, v) => formatTime(v) }, ...spec.series.map((s) => ({ label: s.label, scale: s.scale ?? "y", stroke: s.stroke, dash: s.dash, width: 1.6, spanGaps: false, points: { show: false } }))],
        // A series on a scale of its own (spec.series[].scale) gets an axis on the right: magnitudes apart stay readable.
        axes: [
          // uPlot's own time steps jump from 1 to 5 minutes: 5 minutes on a narrow panel got one tick.
          { space: 90, incrs: TIME_INCRS, values: (u, splits) => splits.map(formatTime) },
          ...yScales.map((k, i) => ({ scale: k, side: i === 0 ? 3 : 1, size: 64, grid: { show: i === 0 }, values: (u, splits) => splits.map((v) => formatAxis(v, unitOf(k))) })),
        ],
        hooks: { setCursor: [updateCursorColumn], draw: [drawMarkers], ready: spec.onPick ? [(u) => u.over.addEventListener("click", () => pick(u))] : [] },
      },
      [[], ...spec.series.map(() => [])],
      plotEl,
    );
    panels.add(plot);

    return {
      plot,
      spec,
      /** Sets the columns; returns how many non-null values the panel holds. */
      setData(columns) {
        const data = [columns.t || [], ...spec.series.map((s) => columns[s.key] || [])];
        plot.setData(data);
        let held = 0;
        spec.series.forEach((s, i) => {
          const values = data[i + 1];
          held += values.filter((v) => v !== null && v !== undefined).length;
          const { last, mean, max } = summary(values);
          rows[i].cells[1].textContent = formatValue(last, seriesUnits[i]);
          rows[i].cells[2].textContent = formatValue(mean, seriesUnits[i]);
          rows[i].cells[3].textContent = formatValue(max, seriesUnits[i]);
        });
        updateCursorColumn(plot);
        el.dataset.points = String(held);
        return held;
      },
      resize() {
        plot.setSize({ width: Math.max(280, el.clientWidth || 420), height: 180 });
      },
    };
  }

  window.tokentraceCharts = { createPanel, formatTime, formatValue, formatAxis, setMarkers };
})();
