// The policies section: the list (GET /v1/policies), a create form (POST), and an editor that saves
// with If-Match. After a 412 the user's edit stays in the editor, the server's current version is
// fetched and shown as a diff against it, and the user chooses: save the edit over that version
// (a PUT with its ETag) or discard the edit and load it.
/* global document, window */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const dash = () => window.tokentraceDashboard;
  /** ETag of the version the editor's text is based on. */
  let baseEtag = "";
  /** The server's newer version after a 412: {etag, version, updatedBy}. */
  let conflict = null;

  function showResult(text, details, isError) {
    const el = $("policy-result");
    el.textContent = text;
    el.className = isError ? "error" : "ok";
    $("policy-errors").replaceChildren(
      ...(details || []).map((d) => {
        const li = document.createElement("li");
        li.dataset.field = d.field;
        li.textContent = `${d.field}: ${d.reason}`;
        return li;
      }),
    );
  }

  function showDiff(serverText, editText) {
    const pre = $("policy-diff");
    pre.replaceChildren(
      ...window.tokentraceDiff.lineDiff(serverText, editText).map((d) => {
        const span = document.createElement("span");
        span.className = d.op === "+" ? "add" : d.op === "-" ? "del" : "same";
        span.textContent = `${d.op} ${d.line}\n`;
        return span;
      }),
    );
    pre.hidden = false;
  }

  function clearConflict() {
    conflict = null;
    $("overwrite").hidden = true;
    $("policy-diff").hidden = true;
  }

  const cell = (tr, text) => {
    tr.insertCell().textContent = text;
  };

  /** Loads the list; the editor loads `selectName` (or the first) unless `keepEditor`. */
  async function loadList(selectName, keepEditor) {
    const res = await fetch("/v1/policies", { cache: "no-store", headers: dash().authHeaders() });
    const body = await res.json();
    if (!res.ok) {
      showResult(dash().describeError(body), body.details, true);
      return;
    }
    const rows = $("policy-list").tBodies[0];
    rows.replaceChildren();
    for (const r of body.items) {
      const p = r.policy;
      const tr = rows.insertRow();
      tr.dataset.policy = p.name;
      cell(tr, p.name);
      cell(tr, p.target.namespace);
      cell(tr, p.target.selector ? Object.entries(p.target.selector.matchLabels).map(([k, v]) => `${k}=${v}`).join(", ") : (p.target.targetRefs || []).map((t) => `${t.kind}/${t.name}`).join(", "));
      cell(tr, String(p.pluginConfig.sampling?.defaultRate ?? 0.01));
      cell(tr, p.adaptive ? `${p.adaptive.targetTracesPerSecond}/s` : "–");
      cell(tr, r.version);
      cell(tr, `${r.updatedAt} by ${r.updatedBy}`);
      tr.addEventListener("click", () => {
        $("policy").value = p.name;
        void loadPolicy(p.name);
      });
    }
    if (body.items.length === 0) {
      const tr = rows.insertRow();
      const td = tr.insertCell();
      td.colSpan = 7;
      td.textContent = "No policy yet: create one below.";
      $("policy-create").open = true;
    }
    const select = $("policy");
    const current = select.value;
    select.replaceChildren(...body.items.map((r) => new window.Option(r.policy.name, r.policy.name)));
    select.value = selectName || current || (body.items[0] ? body.items[0].policy.name : "");
    if (select.value && !keepEditor) await loadPolicy(select.value);
  }

  async function fetchPolicy(name) {
    const res = await fetch(`/v1/policies/${encodeURIComponent(name)}`, { cache: "no-store", headers: dash().authHeaders() });
    return { res, body: await res.json() };
  }

  async function loadPolicy(name) {
    const { res, body } = await fetchPolicy(name);
    if (!res.ok) {
      showResult(dash().describeError(body), body.details, true);
      return;
    }
    baseEtag = res.headers.get("etag") || "";
    clearConflict();
    showResult("", [], false);
    $("policy-editor").value = JSON.stringify(body.policy, null, 2);
    $("policy-version").textContent = `version ${body.version}, by ${body.updatedBy}`;
    showTailKeep(body.policy);
    showContent(body.policy);
  }

  // Tail keep: the two common settings of pluginConfig.spans.keep as fields; routes stay in the JSON.
  function showTailKeep(policy) {
    const keep = (policy && policy.pluginConfig && policy.pluginConfig.spans && policy.pluginConfig.spans.keep) || {};
    $("keep-errors").checked = keep.errors === true;
    $("keep-slower-ms").value = keep.slowerThanMs === undefined ? "" : String(keep.slowerThanMs);
  }

  // Content capture: the policy-wide settings of pluginConfig.spans.content as fields; route rules stay in the JSON.
  function showContent(policy) {
    const content = (policy && policy.pluginConfig && policy.pluginConfig.spans && policy.pluginConfig.spans.content) || {};
    $("content-enabled").checked = content.enabled === true;
    $("content-max-bytes").value = content.maxBytes === undefined ? "" : String(content.maxBytes);
    $("content-pseudonyms").checked = content.pseudonyms !== undefined;
  }

  /** The editor's policy document, or null (the parse error shown). */
  function editedPolicy() {
    try {
      return JSON.parse($("policy-editor").value);
    } catch (e) {
      showResult("not valid JSON", [{ field: "(body)", reason: String(e.message || e) }], true);
      return null;
    }
  }

  function applyTailKeep() {
    const doc = editedPolicy();
    if (doc === null) return;
    const spans = doc.pluginConfig && doc.pluginConfig.spans;
    if (!spans) {
      showResult("tail keep needs span export", [{ field: "pluginConfig.spans", reason: "set spans.cluster first" }], true);
      return;
    }
    const keep = { ...(spans.keep || {}) };
    if ($("keep-errors").checked) keep.errors = true;
    else delete keep.errors;
    const ms = $("keep-slower-ms").value.trim();
    if (ms === "") delete keep.slowerThanMs;
    else keep.slowerThanMs = Number(ms);
    if (Object.keys(keep).length === 0) delete spans.keep;
    else spans.keep = keep;
    $("policy-editor").value = JSON.stringify(doc, null, 2);
    showResult("tail keep written into the policy: save to apply", [], false);
  }

  function applyContent() {
    const doc = editedPolicy();
    if (doc === null) return;
    const spans = doc.pluginConfig && doc.pluginConfig.spans;
    if (!spans) {
      showResult("content capture needs span export", [{ field: "pluginConfig.spans", reason: "set spans.cluster first" }], true);
      return;
    }
    const content = { ...(spans.content || {}) };
    if ($("content-enabled").checked) content.enabled = true;
    else delete content.enabled;
    const max = $("content-max-bytes").value.trim();
    if (max === "") delete content.maxBytes;
    else content.maxBytes = Number(max);
    // Pseudonyms are keyed with the control plane's key, never one in the policy; existing settings (keySource) are kept.
    if (!$("content-pseudonyms").checked) delete content.pseudonyms;
    else if (!content.pseudonyms) content.pseudonyms = {};
    if (Object.keys(content).length === 0) delete spans.content;
    else spans.content = content;
    $("policy-editor").value = JSON.stringify(doc, null, 2);
    showResult("content capture written into the policy: save to apply", [], false);
  }

  async function save(ifMatch) {
    const name = $("policy").value;
    const editText = $("policy-editor").value;
    const doc = editedPolicy();
    if (doc === null) return;
    const headers = dash().authHeaders({ "content-type": "application/json" });
    if (ifMatch) headers["if-match"] = ifMatch;
    const res = await fetch(`/v1/policies/${encodeURIComponent(name)}`, { method: "PUT", headers, body: JSON.stringify(doc) });
    const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    if (res.status === 412) {
      // Someone saved since: keep the edit, fetch what the server has, show the difference.
      const current = await fetchPolicy(name);
      if (!current.res.ok) {
        showResult(`412 precondition failed; the current version cannot be read: ${dash().describeError(current.body)}`, body.details, true);
        return;
      }
      conflict = { etag: current.res.headers.get("etag") || "", version: current.body.version, updatedBy: current.body.updatedBy };
      showResult("412 precondition failed", body.details, true);
      $("policy-result").textContent = `412 precondition failed: version ${conflict.version} (by ${conflict.updatedBy}) was saved since you loaded this policy. Your edit is kept; below, "-" lines are the server's version, "+" lines yours.`;
      showDiff(JSON.stringify(current.body.policy, null, 2), editText);
      $("overwrite").hidden = false;
      return;
    }
    if (!res.ok) {
      showResult(`${res.status} ${body.error || ""}`.trim(), body.details, true);
      return;
    }
    baseEtag = res.headers.get("etag") || "";
    clearConflict();
    $("policy-version").textContent = `version ${body.version}, by ${body.updatedBy}`;
    showResult(`saved: version ${body.version}`, [], false);
    void loadList(name, true);
  }

  async function create(event) {
    event.preventDefault();
    const adaptive = $("create-adaptive").value.trim();
    const policy = {
      name: $("create-name").value.trim(),
      target: { namespace: $("create-namespace").value.trim(), selector: { matchLabels: { app: $("create-app").value.trim() } } },
      pluginConfig: { sampling: { defaultRate: Number($("create-rate").value) } },
      ...(adaptive === "" ? {} : { adaptive: { targetTracesPerSecond: Number(adaptive) } }),
    };
    const res = await fetch("/v1/policies", { method: "POST", headers: dash().authHeaders({ "content-type": "application/json" }), body: JSON.stringify(policy) });
    const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    if (!res.ok) {
      showResult(`${res.status} ${body.error || ""}`.trim(), body.details, true);
      return;
    }
    await loadList(policy.name);
    showResult(`created: ${policy.name} version ${body.version}`, [], false);
  }

  $("policy").addEventListener("change", (e) => void loadPolicy(e.target.value));
  $("save").addEventListener("click", () => void save(baseEtag));
  $("overwrite").addEventListener("click", () => {
    if (!conflict) return;
    baseEtag = conflict.etag;
    void save(baseEtag);
  });
  $("reload").addEventListener("click", () => void loadPolicy($("policy").value));
  $("keep-apply").addEventListener("click", applyTailKeep);
  $("content-apply").addEventListener("click", applyContent);
  $("create-form").addEventListener("submit", (e) => void create(e));

  window.tokentracePolicies = {
    start: () => void loadList().catch((e) => showResult(`cannot load policies: ${e}`, [], true)),
    // A typed token may open reads that were refused; an edit in progress is never replaced.
    tokenChanged: () => {
      if ($("policy").options.length === 0) void loadList().catch((e) => showResult(`cannot load policies: ${e}`, [], true));
    },
  };
})();
