"""Red-team attacks on the renderer ALONE (the static gate is assumed fooled).

Every test here asserts the renderer does NOT pass the attack (and does not raise out of
render()), so an attack that works shows up as a failing test. "WAS A HOLE" marks attacks
that got `passed == True` against an earlier design and now must fail; "FAILED
(instructive)" marks attacks that never worked, kept so the defence that stops them stays
tested.

The earlier design skipped the stub import for every name tree-sitter reported as
declared at the sketch's top level, and whenever V8 disagreed the sketch read the REAL
global: scopes.py hoisted `var` out of a class static block (a var-scope boundary in
V8), and tree-sitter reads `() => {}` NEWLINE `/ ... /` as a division where V8 inserts a
semicolon and reads a regular expression. With the real window a sketch drew with raw
WebGL, rewrote the result attribute with a MutationObserver, moved the canvas nonce to a
canvas of its own, and broke the WebGL probe to raise RenderUnavailable. Now every stub
is imported and the sketch is the body of a function (its own declarations shadow the
stubs legally, no parser decides), the result and the canvas come from the frozen
window.__paint, and the probe runs in the isolated world.

Run: .venv/bin/python -m pytest tests/paintenv/test_runtime_attacks.py -q -p no:django -m slow
"""
from __future__ import annotations

import functools
import time

import pytest

from paintenv.render_config import RendererConfig
from paintenv.render_result import Render
from paintenv.renderer import Renderer
from paintenv.sandbox import compose_module
from tests.support.rendering import render_many

pytestmark = pytest.mark.slow

SIZE = 128


SHORT_TIMEOUT_S = 4  # for the sketches that must be killed


@pytest.fixture(scope="module")
def short_renderer():
    with Renderer(RendererConfig(timeout_s=SHORT_TIMEOUT_S)) as r:
        yield r


def render(renderer: Renderer, code: str) -> Render:
    return renderer.render(code, seed=0, size=SIZE)


def assert_refused(result: Render) -> None:
    assert not result.passed, (
        f"the attack passed: violations={result.violations} bare={result.bare_calls} "
        f"brush={result.brush_calls} paint={result.paint_fraction}"
    )


# --------------------------------------------------------------------------------------
# How a sketch makes tree-sitter believe it declares NAME at its top level while V8 does
# not. Each maps a name to the line(s) that "declare" it.
LEAKS = {
    # WAS A HOLE: class static blocks are var-scope boundaries
    "static_block_var": lambda n: f"class Hoist {{ static {{ var {n}; }} }}",
    "static_block_for_of_var": lambda n: f"class Hoist {{ static {{ for (var {n} of []); }} }}",
    "static_block_for_in_var": lambda n: f"class Hoist {{ static {{ for (var {n} in {{}}); }} }}",
    "static_block_nested_var": lambda n: (
        f"class Hoist {{ static {{ if (true) {{ try {{ var {n} = 0; }} catch {{}} }} }} }}"),
    "static_block_switch_var": lambda n: f"class Hoist {{ static {{ switch (0) {{ case 1: var {n}; }} }} }}",
    "class_expression_static_block_var": lambda n: f"const Hoist = class {{ static {{ var {n}; }} }};",
    # WAS A HOLE: regex/division disagreement after an arrow function with a block body
    "arrow_then_regex": lambda n: f"let gflag = 1;\nlet noop = () => {{}}\n/ 1; var {n}; /.test(1) /gflag",
    "async_arrow_then_regex": lambda n: (
        f"let gflag = 1;\nlet noop = async () => {{}}\n/ 1; var {n}; /.test(1) /gflag"),
    "arrow_param_then_regex": lambda n: f"let gflag = 1;\nlet noop = a => {{}}\n/ 1; var {n}; /.test(1) /gflag",
    "arrow_statement_then_regex": lambda n: f"let gflag = 1;\n() => {{}}\n/ 1; var {n}; /.test(1) /gflag",
    "arrow_then_regex_function_declaration": lambda n: (
        f"let gflag = 1;\nlet noop = (a) => {{ return a; }}\n/ 0; function {n}() {{}} /.test(1) /gflag"),
}

GL_SQUARE = """gl.enable(gl.SCISSOR_TEST); gl.scissor(10, 10, 60, 60);
  gl.clearColor(0.8, 0.1, 0.1, 1); gl.clear(gl.COLOR_BUFFER_BIT); gl.disable(gl.SCISSOR_TEST);"""


