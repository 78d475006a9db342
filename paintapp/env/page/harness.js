// Paint with Code Studio — render harness, part 2 of 2.
//
// Runs AFTER p5.js and p5.brush have loaded and BEFORE the sketch. It
//  * wraps p5's drawing functions so calls made by the sketch itself (not by
//    p5.brush's internals) are counted: the runtime half of the "brush only" rule;
//  * wraps the brush.* functions to count the sketch's brush calls;
//  * pins the pixel density and enforces the canvas pixel budget;
//  * exposes window.__paint = {run, poll, collect} to the Python renderer.
// The page may be loaded long before the sketch is known (a pre-warmed page);
// run() then seeds, injects /sketch.js and starts p5 in global mode.
(function () {
  "use strict";
  const I = window.__paintInternal;
  delete window.__paintInternal;
  const { apply, defineProperty, now, immediateCaller, recordError, recordMessage, errors } = I;

  const P5 = window.p5;
  const BRUSH = window.brush;
  const proto = P5 && P5.prototype;
  const createElement = Document.prototype.createElement;
  const appendChild = Node.prototype.appendChild;
  const toDataURL = HTMLCanvasElement.prototype.toDataURL;
  const getContext = HTMLCanvasElement.prototype.getContext;
  const ceil = Math.ceil;
  const isFinite_ = Number.isFinite;
  const getOwnPropertyNames = Object.getOwnPropertyNames;

  const REFERENCE = 600; // the sketch's coordinate space: 0..600 on both axes

  const cfg = { seed: 0, density: 1, maxPixels: 2048 * 2048, drawFrames: 1, maxGraphicsPixels: 4 * 2048 * 2048 };
  const state = {
    started: false, done: false, status: "pending", inst: null, hasDraw: false, frames: 0,
    graphicsPixels: 0, failure: undefined,
  };
  const marks = { pageLoaded: I.loadedAt, ready: now() };
  const bare = Object.create(null);   // p5 primitive -> calls by the sketch
  const brushCalls = Object.create(null);
  const violations = Object.create(null);

  let resolveDone = null;
  const donePromise = new Promise((resolve) => { resolveDone = resolve; });

  function finish(status) {
    if (state.done) return;
    state.done = true;
    state.status = status;
    marks.done = now();
    resolveDone(true);
  }

  // --------------------------------------------------------------- runtime guard
  // Drawing without p5.brush. The static gate forbids these names; this catches what
  // it cannot see (window["re" + "ct"], aliases, eval'd code).
  const PRIMITIVES = [
    "rect", "square", "ellipse", "circle", "arc", "line", "point", "triangle", "quad",
    "bezier", "curve", "spline", "beginShape", "endShape", "vertex", "bezierVertex",
    "quadraticVertex", "curveVertex", "splineVertex", "beginContour", "endContour",
    "image", "plane", "box", "sphere", "ellipsoid", "cylinder", "cone", "torus", "model",
  ];
  const TEXT = ["text"];

  // Nested guarded calls (square -> rect, image -> internal quads) are the library's
  // business: only the outermost call is judged.
  let depth = 0;

  function guard(target, name, kind) {
    const orig = target[name];
    if (typeof orig !== "function" || orig.__paintGuarded) return;
    const wrapped = function () {
      if (depth === 0) {
        const caller = immediateCaller();
        // Library frames (p5 itself, p5.brush internals) are allowed; everything else
        // — the sketch, code it eval'd, or no caller at all — is the sketch's call.
        if (caller !== "p5" && caller !== "brush") {
          bare[name] = (bare[name] || 0) + 1;
          violations[kind] = true;
        }
      }
      depth++;
      try {
        return new.target ? Reflect.construct(orig, arguments, new.target) : apply(orig, this, arguments);
      } finally {
        depth--;
      }
    };
    defineProperty(wrapped, "__paintGuarded", { value: true });
    defineProperty(wrapped, "name", { value: name });
    defineProperty(target, name, { value: wrapped, writable: true, configurable: true, enumerable: false });
  }

  // p5.prototype (global mode binds window.rect to it), p5.Graphics (pg.rect) and the
  // renderers (p5.instance._renderer.rect bypasses the p5 methods).
  const guardTargets = [];
  if (proto) guardTargets.push(proto);
  if (P5) {
    for (const cls of ["Graphics", "Renderer", "Renderer2D", "Renderer3D", "RendererGL"]) {
      if (P5[cls] && P5[cls].prototype) guardTargets.push(P5[cls].prototype);
    }
  }
  for (const target of guardTargets) {
    for (const name of PRIMITIVES) if (Object.prototype.hasOwnProperty.call(target, name)) guard(target, name, "runtime_bare_primitive");
    for (const name of TEXT) if (Object.prototype.hasOwnProperty.call(target, name)) guard(target, name, "runtime_text");
  }

  // brush.* calls made by the sketch. p5.brush calls its own functions through local
  // bindings, never through the `brush` object, but check the caller anyway.
  if (BRUSH) {
    for (const name of getOwnPropertyNames(BRUSH)) {
      const orig = BRUSH[name];
      // Exported classes (Polygon, Plot, Position) stay untouched: `new` and
      // instanceof must keep working.
      if (typeof orig !== "function" || (name[0] >= "A" && name[0] <= "Z")) continue;
      const wrapped = function () {
        const caller = immediateCaller();
        if (caller !== "brush" && caller !== "p5") brushCalls[name] = (brushCalls[name] || 0) + 1;
        return apply(orig, this, arguments);
      };
      defineProperty(wrapped, "name", { value: name });
      try { BRUSH[name] = wrapped; } catch (e) { /* frozen export: leave it */ }
    }
  }

  // --------------------------------------------------------------- canvas budget
  function refuse(what, w, h, density) {
    violations.canvas_too_large = true;
    const px = ceil(w * density) * ceil(h * density);
    throw new RangeError(
      `canvas_too_large: ${what}(${w}, ${h}) needs ${px} pixels at pixel density ${+density.toFixed(4)}; ` +
      `the limit is ${cfg.maxPixels}`
    );
  }
  function pixelsFor(w, h, density) {
    if (!isFinite_(+w) || !isFinite_(+h)) return 0; // p5 reports bad sizes itself
    return ceil(Math.abs(w) * density) * ceil(Math.abs(h) * density);
  }

  if (proto) {
    const origCreateCanvas = proto.createCanvas;
    const origResizeCanvas = proto.resizeCanvas;
    const origPixelDensity = proto.pixelDensity;
    const origCreateGraphics = proto.createGraphics;
    const origCreateFramebuffer = proto.createFramebuffer;
    const origCreateImage = proto.createImage;

    // The canvas is rendered at `size` pixels for 600 units: pixelDensity is pinned to
    // size / 600, so the sketch keeps its 0..600 coordinates (width/height stay 600)
    // and p5.brush scales its strokes and buffers with the density.
    proto.createCanvas = function createCanvas(w, h) {
      if (pixelsFor(w, h, cfg.density) > cfg.maxPixels) refuse("createCanvas", w, h, cfg.density);
      const result = apply(origCreateCanvas, this, arguments);
      const r = this._renderer;
      if (r && r._pixelDensity !== cfg.density) apply(origPixelDensity, this, [cfg.density]);
      return result;
    };
    proto.resizeCanvas = function resizeCanvas(w, h) {
      if (pixelsFor(w, h, cfg.density) > cfg.maxPixels) refuse("resizeCanvas", w, h, cfg.density);
      return apply(origResizeCanvas, this, arguments);
    };
    proto.pixelDensity = function pixelDensity(val) {
      // Pinned: a sketch asking for density 2 (or 20) still renders at size / 600.
      if (typeof val === "number") return apply(origPixelDensity, this, [cfg.density]);
      return apply(origPixelDensity, this, []);
    };
    proto.createGraphics = function createGraphics(w, h) {
      const px = pixelsFor(w, h, cfg.density);
      if (px > cfg.maxPixels || state.graphicsPixels + px > cfg.maxGraphicsPixels) refuse("createGraphics", w, h, cfg.density);
      if (immediateCaller() !== "brush") state.graphicsPixels += px;
      return apply(origCreateGraphics, this, arguments);
    };
    proto.createFramebuffer = function createFramebuffer(options) {
      const o = options || {};
      const w = o.width !== undefined ? o.width : this.width;
      const h = o.height !== undefined ? o.height : this.height;
      const d = o.density !== undefined ? o.density : cfg.density;
      const px = pixelsFor(w, h, +d || cfg.density);
      if (px > cfg.maxPixels || state.graphicsPixels + px > cfg.maxGraphicsPixels) refuse("createFramebuffer", w, h, +d || cfg.density);
      if (immediateCaller() !== "brush") state.graphicsPixels += px;
      return apply(origCreateFramebuffer, this, arguments);
    };
    if (typeof origCreateImage === "function") {
      proto.createImage = function createImage(w, h) {
        if (pixelsFor(w, h, 1) > cfg.maxPixels) refuse("createImage", w, h, 1);
        return apply(origCreateImage, this, arguments);
      };
    }
    const G = P5.Graphics && P5.Graphics.prototype;
    if (G) {
      const gPixelDensity = G.pixelDensity;
      const gResize = G.resizeCanvas;
      if (typeof gPixelDensity === "function") {
        G.pixelDensity = function pixelDensity(val) {
          if (typeof val === "number") return apply(gPixelDensity, this, [cfg.density]);
          return apply(gPixelDensity, this, []);
        };
      }
      if (typeof gResize === "function") {
        G.resizeCanvas = function resizeCanvas(w, h) {
          if (pixelsFor(w, h, cfg.density) > cfg.maxPixels) refuse("resizeCanvas", w, h, cfg.density);
          return apply(gResize, this, arguments);
        };
      }
    }

    // Lifecycle: seed right before setup (after p5.brush's own presetup hook, which is
    // registered first), and finish after p5.brush's postsetup/postdraw hooks have
    // flushed its pending compositing.
    const origRandomSeed = proto.randomSeed; // p5.brush's wrapper: seeds brush too
    const origNoiseSeed = proto.noiseSeed;
    const origNoLoop = proto.noLoop;
    // A throwing lifecycle hook (p5.brush's postsetup flush on a 2D canvas, say)
    // rejects p5's startup; no later hook of ours would run, so end the render here.
    const origRunHook = proto._runLifecycleHook;
    if (typeof origRunHook === "function") {
      proto._runLifecycleHook = function _runLifecycleHook(name) {
        const self = this;
        return apply(origRunHook, this, [name]).then(undefined, (e) => {
          if (self === state.inst) failed(e);
          throw e;
        });
      };
    }
    P5.registerAddon(function (p5, fn, lifecycles) {
      lifecycles.presetup = function () {
        if (state.inst !== null && state.inst !== this) return;
        state.inst = this;
        apply(origRandomSeed, this, [cfg.seed]);
        apply(origNoiseSeed, this, [cfg.seed]);
        marks.setupStart = now();
      };
      lifecycles.postsetup = function () {
        if (this !== state.inst) return;
        marks.setupEnd = now();
        if (!state.hasDraw) finish("ok");
      };
      lifecycles.postdraw = function () {
        if (this !== state.inst || state.done) return;
        state.frames++;
        if (state.frames >= cfg.drawFrames || !this._loop) {
          apply(origNoLoop, this, []);
          finish("ok");
        }
      };
    });
  }

  // --------------------------------------------------------------- run the sketch
  function failed(err) {
    recordError(err, null);
    finish("error");
  }

  // An uncaught error makes the render a render_error whatever happens next; give the
  // sketch a moment (it may still be painting), then stop waiting. This also ends
  // renders whose p5 startup died inside a library hook.
  const UNCAUGHT_GRACE_MS = 1000;
  const setTimeout_ = window.setTimeout.bind(window);
  I.hooks.onUncaught = function () {
    if (state.started && !state.done) setTimeout_(() => finish("error"), UNCAUGHT_GRACE_MS);
  };

  // setup()/draw() are wrapped so an exception ends the render at once (p5 would just
  // stop, leaving us to wait for the deadline).
  function wrapLifecycle(fnValue) {
    return function () {
      let result;
      try {
        result = apply(fnValue, this, arguments);
      } catch (e) {
        failed(e);
        throw e;
      }
      if (result !== null && typeof result === "object" && typeof result.then === "function") {
        return result.then(undefined, (e) => { failed(e); throw e; });
      }
      return result;
    };
  }

  function afterSketch() {
    marks.sketchLoaded = now();
    if (state.done) return;
    let userSetup, userDraw;
    try {
      userSetup = window.setup;
      userDraw = window.draw;
    } catch (e) {
      failed(e);
      return;
    }
    if (typeof userSetup !== "function" && typeof userDraw !== "function") {
      if (errors.length === 0) recordMessage("The sketch defines no setup() function (p5 global mode).");
      finish("error");
      return;
    }
    state.hasDraw = typeof userDraw === "function";
    try {
      if (typeof userSetup === "function") window.setup = wrapLifecycle(userSetup);
      if (state.hasDraw) window.draw = wrapLifecycle(userDraw);
    } catch (e) {
      // A sketch that froze its own setup still runs; it just loses the fast failure path.
    }
    if (!P5) {
      recordMessage("p5.js is not available in the page.");
      finish("error");
      return;
    }
    try {
      new P5(); // global mode: binds p5's (guarded) functions onto window, runs setup
    } catch (e) {
      failed(e);
    }
  }

  function run(options) {
    if (state.started) return false;
    state.started = true;
    marks.run = now();
    cfg.seed = options.seed >>> 0;
    cfg.density = +options.density || 1;
    cfg.maxPixels = options.maxPixels | 0;
    cfg.maxGraphicsPixels = options.maxGraphicsPixels | 0;
    cfg.drawFrames = Math.max(1, options.drawFrames | 0);
    I.reseed(cfg.seed);
    const script = apply(createElement, document, ["script"]);
    script.src = options.sketchUrl;
    script.onload = afterSketch;
    script.onerror = function () {
      recordMessage("The sketch could not be loaded.");
      finish("error");
    };
    apply(appendChild, document.head, [script]);
    return true;
  }

  function poll() {
    return state.done;
  }

  // run() + wait + collect() in one call: the Python side awaits the returned promise
  // (page.wait_for_function adopts it, with Playwright's timeout as the soft deadline).
  // After the last frame, let queued tasks run (CSP reports, rejections of requests the
  // sketch fired and forgot) so they count, then capture.
  function settle() {
    return new Promise((resolve) => setTimeout_(() => setTimeout_(resolve, 0), 0));
  }

  function render(options) {
    run(options);
    return donePromise.then(settle).then(collect);
  }

  // Read the p5 instance's own canvas (with text() in WEBGL, the first canvas on the
  // page can be a hidden helper). A 1-pixel read first makes the GPU finish, so the
  // timings are honest and toDataURL sees finished work.
  function collect() {
    const t0 = now();
    let png = null, width = 0, height = 0, webgl = false, captureError = null;
    const inst = state.inst;
    let canvas = null;
    try { canvas = inst ? inst.canvas : null; } catch (e) { canvas = null; }
    if (canvas && canvas instanceof HTMLCanvasElement) {
      try {
        width = canvas.width;
        height = canvas.height;
        const gl = apply(getContext, canvas, ["webgl2"]) || apply(getContext, canvas, ["webgl"]);
        if (gl) {
          webgl = true;
          gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));
        } else {
          const ctx = apply(getContext, canvas, ["2d"]);
          if (ctx) ctx.getImageData(0, 0, 1, 1);
        }
        marks.flushed = now();
        if (width > 0 && height > 0) png = apply(toDataURL, canvas, ["image/png"]);
      } catch (e) {
        captureError = String(e && e.message);
      }
    }
    marks.captured = now();
    const copy = (o) => { const r = {}; for (const k in o) r[k] = o[k]; return r; };
    return {
      status: state.status, done: state.done, frames: state.frames, png, width, height, webgl,
      captureError, errors: errors.slice(0), bare: copy(bare), brush: copy(brushCalls),
      violations: Object.keys(violations), marks: copy(marks), captureMs: now() - t0,
      csp: I.cspViolations.slice(0),
    };
  }

  // Is WebGL2 available at all? Asked only when a render failed, to tell a broken GPU
  // process (infrastructure) from a broken sketch.
  function probe() {
    try {
      const c = apply(createElement, document, ["canvas"]);
      c.width = 1; c.height = 1;
      return !!apply(getContext, c, ["webgl2"]);
    } catch (e) {
      return false;
    }
  }

  const api = Object.freeze({
    run, poll, render, collect, probe,
    libraries: !!P5 && !!BRUSH,
  });
  defineProperty(window, "__paint", { value: api, writable: false, configurable: false, enumerable: false });
})();
