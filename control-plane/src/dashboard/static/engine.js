// The cause panels (/v1/dashboard/engine-causes): per model of the page's namespace, why it is slow
// as its model servers see it, the panels vLLM's own Grafana board has: the waiting queue beside the
// running batch, KV-cache usage beside prefix-cache hits and speculative acceptance, preemptions,
// time per output token, and the engine's P99 split into queue, prefill and decode beside the
// sidecars' TTFT P99; then where the cache hits (per tier and in the external KV-connector cache)
// and why requests wait (by reason; preemptions per finished request). One group of panels per
// model, created as models appear; a panel without data says what the model server must export for
// it. The tiers and reasons are the model servers' label values: their series are made when they
// appear, and the panel is made again when they change. The namespace and range are the page's.
/* global document, window */
"use strict";

(() => {
  const REFRESH_MS = 2000;
  const { createPanel } = window.tokentraceCharts;
  const $ = (id) => document.getElementById(id);

  const TIER_STROKES = ["#2f6fd0", "#00897b", "#7b1fa2", "#9e9d24"];
  const REASON_STROKES = new Map([["capacity", "#c62828"], ["deferred", "#e08a00"]]);
  const OTHER_STROKES = ["#5d4037", "#546e7a"];
  // Label values from the model servers sit in keys only behind these prefixes, and in a null-prototype object.
  const TIER = "tier\u0000";
  const REASON = "reason\u0000";

  /** The columns a panel reads: the model's own, then one per tier and per reason. */
  function columnsOf(m) {
    const cols = Object.assign(Object.create(null), m.columns);
    for (const x of m.prefixCacheHitsByTier || []) cols[TIER + x.tier] = x.values;
    for (const x of m.waitingByReason || []) cols[REASON + x.reason] = x.values;
    return cols;
  }

  /** The panels of one model: suffix, caption (from the answer), spec (or the spec of a model's answer), and which `needs` entry it depends on. */
  const PANELS = [
    [
      "queue",
      (b) => `Waiting queue beside the running batch (requests, summed over pods, step ${b.stepSeconds} s): a queue that grows while the batch is full is saturation.`,
      { unit: "", series: [{ key: "requestsWaiting", label: "waiting", stroke: "#c62828" }, { key: "requestsRunning", label: "running", stroke: "#2f6fd0" }] },
      "queue",
    ],
    [
      "kv",
      () => "KV-cache usage beside prefix-cache hits and speculative acceptance (mean over pods): a full cache evicts cached prompts (hits fall) and preempts requests.",
      {
        unit: "ratio",
        series: [
          { key: "kvCacheUsage", label: "KV-cache usage", stroke: "#c62828" },
          { key: "prefixCacheHitRatio", label: "prefix-cache hit ratio", stroke: "#e08a00" },
          { key: "specDecodeAcceptance", label: "speculative acceptance", stroke: "#7b1fa2" },
        ],
      },
      "kvCache",
    ],
    ["preemptions", () => "Preemptions per second (summed over pods): requests put back to wait for KV-cache room, their work computed again.", { unit: "/s", series: [{ key: "preemptionsPerSecond", label: "preemptions/s", stroke: "#6d4c41" }] }, "kvCache"],
    [
      "tpot",
      (b, m) => `Time per output token (${m.tpotSource === "inter_token" ? "inter-token latency: the server exports no per-request TPOT" : "per request"}; the worst pod's percentile).`,
      {
        unit: "ms",
        series: [
          { key: "tpotP50Ms", label: "P50", stroke: "#2f6fd0" },
          { key: "tpotP95Ms", label: "P95", stroke: "#e08a00" },
          { key: "tpotP99Ms", label: "P99", stroke: "#c62828" },
        ],
      },
      "tpot",
    ],
    [
      "phases",
      (b) => `Where P99 goes: the engine's queue, prefill and decode P99 (the worst pod's; vLLM's buckets start at 0.3 s, so a phase under it reads 297 ms) beside the sidecars' TTFT P99 for this model (every route, histogram over ${b.lookbackSeconds} s).`,
      {
        unit: "ms",
        series: [
          { key: "queueP99Ms", label: "queue P99", stroke: "#c62828" },
          { key: "prefillP99Ms", label: "prefill P99", stroke: "#e08a00" },
          { key: "decodeP99Ms", label: "decode P99", stroke: "#2f6fd0" },
          { key: "sidecarTtftP99Ms", label: "TTFT P99 (sidecar)", stroke: "#424242", dash: [5, 3] },
        ],
      },
      "phases",
    ],
    [
      "hits",
      () => "Where the cache hits: SGLang's prefix-cache hits per tier (device, host memory, storage) and vLLM's external KV-connector cache, each a share of the prompt tokens (mean over pods); on the right, prompt tokens the engine computed per finished request, what no cache saved.",
      (m) => ({
        unit: "ratio",
        units: { y2: "" },
        series: [
          ...(m.prefixCacheHitsByTier || []).map((x, i) => ({ key: TIER + x.tier, label: `hits from ${x.tier}`, stroke: TIER_STROKES[i % TIER_STROKES.length] })),
          { key: "externalPrefixCacheHitRatio", label: "external cache (KV connector)", stroke: "#c62828" },
          { key: "promptTokensComputedPerRequest", label: "prompt tokens computed per request (right axis)", stroke: "#424242", dash: [5, 3], scale: "y2" },
        ],
      }),
      "cacheTiers",
    ],
    [
      "wait",
      () => "Why requests wait: waiting requests by vLLM's reason (summed over pods; capacity: no room in the batch yet, deferred: held back by the LoRA budget, a KV transfer or a blocked state); on the right, preemptions per finished request (mean over pods), each a prompt computed again.",
      (m) => ({
        unit: "",
        series: [
          ...(m.waitingByReason || []).map((x, i) => ({ key: REASON + x.reason, label: `waiting (${x.reason})`, stroke: REASON_STROKES.get(x.reason) ?? OTHER_STROKES[i % OTHER_STROKES.length] })),
          { key: "preemptionsPerRequest", label: "preemptions per request (right axis)", stroke: "#6d4c41", dash: [5, 3], scale: "y2" },
        ],
      }),
      "waitReasons",
    ],
  ];
  const specOf = (spec, m) => (typeof spec === "function" ? spec(m) : spec);
  const keysOf = (spec) => spec.series.map((s) => s.key).join("\u0001");

  /** Per namespace and model: {group, panels: {suffix: {el, caption, panel}}}. */
  const groups = new Map();

  function groupOf(m) {
    const key = `${m.namespace}\u0000${m.model}`;
    let g = groups.get(key);
    if (g) return g;
    const group = document.createElement("div");
    group.className = "cause-group";
    group.dataset.model = m.model;
    const h3 = document.createElement("h3");
    const grid = document.createElement("div");
    grid.className = "charts";
    group.append(h3, grid);
    $("causes-panels").append(group);
    const n = groups.size;
    g = { group, h3, panels: {} };
    for (const [suffix, , specFor] of PANELS) {
      const spec = specOf(specFor, m);
      const figure = document.createElement("figure");
      const caption = document.createElement("figcaption");
      const el = document.createElement("div");
      el.id = `chart-cause-${n}-${suffix}`;
      el.className = "chart";
      el.dataset.model = m.model;
      el.dataset.panel = suffix;
      el.dataset.points = "0";
      figure.append(caption, el);
      grid.append(figure);
      const panel = createPanel(el, spec);
      g.panels[suffix] = { el, caption, panel, keys: keysOf(spec) };
      if (window.tokentraceDashboard?.charts) window.tokentraceDashboard.charts[el.id] = panel;
    }
    groups.set(key, g);
    return g;
  }

  async function refresh() {
    const page = new window.URLSearchParams(window.location.search);
    const q = new window.URLSearchParams({ range: page.get("range") || "900" });
    if (page.get("namespace")) q.set("namespace", page.get("namespace"));
    const dashboard = window.tokentraceDashboard;
    const res = await window.tokentraceFetch(`/v1/dashboard/engine-causes?${q}`, { cache: "no-store", headers: dashboard ? dashboard.authHeaders() : {} });
    const body = await res.json();
    await dashboard?.firstScreen;
    if (!res.ok) {
      $("causes-note").textContent = dashboard ? dashboard.describeError(body) : String(body.error);
      return;
    }
    $("causes").hidden = body.pipeline === "off";
    $("causes-note").textContent =
      body.models.length === 0
        ? "No model server reports these signals yet (the pipeline scrapes vLLM, SGLang and TGI as targets of kind vllm)."
        : `Per model, why it is slow as its model servers see it (step ${body.stepSeconds} s, each pod's newest scrape within ${body.lookbackSeconds} s).`;
    for (const m of body.models) {
      const g = groupOf(m);
      g.h3.textContent = `${m.model || "(no model name)"} (${m.namespace}) on ${m.pods.join(", ") || "no pod"}`;
      const columns = columnsOf(m);
      for (const [suffix, caption, specFor, need] of PANELS) {
        const p = g.panels[suffix];
        const spec = specOf(specFor, m);
        if (keysOf(spec) !== p.keys) {
          // Another tier or reason: the panel again with its series (uPlot's are fixed at creation).
          p.panel.plot.destroy();
          p.panel = createPanel(p.el, spec);
          p.keys = keysOf(spec);
          if (window.tokentraceDashboard?.charts) window.tokentraceDashboard.charts[p.el.id] = p.panel;
        }
        p.panel.setData(columns);
        // The model server's own series (the sidecar's TTFT beside them does not count).
        const engineHeld = spec.series.some((s) => s.key !== "sidecarTtftP99Ms" && (columns[s.key] || []).some((v) => v !== null));
        p.caption.textContent = engineHeld ? caption(body, m) : `${caption(body, m)} No data in this range: needs ${body.needs[need]}.`;
      }
    }
  }

  window.tokentraceEngine = { refresh };
  void refresh().catch(() => undefined);
  window.setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
})();
