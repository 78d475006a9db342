// The rollout editor: CodeMirror 6 (bundled at setup into window.StudioCodeMirror) with the
// static gate as a live linter, render errors pinned to their line:col, an instant preview
// painted in this browser as you type (preview.js), and a draft kept in
// localStorage per rollout so a reload or a crashed tab never loses an edit. Rendering and
// scoring are plain htmx form posts; the revision panel polls itself while a worker works,
// so nothing here ever waits on a render (a hostile sketch cannot hang this page).
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const configNode = $("editor-config");
  if (!configNode) return;
  const config = JSON.parse(configNode.textContent);
  const form = $("render-form");
  const textarea = $("code-input");
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const CM = window.StudioCodeMirror;

  // Render errors belong to the exact code that produced them: shown while the text is that code.
  const renderErrors = new Map([[config.originalCode, config.originalDiagnostics || []]]);
  const seenRevisions = new Set();
  let view = null;

  function rememberRevision(node) {
    const found = JSON.parse(node.textContent);
    if (seenRevisions.has(found.revision)) return false;
    seenRevisions.add(found.revision);
    renderErrors.set(found.code, found.diagnostics);
    return true;
  }

  const getCode = () => (view ? view.state.doc.toString() : textarea.value);
  function setCode(code) {
    if (view) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } });
    else { textarea.value = code; onChange(); }
  }

  // ------------------------------------------------------------------ positions
  // The gate counts columns in characters (code points), CodeMirror in UTF-16 units.
  function rangeOf(doc, line, col) {
    if (!doc.length) return { from: 0, to: 0 };
    if (!line || line < 1) { const first = doc.line(1); return { from: first.from, to: first.to }; }
    const l = doc.line(Math.min(line, doc.lines));
    const units = Array.from(l.text).slice(0, Math.max(0, (col || 1) - 1)).join("").length;
    const from = l.from + Math.min(units, l.length);
    const word = /^[\w$.]+/.exec(l.text.slice(from - l.from));
    const to = from + (word ? word[0].length : Math.min(1, l.to - from));
    return to > from ? { from, to } : { from: l.from, to: l.to };
  }

  function moveTo(line, col) {
    if (!view) return;
    const { from } = rangeOf(view.state.doc, line, col);
    view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
    view.focus();
  }

  // ------------------------------------------------------------------ lint
  const lintStatus = $("lint-status");
  const list = $("diagnostics");

  function showProblems(items, note) {
    list.replaceChildren(...items.map((d) => {
      const li = document.createElement("li");
      li.className = `diag diag-${d.source}`;
      const where = document.createElement("a");
      where.href = "#";
      where.className = "jump";
      where.dataset.line = d.line || 1;
      where.dataset.col = d.col || 1;
      where.textContent = d.line ? `${d.line}:${d.col || 1}` : "—";
      const code = document.createElement("code");
      code.textContent = d.code;
      li.append(where, " ", code, " ", d.message);
      return li;
    }));
    lintStatus.dataset.state = note ? "unknown" : items.length ? "problems" : "clean";
    lintStatus.textContent = note || (items.length
      ? `${items.length} problem${items.length === 1 ? "" : "s"}: the reward would be 0`
      : "Passes the gate");
  }

  async function lintSource(editorView) {
    const code = editorView.state.doc.toString();
    let found;
    try {
      const response = await fetch(config.lintUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ code }),
      });
      const body = await response.json();
      if (!response.ok) { showProblems([], body.error || `Lint refused (${response.status})`); return []; }
      found = body.diagnostics;
    } catch (_) {
      showProblems([], "Lint unavailable (no answer from the server); Render still gives the verdict");
      return [];
    }
    found = found.concat(renderErrors.get(code) || []);
    showProblems(found);
    const doc = editorView.state.doc;
    return found.map((d) => ({
      ...rangeOf(doc, d.line, d.col), severity: d.severity || "error", source: d.source, message: `${d.code}: ${d.message}`,
    }));
  }

  // ------------------------------------------------------------------ draft
  const banner = $("draft-banner");
  const draftStatus = $("draft-status");
  const revert = $("revert-button");
  let draftTimer = null;

  function readDraft() {
    try { return JSON.parse(localStorage.getItem(config.draftKey) || "null"); } catch (_) { return null; }
  }

  function saveDraft() {
    clearTimeout(draftTimer);
    draftTimer = null;
    const code = getCode();
    try {
      if (code === config.originalCode) {
        localStorage.removeItem(config.draftKey);
        draftStatus.textContent = "";
      } else {
        localStorage.setItem(config.draftKey, JSON.stringify({ code, savedAt: Date.now() }));
        draftStatus.textContent = `Draft kept in this browser at ${new Date().toLocaleTimeString()}`;
      }
    } catch (_) {
      draftStatus.textContent = "This browser refused to keep a draft (storage full or disabled)";
    }
  }

  function onChange() {
    revert.hidden = getCode() === config.originalCode;
    clearTimeout(draftTimer);
    draftTimer = setTimeout(saveDraft, 300);
    schedulePreview();
  }

  function offerDraft() {
    const draft = readDraft();
    if (!draft || typeof draft.code !== "string" || draft.code === config.originalCode) return;
    const when = new Date(draft.savedAt || Date.now());
    $("draft-text").textContent =
      `An unsaved draft of this sketch from ${when.toLocaleString()} (${draft.code.length.toLocaleString()} characters) was kept in this browser.`;
    banner.hidden = false;
    $("draft-restore").onclick = () => { setCode(draft.code); banner.hidden = true; };
    $("draft-discard").onclick = () => {
      banner.hidden = true;
      if (getCode() === config.originalCode) localStorage.removeItem(config.draftKey);
      else saveDraft();  // what is in the editor now replaces the discarded draft
    };
  }

  // Flush a pending draft when the tab goes away (a crash loses at most 300 ms of typing).
  window.addEventListener("pagehide", () => { if (draftTimer) saveDraft(); });
  document.addEventListener("visibilitychange", () => { if (document.hidden && draftTimer) saveDraft(); });
  revert.addEventListener("click", () => setCode(config.originalCode));

  // ------------------------------------------------------------------ preview
  // Repainted in this browser a moment after typing stops (static/js/preview.js).
  const PREVIEW_DELAY_MS = 400;
  let previewTimer = null;
  const preview = window.StudioPreview && config.preview && $("preview")
    ? window.StudioPreview.start({
      config: config.preview, figure: $("preview"), box: $("preview-box"), status: $("preview-status"), csrf,
    })
    : null;
  function schedulePreview() {
    if (!preview) return;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => preview.paint(getCode()), PREVIEW_DELAY_MS);
  }

  // ------------------------------------------------------------------ the editor
  function mountEditor() {
    const { EditorState, EditorView, HighlightStyle, Prec, basicSetup, forceLinting, indentWithTab, javascript,
      keymap, lintGutter, linter, syntaxHighlighting, tags: t } = CM;
    const colours = HighlightStyle.define([
      { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword], color: "var(--syn-keyword)" },
      { tag: [t.string, t.special(t.string), t.regexp], color: "var(--syn-string)" },
      { tag: [t.number, t.bool, t.null, t.atom], color: "var(--syn-number)" },
      { tag: [t.comment, t.lineComment, t.blockComment], color: "var(--syn-comment)", fontStyle: "italic" },
      { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "var(--syn-function)" },
      { tag: [t.definition(t.variableName), t.definition(t.function(t.variableName))], color: "var(--syn-definition)" },
      { tag: t.propertyName, color: "var(--syn-property)" },
      { tag: [t.operator, t.punctuation, t.bracket], color: "var(--muted)" },
    ]);
    const theme = EditorView.theme({
      "&": { backgroundColor: "var(--panel)", color: "var(--ink)", height: "100%" },
      ".cm-content": { fontFamily: "var(--mono)", caretColor: "var(--ink)" },
      ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5" },
      ".cm-gutters": { backgroundColor: "var(--paper)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
      ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 6%, transparent)" },
      ".cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent) 12%, transparent)", color: "var(--ink)" },
      "&.cm-focused .cm-cursor": { borderLeftColor: "var(--ink)" },
      "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
        { backgroundColor: "color-mix(in srgb, var(--okay) 28%, transparent)" },
      ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--ink)", border: "1px solid var(--line)" },
      ".cm-panels": { backgroundColor: "var(--paper)", color: "var(--ink)" },
    }, { dark: window.matchMedia("(prefers-color-scheme: dark)").matches });

    const host = $("code-editor");
    view = new EditorView({
      parent: host,
      state: EditorState.create({
        doc: config.originalCode,
        extensions: [
          basicSetup,
          javascript(),
          syntaxHighlighting(colours),
          theme,
          lintGutter(),
          linter(lintSource, { delay: 350 }),
          // Above basicSetup's own Mod-Enter (insert a blank line).
          Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { form.requestSubmit(); return true; } }])),
          keymap.of([indentWithTab]),
          EditorView.updateListener.of((update) => {
            if (!update.docChanged) return;
            textarea.value = update.state.doc.toString();  // the form posts the textarea
            onChange();
          }),
        ],
      }),
    });
    textarea.hidden = true;
    host.hidden = false;
    window.studioEditor = { view, getCode, setCode, forceLint: () => forceLinting(view) };
  }

  // The JSON copy is exact (an HTML textarea may drop a leading newline or carriage returns).
  textarea.value = config.originalCode;
  if (CM) mountEditor();
  else {
    // No bundle (setup not run): the textarea still edits, renders and keeps drafts.
    lintStatus.textContent = "Plain text editor: the CodeMirror bundle is missing (run make setup)";
    textarea.addEventListener("input", onChange);
  }
  revert.hidden = getCode() === config.originalCode;
  offerDraft();
  if (preview) preview.paint(getCode());

  // ------------------------------------------------------------------ htmx wiring
  // Refusals (empty code, too long, not scorable) come back as 4xx with a message to show.
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500) { event.detail.shouldSwap = true; event.detail.isError = false; }
    else if (status >= 500 || status === 0) {
      const message = $("editor-message");
      message.hidden = false;
      message.textContent = `The server failed (${status}); the edit is still here and in the draft. Try again.`;
    }
  });
  document.body.addEventListener("htmx:sendError", () => {
    const message = $("editor-message");
    message.hidden = false;
    message.textContent = "The server did not answer; the edit is still here and in the draft. Try again.";
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target.id !== "revision-panel" && event.detail.elt?.id !== "revision-panel") return;
    const message = $("editor-message");
    if (event.detail.xhr.status < 400) { message.hidden = true; message.textContent = ""; }
  });
  document.body.addEventListener("htmx:afterSettle", () => {
    const node = $("revision-diagnostics");
    if (node && rememberRevision(node) && view) CM.forceLinting(view);
  });

  document.addEventListener("click", (event) => {
    // Line:col links in the problem list and the verdict jump into the code.
    const link = event.target.closest("a.jump");
    if (link) {
      event.preventDefault();
      moveTo(Number(link.dataset.line), Number(link.dataset.col));
      return;
    }
    // "Edit this revision's code": its code travels with the panel once it is finished.
    if (event.target.closest("#load-revision-code")) {
      const node = $("revision-diagnostics");
      if (node) setCode(JSON.parse(node.textContent).code);
    }
  });

  // A revision shown on load may carry render errors for its code.
  const initial = $("revision-diagnostics");
  if (initial) rememberRevision(initial);
})();
