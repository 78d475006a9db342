// Keyboard grading for the focus view. Grades are optimistic in the UI but marked "saved"
// only once the server confirmed them; failed saves stay visible, are retried with backoff
// and survive a reload (localStorage) — a grade is never silently dropped.
(() => {
  "use strict";
  const root = document.getElementById("focus");
  if (!root) return;

  const ids = JSON.parse(document.getElementById("focus-ids").textContent);
  const query = root.dataset.query;
  const gradeUrl = (id) => root.dataset.gradeUrl.replace("/0/", `/${id}/`);
  const focusUrl = (id) => root.dataset.focusUrl.replace("/0/", `/${id}/`) + (query ? `?${query}` : "");
  const storeKey = `paintapp.pendingGrades.${root.dataset.user}`;
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const $ = (id) => document.getElementById(id);

  const details = new Map(); // id -> reference json
  const saves = new Map(); // id -> {tier, source, status, attempts, timer, inFlight, message}
  const undoStack = []; // {id, previous}
  let index = Math.max(0, ids.indexOf(Number(root.dataset.current)));

  // The page was rendered for the current reference: seed its details from the DOM.
  details.set(ids[index], {
    id: ids[index],
    tier: (document.querySelector(".grade.current") || {}).dataset?.tier || null,
    subject: $("focus-subject").textContent,
    image_url: $("focus-img").getAttribute("src"),
    source: $("code-source").textContent,
    seed: null,
    meta: $("focus-meta").textContent,
  });

  // ---------------------------------------------------------------- persistence
  function persist() {
    const pending = {};
    for (const [id, s] of saves) if (s.status !== "saved") pending[id] = { tier: s.tier, source: s.source };
    try {
      localStorage.setItem(storeKey, JSON.stringify(pending));
    } catch (_) { /* storage full or disabled: the on-page state still shows it */ }
  }

  function restorePending() {
    let pending = {};
    try {
      pending = JSON.parse(localStorage.getItem(storeKey) || "{}");
    } catch (_) { pending = {}; }
    for (const [id, p] of Object.entries(pending)) enqueueSave(Number(id), p.tier, p.source || "keyboard");
  }

  // ---------------------------------------------------------------- saving
  function enqueueSave(id, tier, source) {
    const existing = saves.get(id);
    if (existing && existing.timer) clearTimeout(existing.timer);
    const s = { tier, source, status: "saving", attempts: 0, timer: null, inFlight: existing?.inFlight || false, message: "" };
    saves.set(id, s);
    persist();
    renderRecent();
    if (!s.inFlight) send(id);
    else s.queued = true;
    refreshState();
  }

  async function send(id) {
    const s = saves.get(id);
    if (!s) return;
    s.inFlight = true;
    s.status = s.attempts ? "retrying" : "saving";
    const sent = s.tier;
    renderRecent();
    refreshState();
    let outcome;
    try {
      const body = new URLSearchParams({ tier: sent || "none", source: s.source });
      const response = await fetch(gradeUrl(id), {
        method: "POST",
        headers: { "X-CSRFToken": csrf, Accept: "application/json" },
        body,
        credentials: "same-origin",
      });
      if (response.ok) {
        const data = await response.json();
        outcome = { ok: true, tier: data.tier };
      } else {
        let message = `HTTP ${response.status}`;
        try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
        outcome = { ok: false, retry: response.status >= 500 || response.status === 429, message, status: response.status };
      }
    } catch (err) {
      outcome = { ok: false, retry: true, message: "network error" };
    }
    s.inFlight = false;
    const current = saves.get(id);
    if (current !== s || s.queued) {
      // A newer grade for this reference arrived while this one was in flight: send that.
      if (current === s) s.queued = false;
      send(id);
      return;
    }
    if (outcome.ok && outcome.tier === (sent || null)) {
      s.status = "saved";
      const d = details.get(id);
      if (d) d.tier = outcome.tier;
    } else if (!outcome.ok && outcome.retry) {
      s.attempts += 1;
      const delay = Math.min(30, 2 ** s.attempts);
      s.status = "failed";
      s.message = `${outcome.message} — retrying in ${delay} s`;
      s.timer = setTimeout(() => send(id), delay * 1000);
    } else {
      s.status = "error";
      s.message = outcome.status === 403 ? "refused (sign in again, then retry)" : outcome.message;
    }
    persist();
    renderRecent();
    refreshState();
  }

  // ---------------------------------------------------------------- view
  const TIER_LABEL = { love: "Love", okay: "Okay", reject: "Reject" };

  function refreshState() {
    const id = ids[index];
    const d = details.get(id) || {};
    const s = saves.get(id);
    const shownTier = s && s.status !== "saved" ? s.tier : d.tier;
    document.querySelectorAll(".grade").forEach((b) => {
      b.classList.toggle("current", b.dataset.tier === shownTier);
      b.classList.toggle("pending", !!s && s.status !== "saved" && b.dataset.tier === s.tier);
    });
    const state = $("save-state");
    if (s && s.status !== "saved") {
      state.dataset.state = s.status;
      const what = s.tier ? TIER_LABEL[s.tier] : "ungraded";
      state.textContent = s.status === "saving" || s.status === "retrying"
        ? `Saving: ${what}…`
        : `Not saved: ${what} — ${s.message}`;
      if (s.status === "error") {
        const retry = document.createElement("button");
        retry.type = "button";
        retry.className = "linkish";
        retry.textContent = " Retry now";
        retry.addEventListener("click", () => { s.attempts = 0; send(id); });
        state.append(retry);
      }
    } else if (d.tier) {
      state.dataset.state = "saved";
      state.textContent = `Saved: ${TIER_LABEL[d.tier]}`;
    } else {
      state.dataset.state = "idle";
      state.textContent = "Not graded yet";
    }
  }

  function renderRecent() {
    const list = $("recent");
    list.replaceChildren();
    const recent = [...saves.entries()].slice(-8).reverse();
    for (const [id, s] of recent) {
      const li = document.createElement("li");
      li.className = `recent-${s.status} tier-${s.tier || "none"}`;
      li.dataset.reference = id;
      li.dataset.status = s.status;
      const label = s.tier ? TIER_LABEL[s.tier] : "ungraded";
      const status = { saving: "saving…", retrying: "saving…", saved: "saved ✓", failed: "not saved — retrying", error: "not saved" }[s.status];
      li.textContent = `#${id} ${label} · ${status}`;
      li.title = s.message || "";
      li.addEventListener("click", () => go(ids.indexOf(id)));
      list.append(li);
    }
  }

  async function loadDetails(around) {
    const want = [];
    for (let i = Math.max(0, around - 2); i < Math.min(ids.length, around + 12); i++) {
      if (!details.has(ids[i])) want.push(ids[i]);
    }
    if (!want.length) return;
    const response = await fetch(`${root.dataset.detailsUrl}?ids=${want.join(",")}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    for (const item of data.items) details.set(item.id, item);
    // Warm the browser cache for the next few paintings.
    for (let i = around + 1; i < Math.min(ids.length, around + 4); i++) {
      const d = details.get(ids[i]);
      if (d) new Image().src = d.image_url;
    }
  }

  async function go(newIndex) {
    if (newIndex < 0 || newIndex >= ids.length) return;
    index = newIndex;
    const id = ids[index];
    if (!details.has(id)) await loadDetails(index);
    const d = details.get(id);
    if (!d) { window.location.href = focusUrl(id); return; }
    $("focus-img").src = d.image_url;
    $("focus-img").alt = d.subject || "reference";
    root.dataset.current = id;
    $("focus-subject").textContent = d.subject || "Untitled reference";
    $("focus-meta").textContent = d.provenance ? `#${id} · ${d.provenance} · ${d.width}×${d.height}` : d.meta;
    $("focus-position").textContent = `${index + 1} / ${ids.length}`;
    $("code-source").textContent = d.source || "";
    $("code-seed").textContent = d.seed !== null && d.seed !== undefined ? `seed ${d.seed}` : "";
    $("code-panel").hidden = !d.source;
    document.title = `Grade #${id} · Paint with Code Studio`;
    history.replaceState(null, "", focusUrl(id));
    refreshState();
    loadDetails(index);
  }

  function grade(tier) {
    const id = ids[index];
    const d = details.get(id) || {};
    const s = saves.get(id);
    const previous = s && s.status !== "saved" ? s.tier : (d.tier || null);
    undoStack.push({ id, previous });
    enqueueSave(id, tier, "keyboard");
    // Auto-advance after a beat, so the click is seen.
    if (index < ids.length - 1) setTimeout(() => go(index + 1), 120);
  }

  function undo() {
    const last = undoStack.pop();
    if (!last) return;
    go(ids.indexOf(last.id)).then(() => enqueueSave(last.id, last.previous, "undo"));
  }

  // ---------------------------------------------------------------- input
  document.getElementById("grade-form").addEventListener("click", (event) => {
    const button = event.target.closest("button.grade");
    if (!button) return;
    event.preventDefault();
    grade(button.dataset.tier);
  });
  for (const [linkId, step] of [["prev-link", -1], ["next-link", 1]]) {
    const link = $(linkId);
    if (link) link.addEventListener("click", (event) => { event.preventDefault(); go(index + step); });
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
    const dialog = $("shortcuts");
    if (dialog.open && event.key !== "?") return;
    const actions = {
      1: () => grade("love"),
      2: () => grade("okay"),
      3: () => grade("reject"),
      ArrowRight: () => go(index + 1),
      j: () => go(index + 1),
      ArrowLeft: () => go(index - 1),
      k: () => go(index - 1),
      u: undo,
      c: () => { const p = $("code-panel"); if (!p.hidden) p.open = !p.open; },
      "?": () => (dialog.open ? dialog.close() : dialog.showModal()),
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  });

  window.addEventListener("beforeunload", (event) => {
    if ([...saves.values()].some((s) => s.status !== "saved")) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  restorePending();
  loadDetails(index);
  refreshState();
})();
