// Paint with Code Studio — render harness, part 2 of 2.
//
// Runs AFTER p5.js and p5.brush have loaded and BEFORE the sketch. The sketch shares
// this page's JavaScript realm, so nothing here may depend on anything it can touch:
//  * the built-ins are frozen before the sketch runs (no prototype getters, no replaced
//    Object.keys or Promise.prototype.then), and the harness keeps its own state in
//    closures and null-prototype maps;
//  * the sketch is the body of a function in a module (strict mode, `this` undefined)
//    whose first line imports, from /shadows.js, a recording stub for EVERY global
//    outside the allowlist (sketch_api.json): `document`, `window`, `p5`, `rect`,
//    `createGraphics`, ... A call of a stub is counted and does nothing; any other use is
//    counted and throws;
//  * `brush` is a frozen sandbox holding the ten allowed methods (other p5.brush
//    methods are counting stubs), and the allowed p5 functions are replaced on window by
//    wrappers that take only plain values and return only plain values, so no object of
//    p5's (the instance, the renderer, the canvas) ever reaches the sketch;
//  * the result is one JSON string held in this closure; Python asks for it and for the
//    canvas element through the frozen window.__paint, and copies the pixels from an
//    isolated world. Python decides the verdict from the raw counts.
// The page may be loaded long before the sketch is known (a pre-warmed page); run()
// then seeds, injects /sketch.js and starts p5 in global mode.
(function () {
  "use strict";
  const I = window.__paintInternal;
  delete window.__paintInternal;
  const { apply, defineProperty, now, recordError, recordMessage, errors } = I;

  const P5 = window.p5;
  const BRUSH = window.brush;
  const proto = P5 && P5.prototype;
  const ProxyCtor = Proxy;
  const TypeErrorCtor = TypeError;
  const create = Object.create;
  const freeze = Object.freeze;
  const isFrozen = Object.isFrozen;
  const getOwnPropertyNames = Object.getOwnPropertyNames;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const isArray = Array.isArray;
  const charCodeAt = String.prototype.charCodeAt;
  const numToString = Number.prototype.toString;
  const strSlice = String.prototype.slice;
  const createElement = Document.prototype.createElement;
  const appendChild = Node.prototype.appendChild;
  const getContext = HTMLCanvasElement.prototype.getContext;
  const head = document.head;
  const ceil = Math.ceil;
  const isFinite_ = Number.isFinite;
  const setTimeout_ = window.setTimeout.bind(window);
  const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const reTest = RegExp.prototype.test;

  const cfg = {
    seed: 0, density: 1, maxPixels: 2048 * 2048, drawFrames: 1, maxGraphicsPixels: 4 * 2048 * 2048,
    api: null,
  };
  const state = {
    started: false, done: false, status: "pending", inst: null, hasDraw: false, frames: 0,
    graphicsPixels: 0, setup: undefined, draw: undefined, exported: false, canvas: null,
    canvasWidth: 0, canvasHeight: 0,
  };
  const marks = create(null);
  marks.pageLoaded = I.loadedAt;
  marks.ready = now();
  // Raw counts for Python: names outside the allowlist that the sketch touched, and the
  // allowed brush methods it called.
  const denied = create(null);
  const brushCalls = create(null);

  function bump(map, name) {
    defineProperty(map, name, { value: (map[name] || 0) + 1, writable: true, enumerable: true, configurable: true });
  }

  let resolveDone = null;
  const donePromise = new Promise((resolve) => { resolveDone = resolve; });

  function finish(status) {
    if (state.done) return;
    state.done = true;
    state.status = status;
    marks.done = now();
    resolveDone(true);
  }

  function failed(err) {
    recordError(err, null);
    finish("error");
  }

  // ------------------------------------------------------------- denial stubs
  // What a forbidden global resolves to in the sketch. Calling it is counted and does
  // nothing (a p5 primitive simply draws nothing); reading or writing through it is
  // counted and throws, because there is nothing behind it.
  function denial(name) {
    const refuse = function () {
      bump(denied, name);
      throw new TypeErrorCtor(name + " is outside the sketch API");
    };
    const handler = freeze({
      apply() { bump(denied, name); return undefined; },
      construct: refuse, get: refuse, set: refuse, has: refuse, deleteProperty: refuse,
      defineProperty: refuse, getOwnPropertyDescriptor: refuse, ownKeys: refuse,
      getPrototypeOf: refuse, setPrototypeOf: refuse, isExtensible: refuse, preventExtensions: refuse,
    });
    return new ProxyCtor(function () {}, handler);
  }

  function isPlain(value) {
    const t = typeof value;
    return value === null || t === "number" || t === "string" || t === "boolean" || t === "undefined";
  }

  // Arguments for an allowed function: plain values only (random/min/max may take an
  // array, which p5 only indexes). Anything else is refused and counted.
  function plainArguments(args, label, arraysOk) {
    const out = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (!isPlain(a) && !(arraysOk && isArray(a))) {
        bump(denied, label + "(object argument)");
        return null;
      }
      out[i] = a;
    }
    return out;
  }

  // ------------------------------------------------------------- the sandbox brush
  const sandboxBrush = create(null);
  function buildSandboxBrush(allowed) {
    if (!BRUSH) return;
    for (const name of allowed) {
      const real = BRUSH[name];
      if (typeof real !== "function") continue;
      defineProperty(sandboxBrush, name, {
        enumerable: true,
        value: function () {
          const args = plainArguments(arguments, "brush." + name, false);
          if (args === null || state.done) return undefined; // nothing paints after the result
          bump(brushCalls, name);
          const result = apply(real, BRUSH, args);
          return isPlain(result) ? result : undefined;
        },
      });
    }
    for (const name of getOwnPropertyNames(BRUSH)) {
      if (getOwnPropertyDescriptor(sandboxBrush, name)) continue;
      const label = "brush." + name;
      defineProperty(sandboxBrush, name, {
        enumerable: true,
        value: function () { bump(denied, label); return undefined; },
      });
    }
    freeze(sandboxBrush);
  }

  // ------------------------------------------------------------- frozen built-ins
  // Everything the sketch can reach from a literal or an allowed global. Frozen before
  // any sketch code runs, so it cannot plant a getter, a `then`, or a replacement
  // method for p5, p5.brush or this harness to trip over.
  function harden() {
    const seen = new Set();
    const todo = [];
    const add = (o) => { if ((typeof o === "object" || typeof o === "function") && o !== null) todo[todo.length] = o; };
    const intrinsics = [
      Object, Function, Array, String, Number, Boolean, Symbol, BigInt, RegExp, Math, JSON, Reflect,
      Promise, Map, Set, WeakMap, WeakSet, WeakRef, ArrayBuffer, DataView, Error, TypeError,
      RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError, Date,
      Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
      Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array, console,
      getPrototypeOf(Int8Array),
      getPrototypeOf(function* () {}), getPrototypeOf(async function () {}),
      getPrototypeOf(async function* () {}),
      getPrototypeOf([][Symbol.iterator]()), getPrototypeOf(""[Symbol.iterator]()),
      getPrototypeOf(new Map()[Symbol.iterator]()), getPrototypeOf(new Set()[Symbol.iterator]()),
      getPrototypeOf(/x/[Symbol.matchAll]("")),
    ];
    if (typeof Iterator !== "undefined") intrinsics[intrinsics.length] = Iterator;
    for (const o of intrinsics) add(o);
    while (todo.length) {
      const o = todo.pop();
      if (seen.has(o)) continue;
      seen.add(o);
      add(getPrototypeOf(o));
      for (const key of Reflect.ownKeys(o)) {
        const d = getOwnPropertyDescriptor(o, key);
        if (!d) continue;
        if ("value" in d) add(d.value);
        else { add(d.get); add(d.set); }
      }
      if (!isFrozen(o)) freeze(o);
    }
  }

  // ------------------------------------------------------------- element ids
  // An element's id is a global name (p5 calls its canvas "defaultCanvas0"), and one that
  // appears after the shadow list was made would hand the sketch the real element, and
  // through it the window. Ids are kept off the DOM: the property still reads back what
  // was set, nothing is exposed by name. (p5 looks ids up only for describe() and
  // parent(), which no sketch can reach.)
  const ids = new WeakMap();
  const idsGet = WeakMap.prototype.get;
  const idsSet = WeakMap.prototype.set;
  defineProperty(Element.prototype, "id", {
    configurable: true, enumerable: true,
    get() { return apply(idsGet, ids, [this]) || ""; },
    set(value) { apply(idsSet, ids, [this, "" + value]); },
  });

  // The names on window now, before any sketch: the shadow list covers these.
  const baselineNames = create(null);
  for (const name of getOwnPropertyNames(window)) baselineNames[name] = true;

  // ------------------------------------------------------------- canvas budget
  function refuse(what, w, h, density) {
    bump(denied, "canvas_too_large");
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

  // p5's own methods keep the budget and the pinned density for every caller (p5.brush
  // makes buffers too); the sketch itself can reach none of these but createCanvas.
  if (proto) {
    const origCreateCanvas = proto.createCanvas;
    const origPixelDensity = proto.pixelDensity;
    const origCreateGraphics = proto.createGraphics;
    const origCreateFramebuffer = proto.createFramebuffer;

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
    proto.pixelDensity = function pixelDensity(val) {
      if (typeof val === "number") return apply(origPixelDensity, this, [cfg.density]);
      return apply(origPixelDensity, this, []);
    };
    proto.createGraphics = function createGraphics(w, h) {
      const px = pixelsFor(w, h, cfg.density);
      if (px > cfg.maxPixels || state.graphicsPixels + px > cfg.maxGraphicsPixels) refuse("createGraphics", w, h, cfg.density);
      state.graphicsPixels += px;
      return apply(origCreateGraphics, this, arguments);
    };
    proto.createFramebuffer = function createFramebuffer(options) {
      const o = options || {};
      const w = o.width !== undefined ? o.width : this.width;
      const h = o.height !== undefined ? o.height : this.height;
      const d = o.density !== undefined ? o.density : cfg.density;
      const px = pixelsFor(w, h, +d || cfg.density);
      if (px > cfg.maxPixels || state.graphicsPixels + px > cfg.maxGraphicsPixels) refuse("createFramebuffer", w, h, +d || cfg.density);
      state.graphicsPixels += px;
      return apply(origCreateFramebuffer, this, arguments);
    };
  }

  // ------------------------------------------------------------- the p5 globals
  // After p5 has bound its globals (global mode, in the constructor) and before setup():
  // every allowed function becomes a wrapper that passes plain values in and out, and
  // every other name p5 put on window becomes a counting dead end. Non-configurable, so
  // the sketch cannot put them back.
  const ARRAY_FUNCTIONS = { random: true, min: true, max: true };
  function lockGlobals(inst) {
    const api = cfg.api;
    const allowedFunctions = create(null);
    const allowed = create(null);
    for (const n of api.functions) { allowedFunctions[n] = true; allowed[n] = true; }
    for (const n of api.values) allowed[n] = true;
    for (const n of api.globals) allowed[n] = true;
    allowed.brush = true; allowed.setup = true; allowed.draw = true;
    const webgl = P5.prototype.WEBGL;
    for (const name of api.functions) {
      const real = proto[name];
      if (typeof real !== "function") continue;
      const arraysOk = ARRAY_FUNCTIONS[name] === true;
      const wrapper = function () {
        const args = plainArguments(arguments, name, arraysOk);
        // Once the render is done, its counts are final: nothing the sketch calls later
        // (a loop() from a forgotten promise, say) may change the canvas behind them.
        if (args === null || state.done) return undefined;
        if (name === "createCanvas" && (args.length > 3 || args[2] !== webgl)) {
          bump(denied, "createCanvas(not WEBGL)");
          return undefined;
        }
        if (name === "createCanvas") checkCanvasSize(args);
        const result = apply(real, inst, args);
        if (name === "createCanvas") noteCanvas(inst);
        if (isPlain(result)) return result;
        if (arraysOk && isArray(args[0])) return result; // an element of the sketch's own array
        return undefined;
      };
      defineProperty(wrapper, "name", { value: name });
      defineProperty(window, name, { value: wrapper, writable: false, enumerable: true, configurable: false });
    }
    // Every name that appeared on window since this harness loaded (p5's globals, and
    // anything else put there before setup) was not on the page when the shadow list
    // was made, so no stub covers it: lock it here.
    for (const name of getOwnPropertyNames(window)) {
      if (allowed[name] || baselineNames[name]) continue;
      const d = getOwnPropertyDescriptor(window, name);
      if (!d || !d.configurable) continue;
      defineProperty(window, name, {
        configurable: false, enumerable: false,
        get() { bump(denied, name); return undefined; },
        set() { bump(denied, name); },
      });
    }
  }

  // The published canvas: 600 x 600 units, made once. Another size changes what each check
  // sees (the text check reads at most 600 px, the judge the whole PNG; a 38-unit canvas is
  // a thumbnail), and a second createCanvas would resize it: either is canvas_size.
  const CANVAS_UNITS = 600;
  function checkCanvasSize(args) {
    if (args[0] === CANVAS_UNITS && args[1] === CANVAS_UNITS && state.canvas === null) return;
    bump(denied, "canvas_size");
    const shown = (v) => (typeof v === "number" ? "" + v : typeof v);
    throw new RangeError(
      `canvas_size: createCanvas(${shown(args[0])}, ${shown(args[1])})` +
      (state.canvas === null ? "" : " a second time") +
      `: the canvas is ${CANVAS_UNITS} x ${CANVAS_UNITS} units, made once with createCanvas(600, 600, WEBGL)`
    );
  }

  function noteCanvas(inst) {
    let canvas = null;
    try { canvas = inst.canvas; } catch (e) { canvas = null; }
    if (!(canvas instanceof HTMLCanvasElement)) return;
    state.canvas = canvas;
    state.canvasWidth = canvas.width;
    state.canvasHeight = canvas.height;
  }

  // ------------------------------------------------------------- lifecycle
  // Seed right before setup (after p5.brush's own presetup hook, which is registered
  // first), and finish after p5.brush's postsetup/postdraw hooks have flushed its
  // pending compositing.
  if (proto) {
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
        lockGlobals(this);
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

  // An uncaught error makes the render a render_error whatever happens next; give the
  // sketch a moment (it may still be painting), then stop waiting. This also ends
  // renders whose p5 startup died inside a library hook.
  const UNCAUGHT_GRACE_MS = 1000;
  I.hooks.onUncaught = function () {
    if (state.started && !state.done) setTimeout_(() => finish("error"), UNCAUGHT_GRACE_MS);
  };

  // setup()/draw() run with `this` undefined (p5 would pass window) and end the render
  // at once on an exception (p5 would just stop, leaving us to wait for the deadline).
  function lifecycle(fnValue) {
    return function () {
      let result;
      try {
        result = apply(fnValue, undefined, []);
      } catch (e) {
        failed(e);
        throw e;
      }
      if (result instanceof Promise) return apply(Promise.prototype.then, result, [undefined, (e) => { failed(e); throw e; }]);
      return undefined;
    };
  }

  // /shadows.js takes this kit (once) when prepare() loads it, before any sketch code
  // runs: the stubs, the sandbox brush, and the door the module's last line uses to hand
  // over setup and draw.
  // Which of the sketch's markers ran: one flag a marker, sized by run() before the sketch
  // loads. The sketch's module holds ran() only under a name the sketch cannot write.
  let ranFlags = new Uint8Array(0);
  let ranClaimed = false;
  function ranString() {
    let out = "";
    for (let i = 0; i < ranFlags.length; i++) out += ranFlags[i] ? "1" : "0";
    return out;
  }

  function shadowKit() {
    let taken = false;
    return function take() {
      if (taken) throw new TypeErrorCtor("the shadow kit is gone");
      taken = true;
      return freeze({
        deny: denial,
        brush: sandboxBrush,
        // The markers' function (paintenv/coverage.py), once: the sketch module's first line
        // claims it before any sketch code runs, so a sketch that reaches /shadows.js's
        // exports (a dynamic import) gets null, not a way to mark code that never ran.
        claimRan: function claimRan() {
          if (ranClaimed) return null;
          ranClaimed = true;
          return function ran(k) { ranFlags[k] = 1; }; // out of range: ignored by the typed array
        },
        receive: function receive(setup, draw) {
          if (state.exported) return;
          state.exported = true;
          if (typeof setup === "function") state.setup = setup;
          if (typeof draw === "function") state.draw = draw;
          setTimeout_(startSketch, 0); // outside the module's own evaluation
        },
      });
    };
  }

  // The module's load event: it ran to its last line (and handed over setup/draw), or
  // it failed to parse or threw. A module still awaiting at top level hands over later.
  function afterLoad() {
    marks.sketchLoaded = now();
    if (!state.exported && errors.length > 0) finish("error");
  }

  function startSketch() {
    if (state.done) return;
    if (state.setup === undefined && state.draw === undefined) {
      if (errors.length === 0) recordMessage("The sketch defines no setup() function (p5 global mode).");
      finish("error");
      return;
    }
    state.hasDraw = state.draw !== undefined;
    if (state.setup !== undefined) defineProperty(window, "setup", { value: lifecycle(state.setup), configurable: false, writable: false });
    if (state.hasDraw) defineProperty(window, "draw", { value: lifecycle(state.draw), configurable: false, writable: false });
    if (!P5) {
      recordMessage("p5.js is not available in the page.");
      finish("error");
      return;
    }
    try {
      new P5(); // global mode: binds p5's functions onto window, then runs setup
    } catch (e) {
      failed(e);
    }
  }

  // While the page pre-warms, before any sketch: the sandbox brush, and /shadows.js
  // evaluated once (building ~1600 stubs), so a render only links its module against
  // stubs that already exist (the module map keeps /shadows.js by its URL).
  let prepared = null;
  function prepare(api) {
    if (prepared !== null) return prepared;
    cfg.api = api;
    buildSandboxBrush(api.brush);
    defineProperty(window, "__paintShadowKit", { value: shadowKit(), configurable: true });
    prepared = new Promise((resolve) => {
      const script = apply(createElement, document, ["script"]);
      script.type = "module";
      script.src = "/shadows.js";
      script.onload = () => resolve(true);
      script.onerror = () => resolve(false);
      apply(appendChild, head, [script]);
    });
    return prepared;
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
    ranFlags = new Uint8Array(Math.max(0, Math.min(options.markers | 0, 65536)));
    if (cfg.api === null) {
      recordMessage("The render page was not prepared.");
      finish("error");
      return true;
    }
    const script = apply(createElement, document, ["script"]);
    script.type = "module";
    script.src = options.sketchUrl;
    script.onload = afterLoad;
    script.onerror = function () {
      recordMessage("The sketch could not be loaded.");
      finish("error");
    };
    apply(appendChild, head, [script]);
    return true;
  }

  // ------------------------------------------------------------- the result
  // One JSON string, built by hand from primitives: no JSON.stringify, no toJSON, no
  // getters of the sketch's.
  function hex4(code) { return apply(strSlice, apply(numToString, code + 0x10000, [16]), [1]); }
  function quote(value) {
    const s = "" + value;
    let out = "\"";
    for (let i = 0; i < s.length; i++) {
      const c = apply(charCodeAt, s, [i]);
      if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) out += "\\u" + hex4(c);
      else out += s[i];
    }
    return out + "\"";
  }
  function number(v) { return typeof v === "number" && isFinite_(v) ? "" + v : "null"; }
  function counts(map) {
    let out = "{", first = true;
    for (const key of getOwnPropertyNames(map)) {
      out += (first ? "" : ",") + quote(key) + ":" + number(map[key]);
      first = false;
    }
    return out + "}";
  }
  function errorList() {
    let out = "[";
    for (let i = 0; i < errors.length; i++) {
      const e = errors[i];
      out += (i ? "," : "") + "{\"message\":" + quote(e.message) + ",\"line\":" + number(e.line) + ",\"col\":" + number(e.col) + "}";
    }
    return out + "]";
  }
  function stringList(list) {
    let out = "[";
    for (let i = 0; i < list.length; i++) out += (i ? "," : "") + quote(list[i]);
    return out + "]";
  }

  // A 1-pixel read makes the GPU finish, so the timings are honest and the canvas the
  // reader copies holds finished work. The result stays in this closure: Python asks for
  // it (and for the canvas element, which it then opens from an isolated world) through
  // the frozen window.__paint, nothing the sketch could watch or rewrite.
  let resultString = null;
  function collect() {
    let flushed = false;
    const canvas = state.canvas;
    if (canvas) {
      try {
        const gl = apply(getContext, canvas, ["webgl2"]) || apply(getContext, canvas, ["webgl"]);
        if (gl) gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));
        flushed = true;
      } catch (e) {
        recordError(e, null);
      }
    }
    marks.flushed = now();
    resultString = "{\"status\":" + quote(state.status) + ",\"done\":" + (state.done ? "true" : "false") +
      ",\"frames\":" + number(state.frames) + ",\"flushed\":" + (flushed ? "true" : "false") +
      ",\"canvasWidth\":" + number(state.canvasWidth) + ",\"canvasHeight\":" + number(state.canvasHeight) +
      ",\"denied\":" + counts(denied) + ",\"brush\":" + counts(brushCalls) + ",\"errors\":" + errorList() +
      ",\"marks\":" + counts(marks) + ",\"csp\":" + stringList(I.cspViolations) +
      ",\"ran\":\"" + ranString() + "\"}";
    return true;
  }
  function result() { return resultString; }
  function canvasElement() { return state.canvas; }

  // After the last frame, let queued tasks run (CSP reports, rejections of requests the
  // sketch fired and forgot) so they count, then write the result.
  function settle() {
    return new Promise((resolve) => setTimeout_(() => setTimeout_(resolve, 0), 0));
  }

  // run() + wait + collect(): the Python side awaits the returned promise (the watchdog
  // kills the browser at the sketch's deadline) and then reads the result elsewhere.
  function render(options) {
    if (options.churn === true && ballast === null) churn();
    run(options);
    return apply(Promise.prototype.then, apply(Promise.prototype.then, donePromise, [settle]), [collect]);
  }

  // The global names the sketch module must not see: everything on window and its
  // prototypes, and every p5 method, less the allowlist. Asked once per browser, on a
  // page where no sketch has run.
  function shadowNames(allowedNames) {
    const allowed = create(null);
    for (const n of allowedNames) allowed[n] = true;
    const names = create(null);
    const out = [];
    const addAll = (o) => {
      for (const n of getOwnPropertyNames(o)) {
        if (names[n] || allowed[n] || !apply(reTest, IDENT, [n])) continue;
        names[n] = true;
        out[out.length] = n;
      }
    };
    for (let o = window; o; o = getPrototypeOf(o)) addAll(o);
    if (proto) for (let o = proto; o; o = getPrototypeOf(o)) addAll(o);
    return out;
  }

  // ------------------------------------------------------------- feature probes
  // What a sketch can reach that reads the renderer's history instead of its seed
  // (tests/paintenv/adversarial/page_surface.py walks the page for it): console.memory,
  // the heap's size, another number in a page that idled or churned; console.context and
  // console.createTask, consoles and tasks of the page's own. Each is a counting dead end,
  // like a forbidden name (runtime_forbidden_api); performance, navigator, document and
  // their clocks and counters are forbidden names already. Non-configurable, and console
  // is frozen below, so the sketch cannot put them back.
  for (const key of ["memory", "context", "createTask"]) {
    const label = "console." + key;
    try {
      defineProperty(console, key, {
        configurable: false, enumerable: false,
        get() { bump(denied, label); return undefined; },
        set(_value) { bump(denied, label); },
      });
    } catch (e) { recordMessage("The render page could not pin " + label + "."); }
  }

  // The determinism check's twin renders on a page whose heap has a history the first
  // render's had not: garbage dropped and a block kept alive, as a worker's page that
  // idled, churned or collected at other moments would have. A painting that depends on
  // the heap (through anything the pins above missed) then paints something else.
  let ballast = null;
  function churn() {
    const keep = [];
    for (let i = 0; i < 60000; i++) keep[keep.length] = { i, s: "b" + i };
    let junk = null;
    for (let i = 0; i < 200; i++) junk = new Array(2000).fill(i);
    ballast = [keep, junk];
    return ballast.length;
  }

  harden();

  const api = freeze({
    prepare, render, result, canvas: canvasElement, shadowNames,
    libraries: !!P5 && !!BRUSH,
  });
  defineProperty(window, "__paint", { value: api, writable: false, configurable: false, enumerable: false });
})();