def _through_window(name: str) -> str:
    return f"const p = {name}.p5.instance;\n  p.fill(200, 20, 20); p.rect(-200, -200, 300, 300);"


# What each leaked name is used for: non-brush pixels on the p5 canvas (so the painting
# is not blank, and passes if nothing is counted).
PAYLOADS = {
    "self": ("", _through_window("self")),
    "top": ("", _through_window("top")),
    "parent": ("", _through_window("parent")),
    "frames": ("", _through_window("frames")),
    "WebGL2RenderingContext": ("", f"""const proto = WebGL2RenderingContext.prototype, clear = proto.clear;
  proto.clear = function (m) {{ clear.call(this, m); const gl = this; proto.clear = clear; {GL_SQUARE} }};
  background(20);"""),
    "HTMLCanvasElement": ("""let captured = null;
  const proto = HTMLCanvasElement.prototype, getContext = proto.getContext;
  proto.getContext = function (...a) {
    const c = getContext.apply(this, a); if (a[0] === "webgl2") captured = c; return c;
  };""", f"const gl = captured;\n  {GL_SQUARE}"),
    # FAILED (instructive): always imported, whatever the sketch declares
    "window": ("", _through_window("window")),
    "globalThis": ("", _through_window("globalThis")),
    "document": ("", f"const gl = document.querySelector('canvas').getContext('webgl2');\n  {GL_SQUARE}"),
    "p5": ("", "p5.instance.fill(200, 20, 20); p5.instance.rect(-200, -200, 300, 300);"),
    # FAILED (instructive): p5's globals on window are counting accessors after presetup
    "drawingContext": ("", f"const gl = drawingContext;\n  {GL_SQUARE}"),
    "filter": ("", "brush.noStroke(); brush.fill('#223344', 255); brush.circle(300, 300, 20, 0); filter('invert');"),
    "rect": ("", "rect(-200, -200, 300, 300);"),
    "text": ("", "text('HELLO', 0, 0);"),
    "createGraphics": ("", "const g = createGraphics(100, 100); g.background(255, 0, 0);"),
    "image": ("", "image(undefined, 0, 0);"),
}
WINDOWS = ("self", "top", "parent", "frames", "WebGL2RenderingContext", "HTMLCanvasElement")
GUARDED = ("window", "globalThis", "document", "p5", "drawingContext", "filter", "rect", "text",
           "createGraphics", "image")


def leak_sketch(leak: str, name: str) -> str:
    pre, body = PAYLOADS[name]
    return f"""{LEAKS[leak](name)}
function setup() {{
  {pre}
  createCanvas(600, 600, WEBGL);
  background(20);
  {body}
}}
"""


@functools.cache
def window_renders() -> dict[tuple[str, str], Render]:
    """Every (leak, target) pair of the window test, rendered once, side by side."""
    pairs = [(leak, name) for leak in ("static_block_var", "arrow_then_regex") for name in WINDOWS]
    renders = render_many([leak_sketch(*p) for p in pairs], timeout_s=10, size=SIZE)
    return dict(zip(pairs, renders))


@pytest.mark.parametrize("leak", sorted(LEAKS))
def test_a_name_the_sketch_only_seems_to_declare_still_gets_its_stub_imported(leak):
    """WAS A HOLE (no browser needed): compose_module skipped the stub for `self`."""
    module = compose_module(leak_sketch(leak, "self"), ["self", "top", "rect"])
    first_line = module.split("\n", 1)[0]
    assert " self," in first_line or " self }" in first_line, first_line


@pytest.mark.parametrize("leak", sorted(LEAKS))
def test_a_sketch_cannot_reach_the_real_window_through_a_parser_disagreement(renderer, leak):
    """WAS A HOLE for every leak: `self` was the real window, p5.instance.rect painted."""
    assert_refused(render(renderer, leak_sketch(leak, "self")))


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("leak", ["static_block_var", "arrow_then_regex"])
def test_a_sketch_cannot_reach_any_unprotected_global_through_a_parser_disagreement(renderer, leak, name):
    """WAS A HOLE: window aliases and DOM interfaces (prototype hooks on the GL context),
    through either disagreement. One batch, rendered side by side."""
    assert_refused(window_renders()[(leak, name)])


