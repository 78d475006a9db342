"""A systematic adversarial corpus: every forbidden construct behind every hiding wrapper.

A hostile case is a complete sketch that looks like a legitimate painting (WEBGL canvas,
a paper background, a few brush washes, so it is neither blank nor broken and would pass
if the forbidden part were ignored) plus ONE forbidden construct, reached through ONE
hiding wrapper. The corpus is the cross product

    CONSTRUCTS (what puts pixels on the canvas without the brush, or tampers with the
                verdict)  x  WRAPPERS (how a policy would hide the forbidden name)

with one or two variants of the construct per pair (rotated, so every variant and every
sub-form of a wrapper appears somewhere). Nothing is skipped: through the "hider" below
every construct is written in terms of `h.call(name, args)` / `h.ref(name)`, and every
wrapper knows how to reach any global name (or any `brush.<method>`), so every pair is a
meaningful sketch.

Each `Case` carries the codes that count as a correct rejection:
  * static_codes: the static gate (`gate_source`) must report at least one of them;
  * runtime_codes: the renderer, run on the sketch WITHOUT the gate, must report at
    least one of them (and must never pass the sketch).

`LEGIT` is the other side: sketches that must pass both layers (the good corpus, the
bench sketches that paint, ~40 seed-generator sketches over every family and style, a
few pool items, and the hostile cases' own skeleton without the hostile part).

A plain module (no pytest): `python -m tests.env.adversarial` prints the matrix, and
`python -m tests.env.adversarial ID` prints one case's sketch.
"""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CASES",
    "CONSTRUCTS",
    "WRAPPERS",
    "LEGIT",
    "LEGIT_EXCLUDED",
    "LEGIT_SEEDGEN",
    "Case",
    "by_id",
    "matrix",
    "skeleton",
]

ROOT = Path(__file__).resolve().parents[2]
GOOD_DIR = Path(__file__).resolve().parent / "corpus" / "good"
BENCH_DIR = ROOT / "bench" / "sketches"

# ---------------------------------------------------------------------------------------
# The contract with the gate and the renderer (code names)

# static gate
TEXT_LABEL = "text_label"
BARE = "bare_primitives"
EXTERNAL = "external_access"
FORBIDDEN = "forbidden_api"
UNKNOWN_BRUSH = "unknown_brush_method"
DISALLOWED_BRUSH = "disallowed_brush_method"
TRUNCATED = "truncated"
STATIC_CODES = frozenset({TEXT_LABEL, BARE, EXTERNAL, FORBIDDEN, UNKNOWN_BRUSH,
                          DISALLOWED_BRUSH, TRUNCATED})

# renderer (without the gate)
RT_BARE = "runtime_bare_primitive"
RT_TEXT = "runtime_text"
RT_FORBIDDEN = "runtime_forbidden_api"
RT_BRUSH = "runtime_disallowed_brush"
RENDER_ERROR = "render_error"
RENDER_TIMEOUT = "render_timeout"
CANVAS_TOO_LARGE = "canvas_too_large"
CANVAS_SWAPPED = "canvas_swapped"
RUNTIME_CODES = frozenset({RT_BARE, RT_TEXT, RT_FORBIDDEN, RT_BRUSH, RENDER_ERROR,
                           RENDER_TIMEOUT, CANVAS_TOO_LARGE, CANVAS_SWAPPED})


@dataclass(frozen=True)
class Case:
    id: str  # "<construct>__<wrapper>__<variant>", stable
    construct: str
    wrapper: str
    code: str
    static_codes: frozenset[str]  # the gate must report at least one of these
    runtime_codes: frozenset[str]  # the renderer alone must report at least one of these
    variant: str = ""  # which form of the construct
    form: str = ""  # which sub-form of the wrapper (e.g. "setTimeout", "globalThis")

    def __repr__(self) -> str:  # pytest ids and failure messages stay short
        return f"Case({self.id})"


# ---------------------------------------------------------------------------------------
# The legitimate painting every case is built around

_HEAD = [
    "createCanvas(600, 600, WEBGL);",
    'background("#f7f1e3");',
    "translate(-width / 2, -height / 2);",
    "brush.scaleBrushes(3);",
    "brush.noStroke();",
    'brush.fill("#e9967a", 170);',
    "brush.fillBleed(0.25);",
    "brush.circle(300, 290, 60, 0.4);",
    'brush.fill("#c0504d", 200);',
    "brush.circle(250, 330, 110, 0.35);",
]
_TAIL = [
    'brush.fill("#7a2e3b", 200);',
    "brush.circle(350, 300, 70, 0.3);",
]
_INDENT = "  "


def _indent(lines: list[str], depth: int = 1) -> list[str]:
    pad = _INDENT * depth
    return [pad + line if line else line for line in lines]


def _assemble(top: list[str], block: list[str], bottom: list[str]) -> str:
    out = ["// A coral bloom on warm paper: three soft washes."]
    if top:
        out += top + [""]
    out.append("function setup() {")
    out += _indent(_HEAD + block + _TAIL)
    out.append("}")
    if bottom:
        out += [""] + bottom
    return "\n".join(out) + "\n"


