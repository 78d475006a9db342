// Paint with Code Studio — render harness, part 1 of 2.
//
// Runs BEFORE p5.js and p5.brush load, so that:
//  * Math.random (and crypto's random sources) are a seeded PRNG by the time the
//    libraries draw their own seeds from it (p5.brush does, at load time);
//  * stack traces cannot be reformatted or truncated by the sketch (the runtime guard
//    tells sketch calls from library calls by reading the stack);
//  * every uncaught error is recorded, whatever the sketch does later.
//
// Everything lives in this closure; part 2 (harness.js) picks it up from a property it
// deletes immediately, so the sketch never sees any of it.
(function () {
  "use strict";

  // Built-ins captured before any untrusted code runs: the sketch may overwrite the
  // global ones, and the harness keeps working with these.
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const OrigError = Error;
  const imul = Math.imul;
  const floor = Math.floor;
  const StringCtor = String;
  const reExec = RegExp.prototype.exec;
  const strSlice = String.prototype.slice;
  const strSplit = String.prototype.split;
  const strIndexOf = String.prototype.indexOf;
  const weakHas = WeakSet.prototype.has;
  const weakAdd = WeakSet.prototype.add;
  const perfNow = Performance.prototype.now;
  const perf = performance;
  const ORIGIN = location.origin;
  const now = () => apply(perfNow, perf, []);

  // ---------------------------------------------------------------- seeded randomness
  // sfc32, its 128-bit state expanded from one 32-bit seed with splitmix32. Fast, good
  // enough for painting, and identical in every Chromium.
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  function next32() {
    const t = (((s0 + s1) | 0) + s3) | 0;
    s3 = (s3 + 1) | 0;
    s0 = s1 ^ (s1 >>> 9);
    s1 = (s2 + (s2 << 3)) | 0;
    s2 = (s2 << 21) | (s2 >>> 11);
    s2 = (s2 + t) | 0;
    return t >>> 0;
  }
  function reseed(seed) {
    let x = (seed >>> 0) ^ 0x5f3759df;
    const splitmix = () => {
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = imul(z ^ (z >>> 16), 0x85ebca6b);
      z = imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    s0 = splitmix(); s1 = splitmix(); s2 = splitmix(); s3 = splitmix();
    for (let i = 0; i < 16; i++) next32();
  }
  reseed(0); // the libraries load under seed 0; run() reseeds with the render's seed

  const random = function random() { return next32() / 4294967296; };
  defineProperty(Math, "random", { value: random, writable: true, configurable: true });

  // crypto.getRandomValues / randomUUID would be a second, unseeded source.
  try {
    const getRandomValues = function getRandomValues(array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = next32() & 0xff;
      return array;
    };
    const hex = (n) => (n + 0x100).toString(16).slice(1);
    const randomUUID = function randomUUID() {
      const b = new Uint8Array(16);
      getRandomValues(b);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let s = "";
      for (let i = 0; i < 16; i++) s += hex(b[i]) + (i === 3 || i === 5 || i === 7 || i === 9 ? "-" : "");
      return s;
    };
    defineProperty(crypto, "getRandomValues", { value: getRandomValues, writable: true, configurable: true });
    defineProperty(crypto, "randomUUID", { value: randomUUID, writable: true, configurable: true });
  } catch (e) { /* crypto missing: nothing to seed */ }

  // ---------------------------------------------------------------- pinned clocks
  // Time is a second source of nondeterminism: Date, performance.now() and the
  // animation-frame timestamps all run on a virtual clock that starts at a fixed instant
  // and moves 1000/60 ms per animation frame, so the same (code, seed) sees the same
  // times. The harness keeps the real performance.now (captured above) for its timings.
  const EPOCH_MS = 1767225600000; // 2026-01-01T00:00:00Z
  const FRAME_MS = 1000 / 60;
  let virtualMs = 0;
  defineProperty(Performance.prototype, "now", {
    value: function now() { return virtualMs; }, writable: true, configurable: true,
  });
  const OrigDate = Date;
  const construct = Reflect.construct;
  const PinnedDate = function Date() {
    if (new.target === undefined) return apply(OrigDate.prototype.toString, construct(OrigDate, [EPOCH_MS + virtualMs]), []);
    return construct(OrigDate, arguments.length ? arguments : [EPOCH_MS + virtualMs], new.target);
  };
  PinnedDate.prototype = OrigDate.prototype;
  defineProperty(PinnedDate, "now", { value: function now() { return EPOCH_MS + floor(virtualMs); } });
  defineProperty(PinnedDate, "parse", { value: OrigDate.parse });
  defineProperty(PinnedDate, "UTC", { value: OrigDate.UTC });
  defineProperty(window, "Date", { value: PinnedDate, writable: true, configurable: true });
  const origRequestFrame = window.requestAnimationFrame;
  defineProperty(window, "requestAnimationFrame", {
    writable: true, configurable: true,
    value: function requestAnimationFrame(callback) {
      return apply(origRequestFrame, window, [function (_realTimestamp) {
        virtualMs += FRAME_MS;
        return apply(callback, undefined, [virtualMs]);
      }]);
    },
  });

  // ---------------------------------------------------------------- stacks
  // Pin the stack format: a sketch that installs Error.prepareStackTrace or sets
  // Error.stackTraceLimit = 0 could otherwise hide its frames from the guard.
  defineProperty(OrigError, "stackTraceLimit", { value: 64, writable: false, configurable: false });
  defineProperty(OrigError, "prepareStackTrace", { value: undefined, writable: false, configurable: false });

  const SKETCH_URL = ORIGIN + "/sketch.js";
  // The sketch is served as a module whose first line is the harness's import of the
  // shadowed globals, so V8's line numbers run one ahead of the sketch's own.
  const SKETCH_LINE_OFFSET = 1;
  const sketchLine = (line) => (line > SKETCH_LINE_OFFSET ? line - SKETCH_LINE_OFFSET : null);
  const LOC_RE = /\(?((?:https?|blob|data):[^\s()]*?):(\d+):(\d+)\)?\s*$/;
  const EVAL_RE = /eval at [^(]*\(((?:https?):[^\s()]*?):(\d+):(\d+)\)/;

  function exec(re, s) { return apply(reExec, re, [s]); }
  function contains(s, part) { return apply(strIndexOf, s, [part]) !== -1; }

  // One stack line -> where it comes from: "sketch" (the sketch file, or code it
  // eval'd), "p5", "brush", "harness", "native" (a built-in, no location), "other".
  function frameOf(line) {
    if (contains(line, "eval at ")) {
      const m = exec(EVAL_RE, line);
      return { kind: "sketch", url: m ? m[1] : "", line: m ? +m[2] : 0, col: m ? +m[3] : 0, evalFrame: true };
    }
    const m = exec(LOC_RE, line);
    if (!m) return { kind: "native", url: "", line: 0, col: 0 };
    const url = m[1];
    let kind = "other";
    if (url === SKETCH_URL || apply(strIndexOf, url, [SKETCH_URL + "?"]) === 0) {
      return { kind: "sketch", url, line: sketchLine(+m[2]) || 0, col: +m[3] };
    }
    if (contains(url, "/p5.min.js")) kind = "p5";
    else if (contains(url, "/p5.brush.js")) kind = "brush";
    else if (contains(url, "/harness")) kind = "harness";
    return { kind, url, line: +m[2], col: +m[3] };
  }

  function stackLines(stack) {
    if (typeof stack !== "string") return [];
    return apply(strSplit, stack, ["\n"]);
  }

  // Who called the guarded function? The first frame that is neither the harness nor a
  // built-in (Array.prototype.forEach, Reflect.apply, ...). "none" when no JS frame is
  // left, e.g. a primitive passed straight to setTimeout — treated like the sketch.
  function immediateCaller() {
    const lines = stackLines(new OrigError().stack);
    for (let i = 1; i < lines.length; i++) {
      const f = frameOf(lines[i]);
      if (f.kind === "harness" || f.kind === "native") continue;
      return f.kind;
    }
    return "none";
  }

  // The first sketch location in a stack (1-based line and column, as V8 prints them).
  function sketchLocation(stack) {
    const lines = stackLines(stack);
    for (let i = 0; i < lines.length; i++) {
      const f = frameOf(lines[i]);
      if (f.kind === "sketch" && f.line > 0) return { line: f.line, col: f.col };
    }
    return null;
  }

  // ---------------------------------------------------------------- errors
  const MAX_ERRORS = 20;
  const MAX_MESSAGE = 500;
  const errors = [];
  const seenErrors = new WeakSet();

  function safeString(value) {
    try {
      return StringCtor(value);
    } catch (e) {
      return "<unprintable value>";
    }
  }

  function describe(err) {
    if (err !== null && (typeof err === "object" || typeof err === "function")) {
      let name = "", message = "", stack = "";
      try { name = safeString(err.name); } catch (e) { /* hostile getter */ }
      try { message = safeString(err.message); } catch (e) { /* hostile getter */ }
      try { stack = err.stack; } catch (e) { /* hostile getter */ }
      if (!message && !name) message = safeString(err);
      return { text: name && name !== "undefined" ? name + ": " + message : message, stack: stack };
    }
    return { text: "Uncaught " + safeString(err), stack: "" };
  }

  // Record one error; loc (from an ErrorEvent) wins over the stack when it names the
  // sketch file, because a SyntaxError has no useful stack.
  function recordError(err, loc) {
    if (err !== null && typeof err === "object") {
      if (apply(weakHas, seenErrors, [err])) return;
      apply(weakAdd, seenErrors, [err]);
    }
    if (errors.length >= MAX_ERRORS) return;
    const d = describe(err);
    const where = loc || sketchLocation(d.stack);
    let text = d.text;
    if (text.length > MAX_MESSAGE) text = apply(strSlice, text, [0, MAX_MESSAGE]) + "…";
    errors[errors.length] = { message: text, line: where ? where.line : null, col: where ? where.col : null };
  }

  function recordMessage(text) {
    if (errors.length < MAX_ERRORS) errors[errors.length] = { message: text, line: null, col: null };
  }

  // Part 2 sets this: it ends the render soon after an uncaught error, in case p5
  // stopped (an exception inside p5's own startup leaves nothing else to wait for).
  const hooks = { onUncaught: null };
  const listeners = {
    // Only script errors: resource load failures do not bubble to window.
    error(event) {
      let loc = null;
      if (event.filename === SKETCH_URL && sketchLine(event.lineno)) loc = { line: sketchLine(event.lineno), col: event.colno || null };
      recordError(event.error !== undefined && event.error !== null ? event.error : event.message, loc);
      if (hooks.onUncaught) hooks.onUncaught();
    },
    unhandledrejection(event) {
      recordError(event.reason, null);
      if (hooks.onUncaught) hooks.onUncaught();
    },
  };
  window.addEventListener("error", listeners.error);
  window.addEventListener("unhandledrejection", listeners.unhandledrejection);

  // console.error from the sketch's own code counts as an error; the libraries' own
  // console output does not.
  const origConsoleError = console.error;
  defineProperty(console, "error", {
    configurable: true, writable: true,
    value: function error() {
      const caller = immediateCaller();
      if (caller === "sketch" || caller === "other") {
        let text = "";
        for (let i = 0; i < arguments.length; i++) {
          const a = arguments[i];
          text += (i ? " " : "") + (typeof a === "object" && a !== null ? describe(a).text : safeString(a));
        }
        const lines = stackLines(new OrigError().stack);
        let where = null;
        for (let i = 1; i < lines.length && !where; i++) {
          const f = frameOf(lines[i]);
          if (f.kind === "sketch" && f.line > 0) where = { line: f.line, col: f.col };
        }
        if (errors.length < MAX_ERRORS) {
          errors[errors.length] = {
            message: "console.error: " + (text.length > MAX_MESSAGE ? apply(strSlice, text, [0, MAX_MESSAGE]) + "…" : text),
            line: where ? where.line : null, col: where ? where.col : null,
          };
        }
      }
      return apply(origConsoleError, console, arguments);
    },
  });

  // Attempts the Content-Security-Policy refused (fetch, images, workers, ...), for the
  // report: the sandbox holds either way.
  const cspViolations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    if (cspViolations.length < 50) {
      cspViolations[cspViolations.length] = event.effectiveDirective + " " + safeString(event.blockedURI);
    }
  });

  // Hand the internals to part 2, which deletes this property at once.
  defineProperty(window, "__paintInternal", {
    configurable: true, enumerable: false, writable: false,
    value: {
      apply, defineProperty, OrigError, now, reseed, floor,
      immediateCaller, frameOf, stackLines, sketchLocation,
      recordError, recordMessage, errors, cspViolations, SKETCH_URL, hooks,
      loadedAt: now(),
    },
  });
})();