@pytest.mark.parametrize("leak", ["static_block_var"])
@pytest.mark.parametrize("name", GUARDED)
def test_always_shadowed_and_p5_globals_stay_counted_even_when_leaked(renderer, leak, name):
    """FAILED (instructive): these names were always imported, and p5's globals are
    counting accessors on window, so leaking the NAME alone gained nothing."""
    result = render(renderer, leak_sketch(leak, name))
    assert_refused(result)
    assert result.bare_calls, "the forbidden use was not counted"


# --------------------------------------------------------------------------------------
# What a leaked window buys beyond drawing: tampering with the verdict and the canvas.
LEAK_SELF = "class Hoist { static { var self; } }\n"


def test_a_sketch_cannot_rewrite_the_result_after_the_harness_writes_it(renderer):
    """WAS A HOLE: a MutationObserver rewrote the data-paint-result attribute (denied and
    errors emptied) before the reader read it, hiding counted rect() and text() calls.
    The result now never leaves the harness's closure but through window.__paint."""
    code = LEAK_SELF + """
const html = self.document.documentElement;
new self.MutationObserver(() => {
  const r = self.JSON.parse(html.getAttribute("data-paint-result"));
  if (Object.keys(r.denied).length === 0 && r.errors.length === 0) return;
  r.denied = {}; r.errors = []; r.status = "ok";
  html.setAttribute("data-paint-result", self.JSON.stringify(r));
}).observe(html, { attributes: true, attributeFilter: ["data-paint-result"] });
function setup() {
  createCanvas(600, 600, WEBGL);
  background(20);
  rect(-200, -200, 300, 300);
  text("HELLO", 0, 0);
  brush.noStroke(); brush.fill("#ee4422", 255); brush.circle(300, 300, 120, 0);
}
"""
    result = render(renderer, code)
    assert_refused(result)


def test_a_sketch_cannot_move_the_nonce_to_a_canvas_of_its_own(renderer):
    """WAS A HOLE: the nonce was set in the page's world, so the sketch saw it, moved it to
    a same-sized 2D canvas with text on it, and the reader copied that canvas. The reader
    now copies the element the harness holds."""
    code = LEAK_SELF + """
const doc = self.document;
const mine = doc.createElement("canvas");
new self.MutationObserver((records) => {
  for (const m of records) {
    const c = m.target, nonce = c.getAttribute("data-paint-canvas");
    if (c === mine || !nonce) continue;
    mine.width = c.width; mine.height = c.height;
    const g = mine.getContext("2d");
    g.fillStyle = "#fbf7ef"; g.fillRect(0, 0, mine.width, mine.height);
    g.fillStyle = "#c02020"; g.font = "40px sans-serif"; g.fillText("HI", 20, 70);
    doc.body.appendChild(mine);
    mine.setAttribute("data-paint-canvas", nonce);
    c.removeAttribute("data-paint-canvas");
  }
}).observe(doc.body, { attributes: true, subtree: true, attributeFilter: ["data-paint-canvas"] });
function setup() {
  createCanvas(600, 600, WEBGL);
  background(20);
}
"""
    assert_refused(render(renderer, code))


def test_a_sketch_cannot_make_the_webgl_probe_fail_and_raise_render_unavailable(renderer):
    """WAS A HOLE: a throwing HTMLCanvasElement width setter made __paint.probe() report
    no WebGL after a failed render with no canvas; the renderer relaunched Chromium,
    retried, saw it again and raised RenderUnavailable. The probe now runs in the
    isolated world."""
    code = LEAK_SELF + """
const proto = self.HTMLCanvasElement.prototype;
const d = Object.getOwnPropertyDescriptor(proto, "width");
Object.defineProperty(proto, "width", {
  get: d.get, set(v) { if (v === 1) throw new Error("no"); d.set.call(this, v); }, configurable: true,
});
function setup() { throw new Error("boom"); }
"""
    result = render(renderer, code)  # must be a verdict, never RenderUnavailable
    assert_refused(result)


# --------------------------------------------------------------------------------------
# FAILED (instructive): parser tricks where tree-sitter agrees with V8's module grammar,
# and attacks that need no leak.
@pytest.mark.parametrize("code", [
    # `<!--` is not a comment in a module; tree-sitter reads `a < !--b` too
    "let a = 0, b = 0;\na\n<!--b; function g() {\nfunction self() {}\na\n<!--b; }\n",
    # U+2028 ends a `//` comment for tree-sitter as for V8
    "// x\u2028{\nfunction self() {}\n// x\u2028}\n",
    # `-->` after a multi-line comment: tree-sitter says comment, V8 (module) says error
    "let x = 5;\n/*\n*/ --> {\nfunction self() {}\n",
    # a `/` inside a character class does not end the regex, for either parser
    "let g = 1;\nlet r = /[/]; var self; [/]/g;\n",
], ids=["html_open_comment", "u2028_line_comment", "html_close_comment", "regex_class_slash"])
def test_parser_tricks_tree_sitter_reads_like_v8_do_not_leak_the_window(renderer, code):
    sketch = code + "\nfunction setup() {\n  createCanvas(600, 600, WEBGL);\n  background(20);\n  " + \
        _through_window("self") + "\n}\n"
    assert_refused(render(renderer, sketch))


