"""Constructs: what the hidden name does (puts pixels on the canvas without the brush, or
tampers with the verdict), each in a few variants, with the codes that reject it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tests.paintenv.adversarial.codes import (
    BARE,
    CANVAS_SWAPPED,
    DISALLOWED_BRUSH,
    EXTERNAL,
    FORBIDDEN,
    RENDER_ERROR,
    RENDER_TIMEOUT,
    RT_BARE,
    RT_BRUSH,
    RT_FORBIDDEN,
    RT_TEXT,
    TEXT_LABEL,
    UNKNOWN_BRUSH,
)
from tests.paintenv.adversarial.skeleton import INDENT
from tests.paintenv.adversarial.wrappers import Hider

Body = Callable[[Hider], list[str]]


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


def _pixels_array(h: Hider) -> list[str]:
    return [
        f"{h.call('loadPixels')};",
        f"const px = {h.ref('pixels')};",
        "for (let i = 0; i < px.length; i += 4) {",
        INDENT + "px[i] = 255;",
        "}",
        f"{h.call('updatePixels')};",
    ]


def _set_pixel(h: Hider) -> list[str]:
    return [
        "for (let x = 0; x < 200; x++) {",
        INDENT + f"{h.call('set', 'x, 100, [142, 59, 70, 255]')};",
        "}",
        f"{h.call('updatePixels')};",
    ]


def _get_region(h: Hider) -> list[str]:
    return [
        f"const region = {h.call('get', '0, 0, 300, 300')};",
        f"{h.call('set', '300, 300, region')};",
        f"{h.call('updatePixels')};",
    ]


def _graphics_rect(h: Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '600, 600')};",
        "pg.fill(142, 59, 70);",
        "pg.rect(0, 0, 300, 300);",
        f"{h.call('image', 'pg, 0, 0')};",
    ]


def _graphics_text(h: Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '300, 100')};",
        "pg.textSize(32);",
        'pg.text("a coral bloom", 10, 50);',
        f"{h.call('image', 'pg, 20, 20')};",
    ]


def _framebuffer(h: Hider) -> list[str]:
    return [
        f"const fb = {h.call('createFramebuffer')};",
        "fb.begin();",
        'background("#203040");',
        "fb.end();",
        f"{h.call('image', 'fb, 0, 0, 300, 300')};",
    ]


def _filter_shader(h: Hider) -> list[str]:
    return [
        f"const tint = {h.call('createFilterShader', 'INVERT_SRC')};",
        f"{h.call('filter', 'tint')};",
    ]


def _create_shader(h: Hider) -> list[str]:
    return [
        f"const glow = {h.call('createShader', 'VERT_SRC, FRAG_SRC')};",
        f"{h.call('shader', 'glow')};",
        f"{h.call('plane', '600, 600')};",
    ]


def _base_material(h: Hider) -> list[str]:
    return [
        f"const flat = {h.call('baseMaterialShader')}.modify({{",
        INDENT + '"vec4 getFinalColor": "(vec4 c) { return vec4(0.9, 0.1, 0.1, 1.0); }",',
        "});",
        f"{h.call('shader', 'flat')};",
        f"{h.call('plane', '600, 600')};",
    ]


def _snapshot_image(h: Hider) -> list[str]:
    return [
        f"const snap = {h.call('get')};",
        f"{h.call('image', 'snap, 100, 100, 200, 200')};",
    ]


def _gl_clear(h: Hider) -> list[str]:
    return [
        f"const gl = {h.ref('drawingContext')};",
        "gl.enable(gl.SCISSOR_TEST);",
        "gl.scissor(0, 0, 64, 64);",
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
        "gl.disable(gl.SCISSOR_TEST);",
    ]


def _fill_rect(h: Hider) -> list[str]:
    return [
        f"const ctx = {h.ref('drawingContext')};",
        'ctx.fillStyle = "#203040";',
        "ctx.fillRect(0, 0, 300, 300);",
    ]


def _query_webgl2(h: Hider) -> list[str]:
    return [
        f'const gl = {h.ref("document")}.querySelector("canvas").getContext("webgl2");',
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
    ]


def _context_2d(h: Hider) -> list[str]:
    return [
        f'const ctx = {h.ref("document")}.querySelector("canvas").getContext("2d");',
        'ctx.fillStyle = "#203040";',
        "ctx.fillRect(0, 0, 300, 300);",
    ]


def _renderer_gl(h: Hider) -> list[str]:
    return [
        f"const gl = {h.ref('p5')}.instance._renderer.GL;",
        "gl.clearColor(0.1, 0.2, 0.8, 1.0);",
        "gl.clear(gl.COLOR_BUFFER_BIT);",
    ]


def _canvas_element_arg(h: Hider) -> list[str]:
    return [
        f'const spare = {h.ref("document")}.createElement("canvas");',
        "createCanvas(600, 600, WEBGL, spare);",
    ]


def _instance_canvas(h: Hider) -> list[str]:
    return [
        f'const other = {h.ref("document")}.createElement("canvas");',
        "other.width = 600;",
        "other.height = 600;",
        'const ctx = other.getContext("2d");',
        'ctx.fillStyle = "#8e3b46";',
        "ctx.fillRect(0, 0, 600, 600);",
        f"{h.ref('p5')}.instance.canvas = other;",
    ]


def _instance_renderer(h: Hider) -> list[str]:
    return [
        f'const other = {h.ref("document")}.createElement("canvas");',
        f"const inst = {h.ref('p5')}.instance;",
        "const fake = Object.create(inst._renderer);",
        "fake.canvas = other;",
        "inst._renderer = fake;",
    ]


def _append_overlay(h: Hider) -> list[str]:
    doc = h.ref("document")
    return [
        f'const overlay = {doc}.createElement("canvas");',
        'overlay.style.position = "fixed";',
        'overlay.style.inset = "0";',
        'overlay.style.background = "#8e3b46";',
        f"{doc}.body.appendChild(overlay);",
    ]


def _css_background(h: Hider) -> list[str]:
    return [
        f'const sheet = {h.ref("document")}.querySelector("canvas").style;',
        'sheet.background = "#8e3b46";',
        'sheet.filter = "invert(1)";',
    ]


def _dom_div(h: Hider) -> list[str]:
    div = h.call("createDiv", '""')
    return [f'{div}.style("background", "#8e3b46").size(600, 600).position(0, 0);']


def _dom_p(h: Hider) -> list[str]:
    para = h.call("createP", '"a coral bloom"')
    return [f"{para}.position(20, 20);"]


def _bg_image(h: Hider) -> list[str]:
    return [
        f"const img = {h.call('createImage', '60, 60')};",
        "img.loadPixels();",
        "img.pixels.fill(200);",
        "img.updatePixels();",
        "background(img);",
    ]


def _bg_graphics(h: Hider) -> list[str]:
    return [
        f"const pg = {h.call('createGraphics', '600, 600')};",
        "pg.background(40, 60, 120);",
        "background(pg);",
    ]


def _bg_framebuffer(h: Hider) -> list[str]:
    return [
        f"const fb = {h.call('createFramebuffer')};",
        "background(fb);",
    ]


def _bg_to_string(h: Hider) -> list[str]:
    colourish = '{ toString() { return "#8e3b46"; } }'
    return [f"{h.call('background', colourish)};"]


def _tamper(target: str, rest: str, *, cover: bool = False) -> Body:
    """`<hidden target><rest>`; with `cover`, a hidden bare rect the tamper would hide."""
    def body(h: Hider) -> list[str]:
        lines = [f"{h.ref(target)}{rest}"]
        if cover:
            lines.append(f"{h.call('rect', '20, 20, 120, 80')};")
        return lines
    return body


def _then_getter(h: Hider) -> list[str]:
    return [
        f'Object.defineProperty({h.ref("Object")}.prototype, "then", {{',
        INDENT + "configurable: true,",
        INDENT + "get() { return function (resolve) { resolve({ status: \"ok\" }); }; },",
        "});",
    ]


def _proto_property(h: Hider) -> list[str]:
    return [
        f'Object.defineProperty({h.ref("Object")}.prototype, "violations", {{',
        INDENT + "configurable: true,",
        INDENT + "get() { return []; },",
        INDENT + "set(v) {},",
        "});",
    ]


def _paint_internal(h: Hider) -> list[str]:
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