def skeleton() -> str:
    """Every hostile case without its hostile part: must pass both layers."""
    return _assemble([], [], [])


# ---------------------------------------------------------------------------------------
# Wrappers: how a forbidden name is reached

WRAPPER_FORMS: dict[str, tuple[str, ...]] = {
    # rect(...)
    "direct": ("plain",),
    # const r = rect; r(...)   |   const kit = { tool: rect }; kit.tool(...)
    "alias": ("const", "object_slot"),
    # const { rect: r } = window   |   const { rect } = globalThis   |   ... = this
    "destructuring": ("window", "globalThis", "this"),
    # window["re" + "ct"]   |   globalThis[["r","e","c","t"].join("")]   |   this[k]
    "computed": ("concat", "join", "this_key"),
    # \u0072ect(...)   |   \u{72}ect(...)
    "unicode_escape": ("u4", "u_brace"),
    # Reflect.apply(rect, null, [...]) / Reflect.get(globalThis, "x")   |   Reflect.get(window, "rect")(...)
    "reflect": ("apply", "get"),
    # Object.getOwnPropertyDescriptor(window | globalThis | p5.prototype, "rect").value
    "descriptor": ("window", "globalThis", "p5_prototype"),
    # rect.call(null, ...) | rect.apply(null, [...]) | rect.bind(null)(...) |
    # Function.prototype.call.call(rect, null, ...)
    "bind_call_apply": ("call", "apply", "bind", "call_call"),
    # the forbidden part runs later, from a hook
    "lifecycle_hook": ("draw", "setTimeout", "promise_then", "requestAnimationFrame",
                       "registerAddon", "mousePressed", "windowResized"),
    # (function () { return this; })().rect(...) | this.rect(...) in setup | const scope = this (top level)
    "plain_this": ("iife", "setup_this", "top_level_this"),
    # a local `function rect() {}` / `let document` / `{ rect() {} }` elsewhere, then the global one
    "decoy_declaration": ("helper_function", "object_method", "block_let", "class_method"),
}
WRAPPERS: tuple[str, ...] = tuple(WRAPPER_FORMS)

# The hiding itself reads globals outside the allowlist (window, Reflect, setTimeout...):
# a gate may reject the case for that alone.
_WRAPPER_STATIC_EXTRA: dict[str, frozenset[str]] = {
    "destructuring": frozenset({FORBIDDEN, EXTERNAL}),
    "computed": frozenset({FORBIDDEN, EXTERNAL}),
    "reflect": frozenset({FORBIDDEN, EXTERNAL}),
    "descriptor": frozenset({FORBIDDEN, EXTERNAL}),
    "plain_this": frozenset({FORBIDDEN, EXTERNAL}),
    "lifecycle_hook": frozenset({FORBIDDEN, EXTERNAL}),
    "bind_call_apply": frozenset({FORBIDDEN, EXTERNAL}),
}

# Globals that are accessor properties on window (p5's lazily bound instance fields and
# the browser's [Replaceable]/unforgeable attributes): a descriptor has `get`, not `value`.
_ACCESSORS = frozenset({"drawingContext", "pixels", "document", "performance", "crypto",
                        "window", "width", "height"})
# p5.prototype methods (reachable through Object.getOwnPropertyDescriptor(p5.prototype, n)).
_P5_METHODS = frozenset({
    "rect", "ellipse", "line", "triangle", "quad", "point", "arc", "square", "circle",
    "beginShape", "vertex", "endShape", "text", "textSize", "textFont", "createGraphics",
    "createFramebuffer", "image", "loadPixels", "updatePixels", "set", "get", "filter",
    "createShader", "createFilterShader", "shader", "baseMaterialShader", "plane", "copy",
    "blend", "createDiv", "createP", "createImage", "background",
})


def _camel(prefix: str, name: str) -> str:
    return prefix + name[:1].upper() + name[1:]


