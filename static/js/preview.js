// The editor's instant preview: each edit is painted in this browser by the render harness,
// with the same p5 and p5.brush files, seed, size and options a render worker uses, in a
// fresh iframe with sandbox="allow-scripts" (an opaque origin: no cookies, no studio, no
// network — its CSP has connect-src 'none'). Chromium runs such a frame in a process of its
// own, so a sketch that never ends cannot freeze this page: after the budget its frames are
// removed, which ends that process (see kill()). Nothing is scored here; Render asks the server.
//
// Requests: the four scripts and the frame's bootstrap once per page, and the stub module
// once (the names to shadow depend on the browser). A repaint makes none.
window.StudioPreview = (() => {
  "use strict";
  const csp = (nonce) => [
    "default-src 'none'", `script-src 'nonce-${nonce}' blob:`, "style-src 'unsafe-inline'", "img-src blob: data:",
    "connect-src 'none'", "media-src 'none'", "object-src 'none'", "frame-src 'none'", "child-src 'none'",
    "worker-src 'none'", "manifest-src 'none'", "font-src 'none'", "form-action 'none'", "base-uri 'none'",
  ].join("; ");
  // The canvas fills the frame whatever its size in CSS pixels (600 units at the run's density);
  // p5's own spinner, left behind by a setup() that threw, is not part of the painting.
  const STYLE = "html,body{margin:0;height:100%;overflow:hidden;background:#fff}"
    + "canvas{width:100vw!important;height:100vh!important;display:block}.loading-indicator{display:none!important}";
  const LOAD_BUDGET_MS = 20000;  // for the frame to load the libraries, before the sketch's clock starts

  function nonce() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function fetchOk(url, how) {
    return fetch(url, { credentials: "same-origin" }).then((response) => {
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return response[how]();
    });
  }

  function start({ config, figure, box, status, csrf }) {
    const libraries = Promise.all(config.scripts.map((url) => fetchOk(url, "blob")));
    const bootstrap = fetchOk(config.frameScript, "text");
    let kit = null;
    let kitRequest = null;
    let generation = 0;
    let job = null;      // the frame painting now, if any
    let shown = null;    // the frame whose painting is on screen
    let queued = null;   // the newest code, waiting for the frame painting now
    let cooling = false; // a frame was just killed: wait before making the next one
    let paused = null;   // code whose preview waits to be back on screen
    let retry = null;    // {code, tries} of a frame that never started

    // `where`: the sketch's line:col of an error, a link into the code (editor.js handles a.jump).
    function setState(state, text, where = null) {
      figure.dataset.state = state;
      figure.dataset.generation = String(generation);
      status.replaceChildren(text);
      if (where && where.line) {
        const link = document.createElement("a");
        link.href = "#";
        link.className = "jump";
        link.dataset.line = where.line;
        link.dataset.col = where.col || 1;
        link.textContent = `${where.line}:${where.col || 1}`;
        status.append(" at ", link);
      }
    }

    // Chromium runs this page's sandboxed frames in one process of their own. A sketch that
    // never yields holds that process, so ending it takes removing every frame in it (the
    // painting shown goes too), then a pause, or Chromium may hand the next frame the same,
    // still busy process (it keeps a subframe's process a moment for reuse).
    const COOL_DOWN_MS = 1500;
    const READY_MS = 4000;  // a new frame says "ready" within ms; one that does not is in a stuck process

    function kill(which) {
      if (which) {
        clearTimeout(which.timer);
        if (which.frame) which.frame.remove();
      }
      if (shown) shown.frame.remove();
      shown = null;
      job = null;
      cooling = true;
      setTimeout(() => {
        cooling = false;
        next();
      }, COOL_DOWN_MS);
    }

    function next() {
      if (job || cooling) return;
      if (retry !== null) {
        const { code, tries } = retry;
        retry = null;
        make(code, tries);
      } else if (paused !== null && onScreen) {
        const code = paused;
        paused = null;
        make(code, 0);
      } else if (queued !== null) {
        const code = queued;
        queued = null;
        make(code, 0);
      }
    }

    // An edit: painted now, unless a sketch is running (it finishes or meets its budget
    // first; only the newest edit waits) or a killed frame's process is still going away.
    function paint(code) {
      paused = null;
      if (job && job.running || cooling) {
        queued = code;
        return;
      }
      if (job) {  // still loading the harness: nothing of the sketch runs yet
        clearTimeout(job.timer);
        if (job.frame) job.frame.remove();
        job = null;
      }
      make(code, 0);
    }

    async function make(code, tries) {
      generation += 1;
      const mine = { generation, code, tries, frame: null, timer: null, running: false };
      job = mine;
      setState("painting", "Painting the preview…");
      let html;
      try {
        const [script] = await Promise.all([bootstrap, libraries]);
        if (script.includes("</script")) throw new Error("the preview bootstrap cannot be inlined");
        const n = nonce();
        html = `<!doctype html><html><head><meta charset="utf-8">`
          + `<meta http-equiv="Content-Security-Policy" content="${csp(n)}">`
          + `<style>${STYLE}</style><script nonce="${n}">${script}</script></head><body></body></html>`;
      } catch (error) {
        if (job === mine) {
          job = null;
          setState("unavailable", `No preview: the harness could not be fetched (${error.message}). Render still works.`);
        }
        return;
      }
      if (job !== mine) return;
      const frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts");
      frame.className = "previewframe is-painting";
      frame.title = "Preview of the sketch, painted in this browser (not scored)";
      frame.srcdoc = html;
      mine.frame = frame;
      mine.timer = setTimeout(() => notReady(mine), READY_MS);
      box.append(frame);
    }

    function notReady(which) {
      if (job !== which) return;
      kill(which);
      if (which.tries < 2) retry = { code: queued === null ? which.code : queued, tries: which.tries + 1 };
      else setState("unavailable", "No preview: its frame did not start. Render still works.");
      queued = null;
    }

    // Chromium may hold back animation frames of a cross-origin frame that is off screen, so
    // there a sketch with draw() cannot finish in time: rather than call it an endless loop,
    // its frame goes and the preview repaints when it is back on screen.
    let onScreen = true;
    new IntersectionObserver((entries) => {
      onScreen = entries[entries.length - 1].isIntersecting;
      if (onScreen) next();
    }).observe(box);

    function giveUp(which, ms) {
      if (job !== which) return;
      kill(which);
      if (!onScreen) {
        if (queued === null) paused = which.code;
        setState("paused", "Paused while off screen; the preview repaints when you scroll back to it.");
        return;
      }
      const seconds = (ms / 1000).toLocaleString(undefined, { maximumFractionDigits: 1 });
      setState("stopped", `Preview stopped after ${seconds} s: the sketch was still running (an endless loop?). `
        + "The server render decides; it stops at its own deadline.");
    }

    function finished(which, data) {
      clearTimeout(which.timer);
      which.running = false;
      job = null;
      if (shown && shown !== which) shown.frame.remove();
      shown = which;
      which.frame.classList.remove("is-painting");
      show(data);
      next();
    }

    function show(data) {
      let result = null;
      try { result = JSON.parse(data.result); } catch (_) { result = null; }
      if (!result || typeof result !== "object") {
        setState("error", "The preview gave no result.");
        return;
      }
      const located = Array.isArray(data.sketchErrors) ? data.sketchErrors : [];
      const errors = (Array.isArray(result.errors) ? result.errors : []).map((e) => {
        const message = String(e && e.message || "");
        const at = located.find((l) => l.message && message.endsWith(String(l.message)));
        return { message, line: Number(e && e.line || at && at.line) || null, col: Number(e && e.col || at && at.col) || null };
      });
      const denied = Object.entries(result.denied && typeof result.denied === "object" ? result.denied : {})
        .map(([name, count]) => `${name} ×${Number(count) || 0}`);
      const ms = Number(data.runMs) || 0;
      if (errors.length) {
        setState("error", `Preview: the sketch failed — ${errors[0].message}`, errors[0]);
      } else if (denied.length) {
        setState("error", `Preview: it reaches outside the sketch API (${denied.slice(0, 4).join(", ")}); the server scores that 0.`);
      } else if (result.status !== "ok") {
        setState("error", `Preview: the sketch did not finish cleanly (${String(result.status)}).`);
      } else {
        setState("done", `Painted in ${ms.toLocaleString()} ms`);
      }
    }

    window.addEventListener("message", (event) => {
      const which = job;
      if (!which || !which.frame || event.source !== which.frame.contentWindow) return;
      const data = event.data || {};
      if (data.kind === "ready") {
        clearTimeout(which.timer);
        which.timer = setTimeout(() => giveUpLoading(which), LOAD_BUDGET_MS);
        libraries.then((blobs) => {
          if (job !== which) return;
          which.frame.contentWindow.postMessage({
            kind: "job", libraries: blobs, kit, code: which.code, allowed: config.allowed, api: config.api,
            options: config.options,
          }, "*");
        });
      } else if (data.kind === "names") {
        kitRequest = kitRequest || askKit(data.names);
        kitRequest.then((answer) => {
          kit = answer;
          if (job === which) which.frame.contentWindow.postMessage({ kind: "kit", kit }, "*");
        }).catch((error) => {
          kitRequest = null;
          if (job !== which) return;
          clearTimeout(which.timer);
          which.frame.remove();
          job = null;
          setState("unavailable", `No preview: ${error.message}. Render still works.`);
        });
      } else if (data.kind === "running") {
        which.running = true;
        figure.dataset.state = "running";
        clearTimeout(which.timer);  // the sketch's clock starts at the hand-over, as on the server
        which.timer = setTimeout(() => giveUp(which, config.budgetMs), config.budgetMs);
      } else if (data.kind === "done") {
        finished(which, data);
      } else if (data.kind === "broken") {
        clearTimeout(which.timer);
        which.frame.remove();
        job = null;
        setState("unavailable", `No preview: ${String(data.message)}. Render still works.`);
        next();
      }
    });

    function giveUpLoading(which) {
      if (job !== which) return;
      clearTimeout(which.timer);
      which.frame.remove();
      job = null;
      const seconds = (LOAD_BUDGET_MS / 1000).toLocaleString();
      setState("unavailable", `No preview: loading the harness took over ${seconds} s. Render still works.`);
      next();
    }

    async function askKit(names) {
      const response = await fetch(config.kitUrl, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ names }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.error || `the studio refused the stub module (${response.status})`);
      return body;
    }

    return { paint };
  }

  return { start };
})();
