"""The runtime half of the allowlist: how a sketch is wrapped for the render page, and
how the page's raw counts become verdict codes.

The page (page/harness.js) runs the sketch as the body of a function in an ES module
whose first line imports, from /shadows.js, a recording stub for every global outside
sketch_api.json, so the sketch's free names resolve only to the allowlist or to stubs;
its last line hands `setup` and `draw` to the harness. Python, not the page, turns what the page counted
into violation codes (the page shares its realm with the sketch; its opinion is not
asked).
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from typing import Any

from paintenv.coverage import MARKER_CLAIM
from paintenv.gate_rules import CANVAS_RESIZERS
from paintenv.sketch_api import SKETCH_API

# Verdict codes (stable strings, stored with every rollout).
RUNTIME_BARE_PRIMITIVE = "runtime_bare_primitive"
RUNTIME_TEXT = "runtime_text"
RUNTIME_FORBIDDEN_API = "runtime_forbidden_api"
RUNTIME_DISALLOWED_BRUSH = "runtime_disallowed_brush"
RENDER_ERROR = "render_error"
RENDER_TIMEOUT = "render_timeout"
BLANK_CANVAS = "blank_canvas"
CANVAS_TOO_LARGE = "canvas_too_large"
CANVAS_SWAPPED = "canvas_swapped"
# A canvas other than the published 600 x 600 units (createCanvas with another size, a second
# createCanvas, resizeCanvas, pixelDensity), or a PNG that is not the render's size.
RUNTIME_CANVAS_SIZE = "runtime_canvas_size"
# Verdicts on the painting itself, after the page: legible writing in it (text_check.py),
# and a second render with the same seed that came out different (determinism.py).
PAINTED_TEXT = "painted_text"
NONDETERMINISTIC = "nondeterministic"

RUNTIME_CODES: tuple[str, ...] = (
    RUNTIME_BARE_PRIMITIVE, RUNTIME_TEXT, RUNTIME_FORBIDDEN_API, RUNTIME_DISALLOWED_BRUSH,
    RENDER_ERROR, RENDER_TIMEOUT, BLANK_CANVAS, CANVAS_TOO_LARGE, CANVAS_SWAPPED, RUNTIME_CANVAS_SIZE,
    PAINTED_TEXT, NONDETERMINISTIC,
)

EXPORT_NAME = "__paintExport"  # the harness's door for setup/draw (imported, never shadowed)
# Names no module may bind (strict mode) or that the harness owns.
_UNBINDABLE = frozenset({
    "eval", "arguments", "await", "yield", "let", "static", "implements", "interface",
    "package", "private", "protected", "public", "enum", "setup", "draw", "brush", EXPORT_NAME,
    # reserved words (p5 2.x has a `break` among its shader-building helpers)
    "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
    "do", "else", "export", "extends", "finally", "for", "function", "if", "import", "in",
    "instanceof", "new", "return", "super", "switch", "this", "throw", "try", "typeof",
    "var", "void", "while", "with", "null", "true", "false",
})


def shadowable(names: list[str]) -> list[str]:
    """The page's global names less the allowlist and the names no import may bind."""
    allowed = SKETCH_API.allowed_globals
    return sorted({n for n in names if n not in allowed and n not in _UNBINDABLE})


def shadows_module(names: list[str]) -> str:
    """/shadows.js: one export per shadowed name, each a stub from the harness's kit.
    Exports use aliases so no local binding of this module hides a global it reads."""
    lines = [
        "const take = globalThis.__paintShadowKit;",
        "delete globalThis.__paintShadowKit;",
        "const kit = take();",
        "const deny = kit.deny;",
        "const s_export = kit.receive, s_brush = kit.brush, s_claim = kit.claimRan;",
        f"export {{ s_export as {EXPORT_NAME}, s_brush as brush, s_claim as {MARKER_CLAIM} }};",
    ]
    for i, name in enumerate(names):
        lines.append(f"const s{i} = deny({json.dumps(name)}); export {{ s{i} as {name} }};")
    return "\n".join(lines) + "\n"


def compose_module(code: str, shadow_names: list[str], marker: str | None = None) -> str:
    """The sketch as the page runs it. Line 1 imports a stub for EVERY shadowed name and
    opens a function; the sketch follows verbatim as that function's body, so its own
    top-level declarations legally shadow the stubs (no parser of ours has to guess
    which names it declares); the last lines hand setup and draw over and call the
    function. A sketch that closes our function early gains nothing: outside it, the
    same stubs are in scope, and any declaration of its own there clashes with an import,
    so the module does not parse and nothing runs.
    `marker`: the name an instrumented sketch calls its markers by (coverage.instrument),
    bound on line 1 to the harness's marker function, which only the first claim gets.
    """
    imports = ", ".join([EXPORT_NAME, "brush", MARKER_CLAIM, *shadow_names])
    claim = f"const {marker} = {MARKER_CLAIM}(); " if marker else ""
    head = "import { " + imports + " } from \"/shadows.js\"; " + claim + "(function () {\n"
    tail = (f"\n;{EXPORT_NAME}(typeof setup === \"function\" ? setup : undefined, "
            "typeof draw === \"function\" ? draw : undefined);\n})();\n")
    return head + code + tail