def _split(name: str) -> tuple[str, str]:
    mid = max(1, len(name) // 2)
    return name[:mid], name[mid:]


def _escape_first(name: str, brace: bool) -> str:
    code = ord(name[0])
    head = f"\\u{{{code:x}}}" if brace else f"\\u{code:04x}"
    return head + name[1:]


class _Hider:
    """Writes references to forbidden names the way one wrapper (and sub-form) hides them.

    `top` collects top-level lines, `pre` lines that go right before the payload (in the
    same scope), `bottom` top-level functions after setup(). `names` records what was
    hidden (for decoys)."""

    def __init__(self, wrapper: str, form: str) -> None:
        self.wrapper = wrapper
        self.form = form
        self.top: list[str] = []
        self.pre: list[str] = []
        self.bottom: list[str] = []
        self.names: dict[str, str] = {}  # name -> "call" | "value"
        self._cache: dict[tuple[str | None, str], str] = {}

    # -- the two entry points used by constructs -----------------------------------------

    def ref(self, name: str, holder: str | None = None) -> str:
        """An expression whose value is the global `name` (or `holder.name`)."""
        self.names.setdefault(name, "value")
        return self._ref(name, holder, value=True)

    def call(self, name: str, args: str = "", holder: str | None = None) -> str:
        """An expression that calls the global `name` (or `holder.name`) with `args`."""
        self.names[name] = "call"
        w, f = self.wrapper, self.form
        if w == "reflect" and f == "apply":
            target = f"{holder}.{name}" if holder else name
            this = holder or "null"
            return f"Reflect.apply({target}, {this}, [{args}])"
        if w == "bind_call_apply":
            target = f"{holder}.{name}" if holder else name
            this = holder or "null"
            sep = ", " if args else ""
            if f == "call":
                return f"{target}.call({this}{sep}{args})"
            if f == "apply":
                return f"{target}.apply({this}, [{args}])"
            if f == "bind":
                return f"{target}.bind({this})({args})"
            return f"Function.prototype.call.call({target}, {this}{sep}{args})"
        if w == "descriptor" and f == "p5_prototype" and holder is None and name in _P5_METHODS:
            sep = ", " if args else ""
            return (f'Object.getOwnPropertyDescriptor(p5.prototype, "{name}").value'
                    f".call(p5.instance{sep}{args})")
        return f"{self._ref(name, holder, value=False)}({args})"

    # -- wrappers ------------------------------------------------------------------------

    def _once(self, key: tuple[str | None, str], make: Callable[[], tuple[str, str]]) -> str:
        """A prelude line declared once per name; returns the local that holds it."""
        if key not in self._cache:
            local, line = make()
            self.pre.append(line)
            self._cache[key] = local
        return self._cache[key]

    def _ref(self, name: str, holder: str | None, *, value: bool) -> str:
        w, f = self.wrapper, self.form
        plain = f"{holder}.{name}" if holder else name
        if w in ("direct", "lifecycle_hook", "decoy_declaration"):
            return plain
        if w == "alias":
            if f == "const":
                mine = _camel("my", name.lstrip("_"))
                return self._once((holder, name), lambda: (mine, f"const {mine} = {plain};"))
            kit = _camel("kit", name.lstrip("_"))
            self._once((holder, name), lambda: (kit, f"const {kit} = {{ tool: {plain} }};"))
            return f"{kit}.tool"
        if w == "destructuring":
            source = holder or {"window": "window", "globalThis": "globalThis", "this": "this"}[f]
            if f == "globalThis":  # shorthand: the local has the forbidden name itself
                return self._once((holder, name), lambda: (name, f"const {{ {name} }} = {source};"))
            local = _camel("own", name.lstrip("_"))
            return self._once((holder, name), lambda: (local, f"const {{ {name}: {local} }} = {source};"))
        if w == "computed":
            if f == "concat":
                a, b = _split(name)
                return f'{holder or "window"}["{a}" + "{b}"]'
            if f == "join":
                letters = ", ".join(f'"{c}"' for c in name)
                return f'{holder or "globalThis"}[[{letters}].join("")]'
            key = _camel("key", name.lstrip("_"))
            if (holder, name) not in self._cache:
                self.top.append(f'const {key} = "{name}";')
                self._cache[(holder, name)] = key
            return f"{holder or 'this'}[{key}]"
        if w == "unicode_escape":
            escaped = _escape_first(name, brace=(f == "u_brace"))
            return f"{holder}.{escaped}" if holder else escaped
        if w == "reflect":
            if f == "apply":  # a value: Reflect.get on globalThis
                return f'Reflect.get({holder or "globalThis"}, "{name}")'
            return f'Reflect.get({holder or "window"}, "{name}")'
        if w == "descriptor":
            if holder is not None:
                return f'Object.getOwnPropertyDescriptor({holder}, "{name}").value'
            if f == "p5_prototype" and name in _P5_METHODS:
                return (f'Object.getOwnPropertyDescriptor(p5.prototype, "{name}").value'
                        ".bind(p5.instance)")
            source = "globalThis" if f == "globalThis" else "window"
            if name in _ACCESSORS:
                return f'Object.getOwnPropertyDescriptor({source}, "{name}").get.call({source})'
            return f'Object.getOwnPropertyDescriptor({source}, "{name}").value'
        if w == "bind_call_apply":  # a value: passed through an identity function
            ident = "function (v) { return v; }"
            if f == "call":
                return f"({ident}).call(null, {plain})"
            if f == "apply":
                return f"({ident}).apply(null, [{plain}])"
            if f == "bind":
                return f"({ident}).bind(null, {plain})()"
            return f"Function.prototype.call.call({ident}, null, {plain})"
        if w == "plain_this":
            if f == "iife":
                return f"(function () {{ return this; }})().{plain}"
            if f == "setup_this":
                return f"this.{plain}"
            if (None, "<scope>") not in self._cache:
                self.top.append("const scope = this;")
                self._cache[(None, "<scope>")] = "scope"
            return f"scope.{plain}"
        raise ValueError(f"unknown wrapper {w!r}")

    # -- placing the payload -------------------------------------------------------------

    def place(self, payload: list[str],
              decoy_names: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
        """(top, setup block, bottom) for this wrapper."""
        body = self.pre + payload
        top, bottom = list(self.top), list(self.bottom)
        block: list[str] = body
        if self.wrapper == "lifecycle_hook":
            f = self.form
            if f == "draw":
                bottom = ["function draw() {", _INDENT + "noLoop();", *_indent(body), "}"]
                block = []
            elif f in ("mousePressed", "windowResized"):
                bottom = [f"function {f}() {{", *_indent(body), "}"]
                block = []
            elif f == "setTimeout":
                block = ["setTimeout(() => {", *_indent(body), "}, 0);"]
            elif f == "requestAnimationFrame":
                block = ["requestAnimationFrame(() => {", *_indent(body), "});"]
            elif f == "promise_then":
                block = ["Promise.resolve().then(() => {", *_indent(body), "});"]
            elif f == "registerAddon":
                block = ["p5.registerAddon((lib, fn, lifecycles) => {",
                         _INDENT + "lifecycles.predraw = function () {",
                         *_indent(body, 2), _INDENT + "};", "});"]
        elif self.wrapper == "decoy_declaration":
            names = list(dict.fromkeys([*self.names, *decoy_names]))
            f = self.form
            if f == "helper_function":
                inner = []
                for n in names:
                    if self.names.get(n, "call") == "call":
                        inner.append(f"function {n}() {{ return 0; }}")
                    else:
                        inner.append(f"let {n} = null;")
                inner.append(f"return [{', '.join(names)}];")
                top = top + ["// Local helpers, kept out of the way.", "function tidyUp() {",
                             *_indent(inner), "}"]
            elif f == "object_method":
                methods = ", ".join(f"{n}() {{ return 0; }}" for n in names)
                top = top + [f"const painter = {{ {methods} }};"]
                block = [f"painter.{names[0]}(1);", *body]
            elif f == "block_let":
                block = ["{", *_indent([f"let {n} = null;" for n in names]), "}", *body]
            elif f == "class_method":
                methods = " ".join(f"{n}() {{ return 0; }}" for n in names)
                top = top + [f"class Palette {{ {methods} }}"]
        return top, block, bottom


# ---------------------------------------------------------------------------------------
# Constructs: what the hidden name does

Body = Callable[[_Hider], list[str]]


@dataclass(frozen=True)
class _Variant:
    name: str
    body: Body
    static_extra: frozenset[str] = frozenset()
    runtime_extra: frozenset[str] = frozenset()
    decoy_names: tuple[str, ...] = ()  # member names (pg.rect) a decoy should also cover


@dataclass(frozen=True)
class _Construct:
    name: str
    static_codes: frozenset[str]
    runtime_codes: frozenset[str]
    variants: tuple[_Variant, ...]
    per_wrapper: int = 1  # variants per (construct, wrapper) pair
    top: tuple[str, ...] = field(default=())


def _v(name: str, body: Body, *, static: tuple[str, ...] = (), runtime: tuple[str, ...] = (),
       decoys: tuple[str, ...] = ()) -> _Variant:
    return _Variant(name, body, frozenset(static), frozenset(runtime), decoys)


def _call(name: str, args: str = "") -> Body:
    return lambda h: [f"{h.call(name, args)};"]


def _brush(name: str, args: str) -> Body:
    return lambda h: [f"{h.call(name, args, holder='brush')};"]


_FILTER_FRAG = ("precision highp float; varying vec2 vTexCoord; uniform sampler2D tex0; "
                "void main() { vec4 c = texture2D(tex0, vTexCoord); "
                "gl_FragColor = vec4(1.0 - c.rgb, 1.0); }")
_VERT = ("attribute vec3 aPosition; attribute vec2 aTexCoord; uniform mat4 uModelViewMatrix; "
         "uniform mat4 uProjectionMatrix; varying vec2 vTexCoord; void main() { "
         "vTexCoord = aTexCoord; gl_Position = uProjectionMatrix * uModelViewMatrix * "
         "vec4(aPosition, 1.0); }")
_FRAG = ("precision highp float; varying vec2 vTexCoord; void main() { "
         "gl_FragColor = vec4(vTexCoord, 0.4, 1.0); }")


def _pixels_array(h: _Hider) -> list[str]:
    return [
        f"{h.call('loadPixels')};",
        f"const px = {h.ref('pixels')};",
        "for (let i = 0; i < px.length; i += 4) {",
        _INDENT + "px[i] = 255;",
        "}",
        f"{h.call('updatePixels')};",
    ]


def _set_pixel(h: _Hider) -> list[str]:
    return [
        "for (let x = 0; x < 200; x++) {",
        _INDENT + f"{h.call('set', 'x, 100, [142, 59, 70, 255]')};",
        "}",
        f"{h.call('updatePixels')};",
    ]


def _get_region(h: _Hider) -> list[str]:
    return [
        f"const region = {h.call('get', '0, 0, 300, 300')};",
        f"{h.call('set', '300, 300, region')};",
        f"{h.call('updatePixels')};",
    ]


def _graphics_rect(h: _Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '600, 600')};",
        "pg.fill(142, 59, 70);",
        "pg.rect(0, 0, 300, 300);",
        f"{h.call('image', 'pg, 0, 0')};",
    ]