@pytest.mark.parametrize("code", [
    "function setup() { createCanvas(600, 600, WEBGL); background('url(/p5.min.js)'); }",
    "function setup() { createCanvas(NaN, NaN, WEBGL); background(20); brush.noStroke();"
    " brush.fill('#ff0000', 255); brush.circle(0, 0, 100, 0); }",
    "function setup() { createCanvas(-600, -600, WEBGL); background(20); brush.noStroke();"
    " brush.fill('#ff0000', 255); brush.circle(0, 0, 100, 0); }",
    "__paintExport(function () { createCanvas(600, 600, WEBGL); background(20); });\nfunction setup() {}",
    "function setup() { createCanvas(600, 600, WEBGL); background(20); randomSeed({ valueOf() { return 1; } });"
    " brush.noStroke(); brush.fill('#ff0000', 255); brush.circle(300, 300, 100, 0); }",
], ids=["background_css_url", "canvas_nan", "canvas_negative", "early_export_call", "object_argument"])
def test_odd_arguments_to_allowed_functions_do_not_pass(renderer, code):
    assert_refused(render(renderer, code))


def test_a_lone_surrogate_in_the_source_is_served_and_judged_not_waited_out(renderer):
    """WAS COSTLY: a lone surrogate made the route handler's .encode('utf-8') raise, so
    /sketch.js was never answered and the render took the full timeout and a browser
    kill. It is now encoded with a replacement character and judged at once."""
    code = "const s = '\ud800';\nfunction setup() { createCanvas(600, 600, WEBGL); background(20); }\n"
    result = render(renderer, code)
    assert_refused(result)
    assert result.violations == ["blank_canvas"], result.violations


# --------------------------------------------------------------------------------------
# Round 2 (renderer alone, static gate assumed fooled).

BRUSH_DOT = "brush.noStroke(); brush.fill('#ee4422', 255); brush.circle(300, 300, 120, 0);"


# WAS A HOLE (fixed: the harness keeps element ids off the DOM, and locks every name
# that appears on window after it loads): the shadow list is computed once, on a page
# where p5 has made no canvas, from
# the OWN property names of window and its prototypes. Named properties (elements with an
# id, resolved by the WindowProperties object) are not own property names and do not exist
# yet; p5 then gives its canvas id="defaultCanvas0" (p5 2.x: both the 2D and the WebGL
# renderer), so the free name `defaultCanvas0` is neither imported nor a p5 global, and
# resolves through the global object to the live canvas element.
NAMED_ELEMENT = {
    # raw WebGL on p5's own context: a red square, no brush call, nothing counted
    "raw_webgl": f"const gl = defaultCanvas0.getContext('webgl2');\n  {GL_SQUARE}",
    # the element's document's window: the real p5 instance draws an uncounted rect()
    "window_via_owner_document": (
        "const win = defaultCanvas0.ownerDocument.defaultView, p = win.p5.instance;\n"
        "  p.push(); p.noStroke(); p.fill(200, 20, 20); p.rect(-200, -200, 300, 300); p.pop();"),
    # the same through the DOM tree: an uncounted ellipse() (p5 WEBGL text() without a
    # loaded font draws nothing, so text is not the demo here)
    "window_via_parent_node": (
        "const win = defaultCanvas0.parentNode.ownerDocument.defaultView, p = win.p5.instance;\n"
        "  p.noStroke(); p.fill(200, 20, 20); p.ellipse(0, 0, 300, 300);"),
}


@pytest.mark.parametrize("payload", sorted(NAMED_ELEMENT))
def test_the_canvas_element_id_is_not_a_way_out(renderer, payload):
    """WAS A HOLE: `defaultCanvas0` (the id p5 gives its canvas) was a named property of
    window that no stub shadowed, so the sketch held the real canvas element: raw WebGL,
    or `.ownerDocument.defaultView` for the real window and p5 instance. Every variant got
    passed == True with no count at all (brush={}, bare={}), paint 0.20-0.26. Now the
    id never reaches the DOM, so the name resolves to nothing."""
    code = f"""function setup() {{
  createCanvas(600, 600, WEBGL);
  background(20);
  {NAMED_ELEMENT[payload]}
}}
"""
    assert_refused(render(renderer, code))


