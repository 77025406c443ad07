// One trace as a waterfall, the way Jaeger and Langfuse draw it: a row per span, indented under its
// parent, its bar placed on the trace's time axis. The model server's span (vLLM's llm_request) is
// split into the phases vLLM records (gen_ai.latency.time_in_queue, time_in_model_prefill,
// time_in_model_decode); the proxy's span marks its time to first chunk. Captured content, when the
// policy allowed it and the reader holds a token, is shown as text under the waterfall.
/* global document, window */
"use strict";

(() => {
  const { formatValue } = window.tokentraceCharts;
  const PHASES = [
    { attribute: "gen_ai.latency.time_in_queue", name: "queue", className: "phase-queue" },
    { attribute: "gen_ai.latency.time_in_model_prefill", name: "prefill", className: "phase-prefill" },
    { attribute: "gen_ai.latency.time_in_model_decode", name: "decode", className: "phase-decode" },
  ];
  const CONTENT = ["gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"];

  const ms = (v) => formatValue(v, "ms");
  const seconds = (v) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v * 1000 : null);

  /** Spans ordered parent before child (depth-first by start), each with its depth. */
  function ordered(spans) {
    const ids = new Set(spans.map((s) => s.spanId));
    const children = new Map();
    for (const s of spans) {
      const parent = ids.has(s.parentSpanId) ? s.parentSpanId : "";
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(s);
    }
    const out = [];
    const visit = (parent, depth) => {
      for (const s of (children.get(parent) || []).sort((a, b) => a.startMs - b.startMs)) {
        out.push({ span: s, depth });
        if (depth < 16) visit(s.spanId, depth + 1);
      }
    };
    visit("", 0);
    return out;
  }

  function bar(className, leftPct, widthPct, title) {
    const el = document.createElement("div");
    el.className = className;
    el.style.left = `${leftPct}%`;
    el.style.width = `${Math.max(widthPct, 0.4)}%`;
    if (title) el.title = title;
    return el;
  }

  /** Renders `spans` (the dashboard's LlmCall objects of one trace) into `container`. */
  function render(container, spans) {
    container.replaceChildren();
    if (spans.length === 0) return;
    const t0 = Math.min(...spans.map((s) => s.startMs));
    const t1 = Math.max(...spans.map((s) => s.startMs + s.durationMs));
    const total = Math.max(t1 - t0, 1);
    const pct = (t) => ((t - t0) / total) * 100;

    const head = document.createElement("div");
    head.className = "waterfall-head";
    head.textContent = `trace ${spans[0].traceId}: ${spans.length} span(s), ${ms(total)}`;
    container.appendChild(head);

    for (const { span, depth } of ordered(spans)) {
      const row = document.createElement("div");
      row.className = "waterfall-row";
      row.dataset.spanName = span.name;
      const label = document.createElement("div");
      label.className = "waterfall-label";
      label.style.paddingLeft = `${depth * 1.2}em`;
      label.textContent = `${span.service || "?"} · ${span.name}`;
      const track = document.createElement("div");
      track.className = "waterfall-track";
      const main = bar("waterfall-bar", pct(span.startMs), (span.durationMs / total) * 100, `${span.name}: ${ms(span.durationMs)}`);
      track.appendChild(main);
      const notes = [ms(span.durationMs)];
      // The model server's phases, laid end to end from the span's start.
      let at = span.startMs;
      for (const phase of PHASES) {
        const length = seconds(span.attributes[phase.attribute]);
        if (length === null) continue;
        const seg = bar(`waterfall-phase ${phase.className}`, pct(at), (length / total) * 100, `${phase.name}: ${ms(length)}`);
        seg.dataset.phase = phase.name;
        track.appendChild(seg);
        notes.push(`${phase.name} ${ms(length)}`);
        at += length;
      }
      if (span.ttftMs !== null && span.ttftMs !== undefined) {
        const mark = bar("waterfall-mark", pct(span.startMs + span.ttftMs), 0.4, `first chunk after ${ms(span.ttftMs)}`);
        mark.dataset.mark = "ttft";
        track.appendChild(mark);
        notes.push(`TTFT ${ms(span.ttftMs)}`);
      }
      const note = document.createElement("div");
      note.className = "waterfall-note";
      note.textContent = notes.join(" · ");
      row.append(label, track, note);
      container.appendChild(row);
    }

    const withheld = spans.some((s) => s.contentWithheld);
    for (const s of spans) {
      for (const key of CONTENT) {
        const value = s.attributes[key];
        if (typeof value !== "string") continue;
        const block = document.createElement("details");
        block.className = "waterfall-content";
        const summary = document.createElement("summary");
        summary.textContent = `${key} (de-identified in the sidecar)`;
        const pre = document.createElement("pre");
        pre.className = "detail";
        pre.textContent = value;
        block.append(summary, pre);
        container.appendChild(block);
      }
    }
    if (withheld) {
      const p = document.createElement("p");
      p.className = "note";
      p.textContent = "captured content withheld: enter an API token to read it";
      container.appendChild(p);
    }
  }

  window.tokentraceWaterfall = { render };
})();