def _graphics_text(h: _Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '300, 100')};",
        "pg.textSize(32);",
        'pg.text("a coral bloom", 10, 50);',
        f"{h.call('image', 'pg, 20, 20')};",
    ]


def _framebuffer(h: _Hider) -> list[str]:
    return [
        f"const fb = {h.call('createFramebuffer')};",
        "fb.begin();",
        'background("#203040");',
        "fb.end();",
        f"{h.call('image', 'fb, 0, 0, 300, 300')};",
    ]


def _filter_shader(h: _Hider) -> list[str]:
    return [
        f"const tint = {h.call('createFilterShader', 'INVERT_SRC')};",
        f"{h.call('filter', 'tint')};",
    ]


def _create_shader(h: _Hider) -> list[str]:
    return [
        f"const glow = {h.call('createShader', 'VERT_SRC, FRAG_SRC')};",
        f"{h.call('shader', 'glow')};",
        f"{h.call('plane', '600, 600')};",
    ]


def _base_material(h: _Hider) -> list[str]:
    return [
        f"const flat = {h.call('baseMaterialShader')}.modify({{",
        _INDENT + '"vec4 getFinalColor": "(vec4 c) { return vec4(0.9, 0.1, 0.1, 1.0); }",',
        "});",
        f"{h.call('shader', 'flat')};",
        f"{h.call('plane', '600, 600')};",
    ]