def test_the_canvas_element_id_also_works_from_draw(renderer):
    """WAS A HOLE: the same named property read in draw() (the id existed from p5's
    default canvas onward, so any code path after p5 started could use it)."""
    code = f"""function setup() {{ createCanvas(600, 600, WEBGL); }}
function draw() {{
  background(20);
  const gl = defaultCanvas0.getContext('webgl2');
  {GL_SQUARE}
}}
"""
    assert_refused(render(renderer, code))


def test_through_the_named_canvas_memory_is_not_bounded_by_the_heap_cap(renderer):
    """WAS A HOLE (a consequence of the named-canvas escape, and a DoS note): the 1 GiB V8
    heap cap (--max-old-space-size) does not bound ArrayBuffer backing stores. Through the
    real window a sketch touches 1.5 GiB of typed arrays (here; more is a matter of time
    until the watchdog) and still passes. Without the escape no typed array constructor is
    reachable (all shadowed), and ordinary arrays crash the page at 1 GiB (see below)."""
    code = f"""function setup() {{
  createCanvas(600, 600, WEBGL);
  background(20);
  const win = defaultCanvas0.ownerDocument.defaultView, keep = [];
  for (let i = 0; i < 3; i++) keep.push(new win.Uint8Array(512 * 1024 * 1024).fill(1));
  {BRUSH_DOT}
}}
"""
    assert_refused(render(renderer, code))


# FAILED (instructive): what else a sketch can reach without the named canvas.
ROUND2_FAILED = {
    # eval is in _UNBINDABLE, so it is never shadowed, but CSP has no 'unsafe-eval'
    "unshadowed_eval": f"const gl = eval('window').document.querySelector('canvas').getContext('webgl2');\n  {GL_SQUARE}",
    # the Function constructor from any function literal: the same CSP refusal
    "function_constructor": (
        "const w = (() => 0).constructor('return this')();\n"
        f"  const gl = w.document.querySelector('canvas').getContext('webgl2');\n  {GL_SQUARE}"),
    # a strict module: no sloppy `this`, `arguments` is the wrapper's (empty) object, and
    # stacks stay strings (prepareStackTrace is pinned)
    "sloppy_this_and_stacks": (
        "const g = (function () { return this; })(); const o = {}; Error.captureStackTrace(o);\n"
        "  if (g === undefined && typeof o.stack === 'string' && arguments.length === 0)"
        " throw new Error('nothing leaked');"),
    # arrays to random/min/max with getter elements and valueOf objects: p5 only indexes
    # them and calls valueOf; the sketch learns stack strings, never a p5 object
    "array_getters_to_min_max_random": (
        "const seen = [], arr = [1, 2];\n"
        "  Object.defineProperty(arr, 0, { get() { return { valueOf() { seen.push(this); return 3; } }; } });\n"
        "  min(arr); max(arr); random(arr);\n"
        "  if (seen.every((o) => typeof o.valueOf === 'function')) throw new Error('only own objects');"),
    # errors thrown by allowed functions carry no object of p5's
    "caught_errors_of_allowed_functions": (
        "const found = [];\n"
        "  for (const t of [() => background('url(x)'), () => noiseDetail(-1, 'a'), () => angleMode('zz'),\n"
        "      () => translate('a', 'b'), () => rotate(undefined), () => scale(0, 0, 0)]) {\n"
        "    try { t(); } catch (e) { for (const k of Object.getOwnPropertyNames(e)) if (e[k] && typeof e[k] === 'object') found.push(k); }\n"
        "  }\n"
        "  if (!found.length) throw new Error('no object leaked');"),
    # hitCriticalError is the one p5 instance name missing from the shadow list: p5 binds it
    # to window and lockGlobals turns it into a counting accessor
    "unshadowed_hit_critical_error": f"const x = hitCriticalError;\n  {BRUSH_DOT}",
}


