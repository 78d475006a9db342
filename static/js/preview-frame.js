// The preview frame's bootstrap. static/js/preview.js inlines this file (with a nonce) into a
// fresh srcdoc iframe for every repaint: sandbox="allow-scripts" without allow-same-origin, so
// the frame has an opaque origin of its own, and Chromium runs it in a process of its own, so
// an endless loop here cannot freeze the editor (the editor throws the frame away instead).
//
// It runs the render harness exactly as the render worker does (paintenv/page/): the same
// four files in index.html's order, then __paint.prepare(), then __paint.render() with the
// server's options. Where the worker answers /shadows.js and /sketch.js by request
// interception, this frame answers them with blob: URLs of its own; nothing leaves the frame
// (its CSP has connect-src 'none').
(() => {
  "use strict";
  const host = window.parent;
  const post = (message) => host.postMessage(message, "*");
  // harness-pre.js pins performance.now() to a virtual clock; the preview times itself.
  const realNow = performance.now.bind(performance);
  const blobUrl = (text) => URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
  const specifierLine = /^blob:[^:]*:(\d+):(\d+)$/;
  let sketchUrl = "";
  const sketchErrors = [];  // uncaught errors of the sketch with their line:col

  // The harness maps sketch stack frames to lines only for its server URL (/sketch.js); here
  // the sketch is a blob: URL, so its uncaught errors are located from their stacks. (An
  // error in setup() reaches the page as a rejection: p5 runs setup in a promise.)
  function locate(error) {
    if (!sketchUrl || !error) return;
    const stack = String(error.stack || "");
    for (const frame of stack.split("\n")) {
      const at = frame.lastIndexOf(sketchUrl + ":");
      if (at < 0) continue;
      const where = specifierLine.exec(frame.slice(at).replace(/\)\s*$/, ""));
      // The composed module's first line is the harness's import, as on the server.
      if (where && Number(where[1]) > 1) {
        sketchErrors.push({ message: String(error.message || ""), line: Number(where[1]) - 1, col: Number(where[2]) });
        return;
      }
    }
  }
  window.addEventListener("error", (event) => locate(event.error));
  window.addEventListener("unhandledrejection", (event) => locate(event.reason));

  function load(blob) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = URL.createObjectURL(blob);
      script.async = false;
      script.onload = resolve;
      script.onerror = () => reject(new Error("a library of the render harness failed to load"));
      document.head.appendChild(script);
    });
  }

  let kitArrived = null;
  const kitPromise = new Promise((resolve) => { kitArrived = resolve; });

  async function paint(job) {
    const started = realNow();
    for (const library of job.libraries) await load(library);
    const paintApi = window.__paint;
    if (!paintApi || !paintApi.libraries) throw new Error("the render harness or p5/p5.brush did not load");
    let kit = job.kit;
    if (!kit) {
      // The names to shadow depend on this browser: the studio composes the stubs from them once.
      post({ kind: "names", names: paintApi.shadowNames(job.allowed) });
      kit = await kitPromise;
    }
    const quoted = JSON.stringify(kit.specifier);
    if (!kit.head.includes(quoted)) throw new Error("the sketch wrapper does not import the stubs");
    const shadowsUrl = blobUrl(kit.shadows);
    // prepare() loads the stubs from kit.specifier, as the worker's page does; here that path
    // is this frame's blob. The sketch imports the same URL, so it links against the same module.
    const src = Object.getOwnPropertyDescriptor(HTMLScriptElement.prototype, "src");
    Object.defineProperty(HTMLScriptElement.prototype, "src", {
      ...src, set(value) { src.set.call(this, value === kit.specifier ? shadowsUrl : value); },
    });
    if (!(await paintApi.prepare(job.api))) throw new Error("the stub module failed to load");
    sketchUrl = blobUrl(kit.head.replace(quoted, JSON.stringify(shadowsUrl)) + job.code + kit.tail);
    const loaded = realNow();
    post({ kind: "running" });
    await paintApi.render({ ...job.options, sketchUrl });
    post({
      kind: "done", result: paintApi.result(), sketchErrors,
      loadMs: Math.round(loaded - started), runMs: Math.round(realNow() - loaded),
    });
  }

  window.addEventListener("message", (event) => {
    if (event.source !== host || !event.data) return;
    if (event.data.kind === "kit") kitArrived(event.data.kit);
    else if (event.data.kind === "job") {
      paint(event.data).catch((error) => post({ kind: "broken", message: String(error && error.message || error) }));
    }
  });
  post({ kind: "ready" });
})();