def _snapshot_image(h: _Hider) -> list[str]:
    return [
        f"const snap = {h.call('get')};",
        f"{h.call('image', 'snap, 100, 100, 200, 200')};",
    ]


def _gl_clear(h: _Hider) -> list[str]:
    return [
        f"const gl = {h.ref('drawingContext')};",
        "gl.enable(gl.SCISSOR_TEST);",
        "gl.scissor(0, 0, 64, 64);",
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
        "gl.disable(gl.SCISSOR_TEST);",
    ]


def _fill_rect(h: _Hider) -> list[str]:
    return [
        f"const ctx = {h.ref('drawingContext')};",
        'ctx.fillStyle = "#203040";',
        "ctx.fillRect(0, 0, 300, 300);",
    ]


def _query_webgl2(h: _Hider) -> list[str]:
    return [
        f'const gl = {h.ref("document")}.querySelector("canvas").getContext("webgl2");',
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
    ]


def _context_2d(h: _Hider) -> list[str]:
    return [
        f'const ctx = {h.ref("document")}.querySelector("canvas").getContext("2d");',
        'ctx.fillStyle = "#203040";',
        "ctx.fillRect(0, 0, 300, 300);",
    ]


def _renderer_gl(h: _Hider) -> list[str]:
    return [
        f"const gl = {h.ref('p5')}.instance._renderer.GL;",
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
    ]


def _canvas_element_arg(h: _Hider) -> list[str]:
    return [
        f'const spare = {h.ref("document")}.createElement("canvas");',
        "createCanvas(600, 600, WEBGL, spare);",
    ]


def _instance_canvas(h: _Hider) -> list[str]:
    return [
        f'const other = {h.ref("document")}.createElement("canvas");',
        "other.width = 600;",
        "other.height = 600;",
        'const ctx = other.getContext("2d");',
        'ctx.fillStyle = "#8e3b46";',
        "ctx.fillRect(0, 0, 600, 600);",
        f"{h.ref('p5')}.instance.canvas = other;",
    ]


def _instance_renderer(h: _Hider) -> list[str]:
    return [
        f'const other = {h.ref("document")}.createElement("canvas");',
        f"const inst = {h.ref('p5')}.instance;",
        "const fake = Object.create(inst._renderer);",
        "fake.canvas = other;",
        "inst._renderer = fake;",
    ]


def _append_overlay(h: _Hider) -> list[str]:
    doc = h.ref("document")
    return [
        f'const overlay = {doc}.createElement("canvas");',
        'overlay.style.position = "fixed";',
        'overlay.style.inset = "0";',
        'overlay.style.background = "#8e3b46";',
        f"{doc}.body.appendChild(overlay);",
    ]


def _css_background(h: _Hider) -> list[str]:
    return [
        f'const sheet = {h.ref("document")}.querySelector("canvas").style;',
        'sheet.background = "#8e3b46";',
        'sheet.filter = "invert(1)";',
    ]


def _dom_div(h: _Hider) -> list[str]:
    div = h.call("createDiv", '""')
    return [f'{div}.style("background", "#8e3b46").size(600, 600).position(0, 0);']


def _dom_p(h: _Hider) -> list[str]:
    para = h.call("createP", '"a coral bloom"')
    return [f"{para}.position(20, 20);"]


def _bg_image(h: _Hider) -> list[str]:
    return [
        f"const img = {h.call('createImage', '60, 60')};",
        "img.loadPixels();",
        "img.pixels.fill(200);",
        "img.updatePixels();",
        "background(img);",
    ]


def _bg_graphics(h: _Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '600, 600')};",
        "pg.background(40, 60, 120);",
        "background(pg);",
    ]


def _bg_framebuffer(h: _Hider) -> list[str]:
    return [
        f"const fb = {h.call('createFramebuffer')};",
        "background(fb);",
    ]