@pytest.mark.parametrize("attack", sorted(ROUND2_FAILED))
def test_round2_reaches_that_failed(renderer, attack):
    """FAILED (instructive): CSP stops eval/Function (eval is the one unshadowed global
    besides setup/draw), module strictness stops sloppy-this, wrapper plain-value checks
    leave only the sketch's own objects in its hands, hitCriticalError is counted."""
    code = f"""function setup() {{
  createCanvas(600, 600, WEBGL);
  background(20);
  {ROUND2_FAILED[attack]}
}}
"""
    result = render(renderer, code)
    assert_refused(result)


def test_dynamic_import_of_the_harness_or_libraries_gets_nothing(renderer):
    """FAILED (instructive): import() is syntax, not a global, so no stub stops it; but
    every harness file is served only before the sketch (404 after), /sketch.js and
    /shadows.js only once (`?query` variants 404 too), and re-importing /shadows.js by its
    own URL returns the module already linked: the same stubs, an export door that
    accepts one call."""
    code = """async function setup() {
  createCanvas(600, 600, WEBGL);
  background(20);
  const got = [];
  for (const u of ["/p5.min.js", "/p5.brush.js", "/harness.js", "/harness-pre.js", "/", "/sketch.js?again", "/shadows.js?again"]) {
    try { got.push(await import(u)); } catch (e) {}
  }
  const s = await import("/shadows.js");
  s.__paintExport(() => 0, () => 0);
  if (got.length === 0) throw new Error("nothing imported");
}
"""
    assert_refused(render(renderer, code))


def test_closing_the_wrapper_for_top_level_imports_and_exports_gains_nothing(renderer):
    """FAILED (instructive): at module top level the only declarations that do not clash
    with an import are import/export forms and allowlisted names; they name the same stubs
    (or nothing the page reads), and a static import of a library 404s the whole module."""
    code = """})();
import * as S from "/shadows.js";
export default function () {}
export { S as whole };
const meta = import.meta;
(function () {
function setup() { createCanvas(600, 600, WEBGL); background(20); S.rect(-200, -200, 300, 300); }
"""
    assert_refused(render(renderer, code))


def test_late_frames_after_the_harness_stopped_the_loop_are_still_counted(renderer):
    """FAILED (instructive): loop() after a long microtask chain restarts p5 after the
    harness's noLoop(). Depending on timing the late frame ran before the result was
    taken (its rect() counted) or after it (its brush dot painted behind counts already
    taken); now every allowed function and brush call is a no-op once the render is
    done, so the late frame paints nothing either way."""
    code = f"""let n = 0;
function setup() {{ createCanvas(600, 600, WEBGL); background(20); }}
function draw() {{
  n++;
  if (n === 1) {{ (async () => {{ for (let i = 0; i < 200; i++) await 0; loop(); }})(); return; }}
  rect(-200, -200, 300, 300);
  {BRUSH_DOT}
}}
"""
    assert_refused(render(renderer, code))


@pytest.mark.parametrize("code,expected", [
    # catastrophic backtracking: killed by the watchdog at timeout_s
    ("/(a+)+$/.test('a'.repeat(40) + '!');", "render_timeout"),
    # p5's noise() loops over the octaves noiseDetail set, unbounded
    (f"noiseDetail(1e12, 0.5); noise(0.5, 0.5); {BRUSH_DOT}", "render_timeout"),
    # V8 heap at the 1 GiB cap: the page crashes alone, or (on a slower machine) the
    # watchdog kills it first; either is a verdict
    ("const keep = []; for (;;) keep.push(new Array(1e6).fill(keep.length));", "render_error|render_timeout"),
    ("const f = (n) => f(n + 1) + 1; f(0);", "render_error"),
], ids=["regex_backtracking", "noise_detail_octaves", "heap_blowup", "deep_recursion"])
def test_denial_of_service_is_a_verdict_within_the_deadline(short_renderer, code, expected):
    """FAILED (instructive): each is a verdict, never an exception, within timeout_s plus
    the kill (measured: 12 s, 11 s, 6 s, 2 s at timeout_s=10), and the next render works."""
    renderer = short_renderer
    sketch = f"function setup() {{\n  createCanvas(600, 600, WEBGL);\n  background(20);\n  {code}\n}}\n"
    t0 = time.monotonic()
    result = render(renderer, sketch)
    assert time.monotonic() - t0 < SHORT_TIMEOUT_S + 15
    assert_refused(result)
    assert set(expected.split("|")) & set(result.violations), result.violations
    follow = render(renderer, f"function setup() {{ createCanvas(600, 600, WEBGL); background(20); {BRUSH_DOT} }}")
    assert follow.passed, follow.violations
