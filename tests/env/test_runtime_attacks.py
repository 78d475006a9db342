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

Run: .venv/bin/python -m pytest tests/env/test_runtime_attacks.py -q -p no:django -m slow
"""
from __future__ import annotations

import pytest

from paintapp.env.renderer import Render, Renderer, RendererConfig
from paintapp.env.sandbox import compose_module

pytestmark = pytest.mark.slow

SIZE = 128


@pytest.fixture(scope="module")
def renderer():
    with Renderer(RendererConfig(timeout_s=10)) as r:
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
def test_a_sketch_cannot_reach_any_unprotected_global_through_a_class_static_block(renderer, name):
    """WAS A HOLE: window aliases and DOM interfaces (prototype hooks on the GL context)."""
    assert_refused(render(renderer, leak_sketch("static_block_var", name)))


@pytest.mark.parametrize("name", WINDOWS)
def test_a_sketch_cannot_reach_any_unprotected_global_through_an_arrow_regex(renderer, name):
    """WAS A HOLE: same targets, the tree-sitter/V8 regex-vs-division disagreement."""
    assert_refused(render(renderer, leak_sketch("arrow_then_regex", name)))


@pytest.mark.parametrize("leak", ["static_block_var", "arrow_then_regex"])
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