@dataclass(frozen=True)
class PageReading:
    """The harness's result string and the canvas p5 made, as Python read them."""

    result: dict[str, Any] | None
    connected: bool  # the canvas is still in the page
    width: int
    height: int
    png: bytes | None
    error: str | None


# Runs in the isolated world with `this` = the canvas element: copy it unless it is over
# the pixel budget (then nothing is encoded, let alone decoded).
_READ_CANVAS = """function (maxPixels) {
  const out = { connected: this.isConnected, width: this.width, height: this.height, png: null, error: null };
  if (out.width > 0 && out.height > 0 && out.width * out.height <= maxPixels) {
    try { out.png = this.toDataURL("image/png"); } catch (e) { out.error = String(e); }
  }
  return out;
}"""
_PNG_PREFIX = "data:image/png;base64,"


def read_page(cdp: Any, reader_world: int, max_pixels: int) -> PageReading:
    """Ask the frozen `window.__paint` for the result string and the canvas element (a
    primitive and a node: nothing the sketch can intercept), then open that node in the
    isolated world, where none of the page's JavaScript objects exist, and copy it."""
    value = cdp.send("Runtime.evaluate", {"expression": "window.__paint.result()", "returnByValue": True})
    raw = value.get("result", {}).get("value")
    result = None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
            result = parsed if isinstance(parsed, dict) else None
        except ValueError:
            result = None
    canvas: dict[str, Any] = {}
    handle = cdp.send("Runtime.evaluate", {"expression": "window.__paint.canvas()"}).get("result", {})
    if handle.get("subtype") == "node" and handle.get("objectId"):
        node = cdp.send("DOM.describeNode", {"objectId": handle["objectId"]})["node"]
        isolated = cdp.send("DOM.resolveNode", {"backendNodeId": node["backendNodeId"],
                                                "executionContextId": reader_world})["object"]
        canvas = cdp.send("Runtime.callFunctionOn", {
            "objectId": isolated["objectId"], "functionDeclaration": _READ_CANVAS,
            "arguments": [{"value": int(max_pixels)}], "returnByValue": True,
        }).get("result", {}).get("value") or {}
    png = None
    url = canvas.get("png")
    if isinstance(url, str) and url.startswith(_PNG_PREFIX):
        try:
            png = base64.b64decode(url[len(_PNG_PREFIX):], validate=True)
        except ValueError:
            png = None
    return PageReading(result=result, connected=canvas.get("connected") is True,
                       width=_int(canvas.get("width")), height=_int(canvas.get("height")), png=png,
                       error=str(canvas["error"])[:300] if canvas.get("error") else None)


def webgl_available(cdp: Any, reader_world: int) -> bool:
    """Is WebGL2 there at all? Asked from the isolated world, so a sketch that broke the
    page's own canvas prototype cannot pass itself off as a broken browser."""
    value = cdp.send("Runtime.evaluate", {
        "expression": "(() => { try { return !!document.createElement('canvas').getContext('webgl2'); }"
                      " catch (e) { return false; } })()",
        "contextId": reader_world, "returnByValue": True,
    })
    return value.get("result", {}).get("value") is True


def png_size(png: bytes) -> tuple[int, int] | None:
    """Width and height from the PNG header, without decoding anything."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", png[16:24])


def code_for_denied(name: str) -> str:
    """The verdict code for one forbidden name the page counted."""
    if name == CANVAS_TOO_LARGE:
        return CANVAS_TOO_LARGE
    if name.startswith("brush."):
        return RUNTIME_DISALLOWED_BRUSH
    base = name.split("(", 1)[0]
    if name == "canvas_size" or base in CANVAS_RESIZERS:
        return RUNTIME_CANVAS_SIZE
    if base in SKETCH_API.text_names:
        return RUNTIME_TEXT
    if base in SKETCH_API.primitive_names:
        return RUNTIME_BARE_PRIMITIVE
    return RUNTIME_FORBIDDEN_API


def counts(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k)[:80]: int(n) for k, n in list(value.items())[:200]
            if isinstance(n, (int, float)) and not isinstance(n, bool)}


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
