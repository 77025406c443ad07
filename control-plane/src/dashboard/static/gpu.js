// The GPU health panel family (/v1/dashboard/gpus): per pod of the route's namespace, its GPUs'
// utilisation beside SM, tensor and DRAM activity, busy-but-starved against its threshold, the
// spread across its cards, throttling and temperature, and its GPUs' current problems (XIDs, memory
// errors). Every caption says what the panel needs dcgm-exporter to export. One group of panels per
// pod, created as pods appear; the namespace and range are the page's (kept in its address).
/* global document, window */
"use strict";

(() => {
  const REFRESH_MS = 2000;
  const { createPanel } = window.tokentraceCharts;
  const $ = (id) => document.getElementById(id);

  const ACTIVITY = [
    { key: "utilization", label: "utilisation (a kernel ran)", stroke: "#2e7d32" },
    { key: "smActive", label: "SM activity", stroke: "#2f6fd0" },
    { key: "tensorActive", label: "tensor pipe", stroke: "#7b1fa2" },
    { key: "dramActive", label: "DRAM", stroke: "#e08a00" },
    { key: "smOccupancy", label: "SM occupancy", stroke: "#00897b", dash: [5, 3] },
  ];

  /** The panels of one pod: suffix, caption from the answer, spec, and whether the pod has them. */
  const PANELS = [
    ["activity", (b, p) => `Utilisation beside SM activity (${p.smSource === "sm_active" ? "DCGM_FI_PROF_SM_ACTIVE" : p.smSource === "gr_engine_active" ? "DCGM_FI_PROF_GR_ENGINE_ACTIVE: SM_ACTIVE not exported" : "none"}), tensor and DRAM activity. Needs: ${b.needs.activity}.`, { unit: "ratio", series: ACTIVITY }, () => true],
    [
      "starved",
      (b, p) => `Busy but starved: activity per busy second (${p.basis ?? "none yet"}) against its threshold (dashed), at ${b.thresholds.busyUtilizationPercent}% utilisation or more is TokentraceGPUBusyButStarved. Needs: ${b.needs.starved}.`,
      { unit: "ratio", series: [{ key: "activityWhileBusy", label: "activity per busy second (least active GPU)", stroke: "#c62828" }, { key: "starvedThreshold", label: "starved below", stroke: "#c62828", dash: [4, 4] }] },
      () => true,
    ],
    [
      "spread",
      (b) => `Stragglers: spread across the pod's cards (utilisation as a share of 100%, memory as a share of the fullest card), ${b.thresholds.stragglerUtilizationSpreadPercent} points or ${b.thresholds.stragglerMemorySpreadRatio * 100}% is TokentraceGPUStraggler. Needs: ${b.needs.stragglers}.`,
      { unit: "ratio", series: [{ key: "utilizationSpread", label: "utilisation spread", stroke: "#2f6fd0" }, { key: "memorySpreadRatio", label: "memory spread", stroke: "#e08a00" }] },
      (p) => p.gpuCount >= 2,
    ],
    [
      "throttle",
      (b) => `Throttling (1 while any of the pod's GPUs is clocked down): heat or power. Needs: ${b.needs.throttling}.`,
      { unit: "", series: [{ key: "thermalThrottled", label: "thermal", stroke: "#c62828" }, { key: "powerThrottled", label: "power", stroke: "#8d6e63" }] },
      () => true,
    ],
    ["temperature", () => "GPU temperature, hottest of the pod's GPUs (DCGM_FI_DEV_GPU_TEMP, default counters)", { unit: "°C", series: [{ key: "temperatureC", label: "GPU temperature", stroke: "#c62828" }] }, () => true],
  ];

  /** Per namespace and pod: {group, note, problems, panels: {suffix: {el, panel}}}. */
  const groups = new Map();

  function groupOf(body, p) {
    const key = `${p.namespace}\u0000${p.pod}`;
    let g = groups.get(key);
    if (g) return g;
    const group = document.createElement("div");
    group.className = "gpu-group";
    group.dataset.pod = p.pod;
    const h3 = document.createElement("h3");
    h3.textContent = `${p.pod} (${p.namespace})`;
    const problems = document.createElement("ul");
    problems.className = "gpu-problems";
    const grid = document.createElement("div");
    grid.className = "charts";
    group.append(h3, problems, grid);
    $("gpu-panels").append(group);
    const n = groups.size;
    g = { group, h3, problems, grid, panels: {} };
    for (const [suffix, , spec, has] of PANELS) {
      if (!has(p)) continue;
      const figure = document.createElement("figure");
      const caption = document.createElement("figcaption");
      const el = document.createElement("div");
      el.id = `chart-gpuhealth-${n}-${suffix}`;
      el.className = "chart";
      el.dataset.pod = p.pod;
      el.dataset.points = "0";
      figure.append(caption, el);
      grid.append(figure);
      const panel = createPanel(el, spec);
      g.panels[suffix] = { el, caption, panel };
      if (window.tokentraceDashboard?.charts) window.tokentraceDashboard.charts[el.id] = panel;
    }
    groups.set(key, g);
    return g;
  }

  /** The exporters labelled other than their default way: what the join reads and what to change, above the pods. */
  function exporterNotes(rows) {
    let list = $("gpu-exporter-notes");
    if (!list) {
      list = Object.assign(document.createElement("ul"), { id: "gpu-exporter-notes", className: "gpu-problems" });
      $("gpu-panels").before(list);
    }
    list.replaceChildren(...rows.map((r) => Object.assign(document.createElement("li"), { textContent: r.message })));
  }

  async function refresh() {
    const page = new window.URLSearchParams(window.location.search);
    const q = new window.URLSearchParams({ range: page.get("range") || "900" });
    if (page.get("namespace")) q.set("namespace", page.get("namespace"));
    const dashboard = window.tokentraceDashboard;
    const res = await window.tokentraceFetch(`/v1/dashboard/gpus?${q}`, { cache: "no-store", headers: dashboard ? dashboard.authHeaders() : {} });
    const body = await res.json();
    await dashboard?.firstScreen;
    if (!res.ok) {
      $("gpu-note").textContent = dashboard ? dashboard.describeError(body) : String(body.error);
      return;
    }
    $("gpu").hidden = body.pipeline === "off";
    exporterNotes(body.exporterNotes ?? []);
    $("gpu-note").textContent =
      body.pods.length === 0
        ? "No pod's GPUs reported yet (the pipeline joins dcgm-exporter's GPUs to each pod's sidecar scrape)."
        : `Per pod (step ${body.stepSeconds} s): what its GPUs do beside how busy they look, the spread across its cards, throttling and temperature; each caption says what dcgm-exporter must export for it.`;
    for (const p of body.pods) {
      const g = groupOf(body, p);
      g.h3.textContent = `${p.pod} (${p.namespace}): ${p.gpuCount} GPU${p.gpuCount === 1 ? "" : "s"}`;
      g.problems.replaceChildren(...p.problems.map((text) => Object.assign(document.createElement("li"), { textContent: text })));
      const columns = { ...p.columns };
      const threshold = p.basis ? body.thresholds.starvedActivityRatio[p.basis] : null;
      columns.starvedThreshold = p.columns.t.map(() => threshold ?? null);
      columns.utilizationSpread = p.columns.utilizationSpreadPercent.map((v) => (v === null ? null : v / 100));
      for (const [suffix, caption] of PANELS) {
        const panel = g.panels[suffix];
        if (!panel) continue;
        panel.caption.textContent = caption(body, p);
        panel.panel.setData(columns);
      }
    }
  }

  window.tokentraceGpu = { refresh };
  void refresh().catch(() => undefined);
  window.setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
})();