def _bg_to_string(h: _Hider) -> list[str]:
    colourish = '{ toString() { return "#8e3b46"; } }'
    return [f"{h.call('background', colourish)};"]


def _tamper(target: str, rest: str, *, cover: bool = False) -> Body:
    """`<hidden target><rest>`; with `cover`, a hidden bare rect the tamper would hide."""
    def body(h: _Hider) -> list[str]:
        lines = [f"{h.ref(target)}{rest}"]
        if cover:
            lines.append(f"{h.call('rect', '20, 20, 120, 80')};")
        return lines
    return body


def _then_getter(h: _Hider) -> list[str]:
    return [
        f'Object.defineProperty({h.ref("Object")}.prototype, "then", {{',
        _INDENT + "configurable: true,",
        _INDENT + "get() { return function (resolve) { resolve({ status: \"ok\" }); }; },",
        "});",
    ]


def _proto_property(h: _Hider) -> list[str]:
    return [
        f'Object.defineProperty({h.ref("Object")}.prototype, "violations", {{',
        _INDENT + "configurable: true,",
        _INDENT + "get() { return []; },",
        _INDENT + "set(v) {},",
        "});",
    ]


def _paint_internal(h: _Hider) -> list[str]:
    return [f'Object.defineProperty({h.ref("window")}, "__paintInternal", {{ value: {{ errors: [] }} }});']


_COVER_STATIC = (BARE,)
_COVER_RUNTIME = (RT_BARE,)

