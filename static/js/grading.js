// Keyboard grading for the focus view.
//
// Every key press is queued and handled in order, one at a time: a grade applies to the
// painting on screen and the next press waits until the next painting is shown, so fast
// presses grade consecutive paintings once each, never one painting twice and never skipping
// one. Grades are optimistic in the UI but marked "saved" only once the server confirmed
// them; failed saves stay visible, are retried with backoff and survive a reload
// (localStorage) — a grade is never silently dropped.
(() => {
  "use strict";
  const root = document.getElementById("focus");
  if (!root) return;

  const $ = (id) => document.getElementById(id);
  const ids = JSON.parse($("focus-ids").textContent);
  const query = root.dataset.query;
  const urlFor = (template, id) => template.replace("/0/", `/${id}/`);
  const gradeUrl = (id) => urlFor(root.dataset.gradeUrl, id);
  const focusUrl = (id) => urlFor(root.dataset.focusUrl, id) + (query ? `?${query}` : "");
  const historyUrl = (id) => urlFor(root.dataset.historyUrl, id);
  const curatorsUrl = (id) => urlFor(root.dataset.curatorsUrl, id);
  const storeKey = `paintapp.pendingGrades.${root.dataset.user}`;
  const sessionKey = `paintapp.gradingSession.${root.dataset.user}.${query}`;
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const IMAGE_WAIT_MS = 5000; // a painting that does not load by then is shown as its alt text

  const details = new Map(); // id -> reference json
  const saves = new Map(); // id -> {tier, source, status, attempts, timer, inFlight, message}
  const undoStack = []; // {id, previous}
  const serverGraded = new Set(JSON.parse($("focus-graded").textContent)); // as the server last said
  const left = new Set(); // paintings passed over going forward in this session (skipped while ungraded)
  let index = Math.max(0, ids.indexOf(Number(root.dataset.current)));
  let gradedLastAtEnd = null; // the last painting, once a key graded it: more keys would regrade it

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

  function persistSession() {
    try {
      sessionStorage.setItem(sessionKey, JSON.stringify([...left]));
    } catch (_) { /* the counter still works for this page */ }
  }

  function restoreSession() {
    let stored = [];
    try {
      stored = JSON.parse(sessionStorage.getItem(sessionKey) || "[]");
    } catch (_) { stored = []; }
    const inWalk = new Set(ids);
    for (const id of stored) if (inWalk.has(id)) left.add(id);
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
      if (outcome.tier) serverGraded.add(id);
      else serverGraded.delete(id);
      if (id === ids[index]) loadFragments(id);
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

  // ---------------------------------------------------------------- session counter
  function isGraded(id) {
    const s = saves.get(id);
    if (s && s.status !== "error") return Boolean(s.tier); // saving or retrying counts: it will land
    return serverGraded.has(id);
  }

  function skipped() {
    return ids.filter((id) => left.has(id) && !isGraded(id));
  }

  function renderCounter() {
    $("graded-count").textContent = ids.filter(isGraded).length;
    const count = skipped().length;
    $("skipped-count").textContent = count;
    $("skipped-box").hidden = count === 0;
  }

  function nextSkippedIndex() {
    const waiting = new Set(skipped());
    for (let step = 1; step <= ids.length; step++) {
      const i = (index + step) % ids.length;
      if (waiting.has(ids[i])) return i;
    }
    return -1;
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
    renderCounter();
  }

  function notice(text) {
    $("notice").textContent = text;
    $("notice").hidden = !text;
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
      li.addEventListener("click", () => enqueue(() => go(ids.indexOf(id))));
      list.append(li);
    }
  }

  function setLink(link, targetIndex) {
    const target = ids[targetIndex];
    if (target === undefined) {
      link.removeAttribute("href");
      link.setAttribute("aria-disabled", "true");
      link.classList.add("disabled");
    } else {
      link.href = focusUrl(target);
      link.removeAttribute("aria-disabled");
      link.classList.remove("disabled");
    }
  }

  // The grade history and, when the page shows them, the curators' grades of the painting on
  // screen: reloaded as it walks and after each saved grade (a blind curator's grade reveals the others').
  const fragmentWanted = {};
  async function loadFragment(elementId, url, id) {
    if (!$(elementId)) return;
    fragmentWanted[elementId] = id;
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok || fragmentWanted[elementId] !== id || ids[index] !== id) return; // a later painting is shown
      $(elementId).outerHTML = await response.text();
    } catch (_) { /* the fragment stays as it was; the grade itself is unaffected */ }
  }

  function loadFragments(id) {
    loadFragment("history", historyUrl(id), id);
    loadFragment("curators", curatorsUrl(id), id);
  }

  async function loadDetails(around) {
    const want = [];
    for (let i = Math.max(0, around - 2); i < Math.min(ids.length, around + 12); i++) {
      if (!details.has(ids[i])) want.push(ids[i]);
    }
    if (!want.length) return;
    try {
      const response = await fetch(`${root.dataset.detailsUrl}?ids=${want.join(",")}`, { credentials: "same-origin" });
      if (!response.ok) return;
      const data = await response.json();
      for (const item of data.items) {
        if (!details.has(item.id)) details.set(item.id, item);
        if (item.tier) serverGraded.add(item.id);
      }
    } catch (_) { return; /* go() falls back to loading the page */ }
    // Warm the browser cache for the next few paintings.
    for (let i = around + 1; i < Math.min(ids.length, around + 4); i++) {
      const d = details.get(ids[i]);
      if (d) new Image().src = d.image_url;
    }
    renderCounter();
  }

  function decoded(url) {
    const image = new Image();
    image.src = url;
    const timeout = new Promise((resolve) => setTimeout(resolve, IMAGE_WAIT_MS));
    return Promise.race([image.decode().catch(() => {}), timeout]);
  }

  // Show ids[newIndex]: the painting, its labels, links, history and the address change together,
  // once its image is decoded, so what is on screen is what the next key press applies to.
  async function go(newIndex) {
    if (newIndex < 0 || newIndex >= ids.length) return;
    const id = ids[newIndex];
    if (!details.has(id)) await loadDetails(newIndex);
    const d = details.get(id);
    if (!d) {
      window.location.href = focusUrl(id);
      return new Promise(() => {}); // the page is leaving: hold later keys (pending saves are stored)
    }
    await decoded(d.image_url);
    const leaving = ids[index];
    if (newIndex > index && !isGraded(leaving)) { // passed over on the way forward: skipped
      left.add(leaving);
      persistSession();
    }
    index = newIndex;
    gradedLastAtEnd = null;
    notice("");
    $("focus-img").src = d.image_url;
    $("focus-img").alt = d.subject || "reference";
    root.dataset.current = id;
    $("focus-subject").textContent = d.subject || "Untitled reference";
    $("focus-meta").textContent = d.provenance ? `#${id} · ${d.provenance} · ${d.width}×${d.height}` : d.meta;
    $("focus-position").textContent = `${index + 1} / ${ids.length}`;
    $("code-source").textContent = d.source || "";
    $("code-seed").textContent = d.seed !== null && d.seed !== undefined ? `seed ${d.seed}` : "";
    $("code-panel").hidden = !d.source;
    $("grade-form").action = gradeUrl(id);
    $("grade-next").value = focusUrl(ids[index + 1] ?? id);
    setLink($("prev-link"), index - 1);
    setLink($("next-link"), index + 1);
    document.title = `Grade #${id} · Paint with Code Studio`;
    history.replaceState(null, "", focusUrl(id));
    refreshState();
    loadFragments(id);
    loadDetails(index);
  }

  async function grade(tier, { fromKey }) {
    const id = ids[index];
    if (fromKey && gradedLastAtEnd === id) {
      notice("That was the last painting of this list. Press ← to go back, or click a grade to change this one.");
      return;
    }
    const d = details.get(id) || {};
    const s = saves.get(id);
    const previous = s && s.status !== "saved" ? s.tier : (d.tier || null);
    undoStack.push({ id, previous });
    enqueueSave(id, tier, fromKey ? "keyboard" : "ui");
    if (index < ids.length - 1) {
      await go(index + 1);
    } else {
      gradedLastAtEnd = id;
      const waiting = skipped().length;
      notice(`End of the list.${waiting ? ` ${waiting} skipped: press s to grade them.` : ""}`);
    }
  }

  async function undo() {
    const last = undoStack.pop();
    if (!last) return;
    await go(ids.indexOf(last.id));
    enqueueSave(last.id, last.previous, "undo");
  }

  async function goToSkipped() {
    const target = nextSkippedIndex();
    if (target < 0) notice("Nothing skipped.");
    else await go(target);
  }

  // ---------------------------------------------------------------- input, in order
  let queue = Promise.resolve();
  function enqueue(action) {
    queue = queue.then(action).catch((error) => console.error("focus view:", error));
  }

  $("grade-form").addEventListener("click", (event) => {
    const button = event.target.closest("button.grade");
    if (!button) return;
    event.preventDefault();
    enqueue(() => grade(button.dataset.tier, { fromKey: false }));
  });
  for (const [linkId, step] of [["prev-link", -1], ["next-link", 1]]) {
    $(linkId).addEventListener("click", (event) => {
      event.preventDefault();
      enqueue(() => go(index + step));
    });
  }
  $("skipped-link").addEventListener("click", (event) => {
    event.preventDefault();
    enqueue(goToSkipped);
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) return;
    const dialog = $("shortcuts");
    if (dialog.open && event.key !== "?") return;
    const actions = {
      1: () => grade("love", { fromKey: true }),
      2: () => grade("okay", { fromKey: true }),
      3: () => grade("reject", { fromKey: true }),
      ArrowRight: () => go(index + 1),
      j: () => go(index + 1),
      ArrowLeft: () => go(index - 1),
      k: () => go(index - 1),
      s: goToSkipped,
      u: undo,
    };
    if (event.key === "c" || event.key === "?") {
      event.preventDefault(); // these only show things: no need to wait for the queue
      if (event.key === "?") {
        if (dialog.open) dialog.close();
        else dialog.showModal();
      } else if (!$("code-panel").hidden) {
        $("code-panel").open = !$("code-panel").open;
      }
      return;
    }
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    if (event.repeat) return; // a key held down is one press, not a grade for every painting it passes
    enqueue(action);
  });

  window.addEventListener("beforeunload", (event) => {
    if ([...saves.values()].some((s) => s.status !== "saved")) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  restoreSession();
  restorePending();
  loadDetails(index);
  refreshState();
})();