CONSTRUCT_LIST: tuple[_Construct, ...] = (
    _Construct(
        "text", frozenset({TEXT_LABEL, FORBIDDEN, EXTERNAL}), frozenset({RT_TEXT, RT_FORBIDDEN}),
        (
            _v("text", _call("text", '"a coral bloom", 120, 140')),
            _v("text_size", _call("textSize", "48")),
            _v("text_font", _call("textFont", '"serif"')),
        ),
    ),
    _Construct(
        "bare_primitive", frozenset({BARE, FORBIDDEN, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("rect", _call("rect", "40, 40, 200, 120")),
            _v("ellipse", _call("ellipse", "300, 300, 80, 60")),
            _v("line", _call("line", "0, 0, 600, 600")),
            _v("triangle", _call("triangle", "100, 500, 300, 100, 500, 500")),
            _v("quad", _call("quad", "50, 50, 150, 60, 140, 160, 40, 150")),
            _v("point", _call("point", "10, 10")),
            _v("arc", _call("arc", "300, 300, 200, 200, 0, 3")),
            _v("square", _call("square", "60, 60, 90")),
            _v("p5_circle", _call("circle", "300, 300, 50")),
            _v("shape", lambda h: [f"{h.call('beginShape')};",
                                   f"{h.call('vertex', '100, 100')};",
                                   f"{h.call('vertex', '500, 120')};",
                                   f"{h.call('vertex', '300, 500')};",
                                   f"{h.call('endShape')};"]),
        ),
        per_wrapper=2,
    ),
    _Construct(
        "offscreen_buffer", frozenset({BARE, FORBIDDEN, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("graphics_rect", _graphics_rect, decoys=("rect",)),
            _v("framebuffer", _framebuffer),
            _v("graphics_text", _graphics_text, static=(TEXT_LABEL,), runtime=(RT_TEXT,),
               decoys=("text", "textSize")),
        ),
    ),
    _Construct(
        "pixel_write", frozenset({BARE, FORBIDDEN, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("pixels_array", _pixels_array),
            _v("set_pixel", _set_pixel),
            _v("get_region", _get_region),
        ),
    ),
    _Construct(
        "filter", frozenset({FORBIDDEN, BARE, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("blur", _call("filter", '"blur", 3')),
            _v("invert", _call("filter", '"invert"')),
            _v("threshold", _call("filter", '"threshold", 0.5')),
        ),
    ),
    _Construct(
        "shader", frozenset({FORBIDDEN, BARE, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("filter_shader", _filter_shader),
            _v("create_shader", _create_shader),
            _v("base_material", _base_material),
        ),
        top=(f'const INVERT_SRC = "{_FILTER_FRAG}";', f'const VERT_SRC = "{_VERT}";',
             f'const FRAG_SRC = "{_FRAG}";'),
    ),
    _Construct(
        "copy_blend", frozenset({FORBIDDEN, BARE, EXTERNAL}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("copy", _call("copy", "0, 0, 300, 300, 300, 300, 300, 300")),
            _v("blend", _call("blend", '0, 0, 300, 300, 300, 0, 300, 300, "difference"')),
            _v("image", _snapshot_image),
        ),
    ),
    _Construct(
        "raw_context", frozenset({BARE, EXTERNAL, FORBIDDEN}), frozenset({RT_BARE, RT_FORBIDDEN}),
        (
            _v("gl_clear", _gl_clear),
            _v("fill_rect", _fill_rect, runtime=(RENDER_ERROR,)),
            _v("query_webgl2", _query_webgl2),
            _v("context_2d", _context_2d, runtime=(RENDER_ERROR,)),
            _v("renderer_gl", _renderer_gl),
        ),
        per_wrapper=2,
    ),
    _Construct(
        "canvas_swap", frozenset({EXTERNAL, FORBIDDEN, BARE}), frozenset({CANVAS_SWAPPED, RT_FORBIDDEN}),
        (
            _v("canvas_element_arg", _canvas_element_arg),
            _v("instance_canvas", _instance_canvas),
            _v("instance_renderer", _instance_renderer, runtime=(RENDER_ERROR,)),
            _v("append_overlay", _append_overlay),
            _v("css_background", _css_background),
            _v("dom_div", _dom_div, static=(TEXT_LABEL,)),
            _v("dom_p", _dom_p, static=(TEXT_LABEL,)),
        ),
        per_wrapper=2,
    ),
    _Construct(
        "background_non_colour", frozenset({FORBIDDEN, EXTERNAL, BARE}),
        frozenset({RT_FORBIDDEN, RT_BARE}),
        (
            _v("image", _bg_image),
            _v("graphics", _bg_graphics),
            _v("to_string", _bg_to_string),
            _v("framebuffer", _bg_framebuffer),
        ),
    ),
    _Construct(
        "disallowed_brush", frozenset({DISALLOWED_BRUSH, UNKNOWN_BRUSH}),
        frozenset({RT_BRUSH, RT_FORBIDDEN}),
        (
            # rect, line and spline are also p5 primitive names: with `brush` hidden, a gate
            # may reject the call as a bare primitive.
            _v("rect", _brush("rect", "60, 60, 200, 120"), static=(BARE,)),
            _v("line", _brush("line", "0, 0, 600, 600"), static=(BARE,)),
            _v("stroke", _brush("stroke", '"#222222"')),
            _v("set", _brush("set", '"2B", "#222222", 1')),
            _v("hatch", _brush("hatch", "5, 0.5")),
            _v("wash", _brush("wash", '"#8e3b46", 80')),
            _v("field", _brush("field", '"seabed"')),
            _v("spline", _brush("spline", "[[60, 60], [300, 200], [540, 60]], 0.5"), static=(BARE,)),
            _v("polygon", _brush("polygon", "[[60, 60], [300, 200], [540, 60]]")),
        ),
        per_wrapper=2,
    ),
    _Construct(
        "verdict_tamper", frozenset({FORBIDDEN, EXTERNAL}),
        frozenset({RT_FORBIDDEN, RENDER_ERROR, RENDER_TIMEOUT}),
        (
            _v("object_keys", _tamper("Object", ".keys = function () { return []; };", cover=True),
               static=_COVER_STATIC, runtime=_COVER_RUNTIME),
            _v("array_push", _tamper("Array", ".prototype.push = function () { return 0; };")),
            _v("array_slice", _tamper("Array", ".prototype.slice = function () { return []; };", cover=True),
               static=_COVER_STATIC, runtime=_COVER_RUNTIME),
            _v("array_map", _tamper("Array", ".prototype.map = function () { return []; };")),
            _v("json_stringify", _tamper("JSON", '.stringify = function () { return "{}"; };')),
            _v("json_parse", _tamper("JSON", ".parse = function () { return {}; };")),
            _v("promise_then", _tamper("Promise", ".prototype.then = function () { return this; };")),
            _v("then_getter", _then_getter),
            _v("object_prototype_property", _proto_property),
            _v("typed_array", _tamper("Uint8Array", ".prototype.subarray = function () { return this; };")),
            _v("string_split", _tamper("String", ".prototype.split = function () { return []; };")),
            _v("string_index_of", _tamper("String", ".prototype.indexOf = function () { return -1; };")),
            _v("string_slice", _tamper("String", '.prototype.slice = function () { return ""; };')),
            _v("prepare_stack_trace", _tamper("Error", '.prepareStackTrace = function () { return ""; };',
                                              cover=True),
               static=_COVER_STATIC, runtime=_COVER_RUNTIME),
            _v("function_call", _tamper("Function", ".prototype.call = function () { return undefined; };")),
            _v("function_apply",
               _tamper("Function", ".prototype.apply = function () { return undefined; };")),
            _v("reflect_apply", _tamper("Reflect", ".apply = function () { return undefined; };", cover=True),
               static=_COVER_STATIC, runtime=_COVER_RUNTIME),
            _v("paint_global", _tamper("__paint", '.collect = function () { return { status: "ok" }; };')),
            _v("paint_internal", _paint_internal),
            _v("date_now", _tamper("Date", ".now = function () { return 0; };")),
            _v("performance_now", _tamper("performance", ".now = function () { return 0; };")),
            _v("crypto_random", _tamper("crypto", ".getRandomValues = function (a) { return a; };")),
        ),
        per_wrapper=2,
    ),
)
CONSTRUCTS: tuple[str, ...] = tuple(c.name for c in CONSTRUCT_LIST)


def _uses_this(wrapper: str, form: str) -> bool:
    return wrapper == "plain_this" or (wrapper, form) in (("computed", "this_key"),
                                                          ("destructuring", "this"))


def _build() -> list[Case]:
    cases: list[Case] = []
    for ci, construct in enumerate(CONSTRUCT_LIST):
        k = construct.per_wrapper
        for wi, wrapper in enumerate(WRAPPERS):
            forms = WRAPPER_FORMS[wrapper]
            for j in range(k):
                variant = construct.variants[(wi * k + j) % len(construct.variants)]
                form = forms[(ci * k + j) % len(forms)]
                h = _Hider(wrapper, form)
                payload = variant.body(h)
                top, block, bottom = h.place(payload, variant.decoy_names)
                code = _assemble(list(construct.top) + top, block, bottom)
                static = construct.static_codes | variant.static_extra
                if construct.name == "disallowed_brush":
                    static |= _WRAPPER_STATIC_EXTRA.get(wrapper, frozenset())
                runtime = construct.runtime_codes | variant.runtime_extra
                if _uses_this(wrapper, form):
                    # `this` is the window only in a sloppy classic script; where the
                    # sketch runs as a module (strict, `this` undefined) the hiding
                    # itself throws, which is a rejection too.
                    runtime |= {RENDER_ERROR}
                cases.append(Case(
                    id=f"{construct.name}__{wrapper}__{variant.name}",
                    construct=construct.name,
                    wrapper=wrapper,
                    code=code,
                    static_codes=static,
                    runtime_codes=runtime,
                    variant=variant.name,
                    form=form,
                ))
    ids = [c.id for c in cases]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    if dupes:
        raise AssertionError(f"duplicate case ids: {dupes}")
    for c in cases:
        assert c.static_codes <= STATIC_CODES, c.id
        assert c.runtime_codes <= RUNTIME_CODES, c.id
    return cases


CASES: list[Case] = _build()
_BY_ID = {c.id: c for c in CASES}


def by_id(case_id: str) -> Case:
    return _BY_ID[case_id]


def matrix() -> dict[str, dict[str, int]]:
    """construct -> wrapper -> number of cases."""
    out: dict[str, dict[str, int]] = {c: {w: 0 for w in WRAPPERS} for c in CONSTRUCTS}
    for case in CASES:
        out[case.construct][case.wrapper] += 1
    return out


# ---------------------------------------------------------------------------------------
# Legitimate sketches

# Files under the legit folders that are deliberately not paintings.
LEGIT_EXCLUDED: dict[str, str] = {
    "bench/sketches/trivial.js": "paints nothing by design (measures the per-render overhead)",
}


def _seed_sketches() -> list:
    """~40 seed-generator sketches: one per seed subject (so every flower family
    appears), seeds spread over 0..4000, every other one in a weak style (each weak style
    2-3 times); then the generator's own choices of style and subject over the range;
    then a few pool items."""
    from paintapp.env import seedgen

    out = []
    subjects = seedgen.SEED_SUBJECTS
    step = 3990 // max(1, len(subjects) - 1)
    for i, subject in enumerate(subjects):
        style = "good" if i % 2 == 0 else seedgen.WEAK_STYLES[(i // 2) % len(seedgen.WEAK_STYLES)]
        out.append(seedgen.generate(7 + i * step, style=style, subject_slug=subject.slug))
    for j in range(40 - len(subjects)):
        out.append(seedgen.generate(4000 - j * 283))
    return out


def _legit(seeded: list, pool: list) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted(GOOD_DIR.glob("*.js")):
        out.append((f"good/{path.name}", path.read_text()))
    for path in sorted(BENCH_DIR.glob("*.js")):
        rel = f"bench/sketches/{path.name}"
        if rel not in LEGIT_EXCLUDED:
            out.append((rel, path.read_text()))
    out += [(f"seedgen/{sk.id}", sk.code) for sk in seeded]
    out += [(f"pool/{sk.id}", sk.code) for sk in pool]
    out.append(("adversarial/skeleton", skeleton()))
    names = [n for n, _ in out]
    assert len(names) == len(set(names)), "duplicate legit names"
    return out


def _pool() -> list:
    from paintapp.env import seedgen

    return seedgen.generate_pool(6, seed=3)


# The SeedSketch records behind the seedgen/ and pool/ entries of LEGIT.
_SEEDED = _seed_sketches()
_POOL = _pool()
LEGIT_SEEDGEN: list = _SEEDED + _POOL
LEGIT: list[tuple[str, str]] = _legit(_SEEDED, _POOL)
LEGIT_NAMES: frozenset[str] = frozenset(name for name, _ in LEGIT)


if __name__ == "__main__":  # pragma: no cover - a reading aid
    if len(sys.argv) > 1:
        for cid in sys.argv[1:]:
            c = by_id(cid)
            print(f"// {c.id}  form={c.form}  static={sorted(c.static_codes)}  "
                  f"runtime={sorted(c.runtime_codes)}")
            print(c.code)
    else:
        m = matrix()
        width = max(len(c) for c in CONSTRUCTS)
        print(" " * width, " ".join(w[:6].rjust(6) for w in WRAPPERS), "  total")
        for c in CONSTRUCTS:
            row = m[c]
            print(c.ljust(width), " ".join(str(row[w]).rjust(6) for w in WRAPPERS),
                  str(sum(row.values())).rjust(7))
        print(f"{len(CASES)} cases, {len(LEGIT)} legit sketches")
