"""The runtime half of the allowlist: how a sketch is wrapped for the render page, and
how the page's raw counts become verdict codes.

The page (page/harness.js) runs the sketch as an ES module whose first line imports,
from /shadows.js, a recording stub for every global outside sketch_api.json, so the
sketch's free names resolve only to the allowlist or to stubs; its last line hands
`setup` and `draw` to the harness. Python, not the page, turns what the page counted
into violation codes (the page shares its realm with the sketch; its opinion is not
asked).
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from typing import Any

from paintapp.env.scopes import resolve
from paintapp.env.sketch import parse_js
from paintapp.env.sketch_api import SKETCH_API

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

RUNTIME_CODES: tuple[str, ...] = (
    RUNTIME_BARE_PRIMITIVE, RUNTIME_TEXT, RUNTIME_FORBIDDEN_API, RUNTIME_DISALLOWED_BRUSH,
    RENDER_ERROR, RENDER_TIMEOUT, BLANK_CANVAS, CANVAS_TOO_LARGE, CANVAS_SWAPPED,
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


# Imported even when the sketch declares them (the module then fails to parse).
ALWAYS_SHADOWED = frozenset({"document", "window", "globalThis", "p5", "Function", "Reflect"})


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
        "const s_export = kit.receive, s_brush = kit.brush;",
        f"export {{ s_export as {EXPORT_NAME}, s_brush as brush }};",
    ]
    for i, name in enumerate(names):
        lines.append(f"const s{i} = deny({json.dumps(name)}); export {{ s{i} as {name} }};")
    return "\n".join(lines) + "\n"


def compose_module(code: str, shadow_names: list[str]) -> str:
    """The sketch as the page runs it: line 1 imports the stubs (less the names the
    sketch declares at its own top level, which would clash), then the sketch verbatim,
    then the hand-over of setup and draw. Nothing wraps the sketch, so no bracket in
    it can close something of ours: at worst the module does not parse and nothing runs.
    """
    data = code.encode("utf-8", "replace")
    root = parse_js(data)
    # Trust the parser's list of top-level declarations only for a clean parse: on a
    # broken one (or syntax tree-sitter does not know) every stub is imported, and a
    # clash with a real declaration is a SyntaxError, so nothing runs. The names that
    # open everything are imported whatever the sketch declares (the gate refuses such
    # declarations anyway).
    declared = set() if root.has_error else resolve(root, data).module_names
    declared -= ALWAYS_SHADOWED
    imports = [EXPORT_NAME]
    if "brush" not in declared:
        imports.append("brush")
    imports += [n for n in shadow_names if n not in declared]
    head = "import { " + ", ".join(imports) + " } from \"/shadows.js\";\n"
    tail = (f"\n;{EXPORT_NAME}(typeof setup === \"function\" ? setup : undefined, "
            "typeof draw === \"function\" ? draw : undefined);\n")
    return head + code + tail


@dataclass(frozen=True)
class PageReading:
    """What the isolated reader saw: the harness's result string and the tagged canvas."""

    result: dict[str, Any] | None
    canvases: int  # canvases carrying this render's nonce
    tagged: int  # canvases carrying any nonce
    width: int
    height: int
    png: bytes | None
    error: str | None


def reader_expression(nonce: str, max_pixels: int) -> str:
    """JavaScript for the isolated world: read the result attribute and copy the one
    canvas that carries `nonce`, unless it is over the pixel budget."""
    return f"""(() => {{
  const out = {{ result: document.documentElement.getAttribute("data-paint-result"),
                canvases: 0, tagged: 0, width: 0, height: 0, png: null, error: null }};
  const mine = [];
  for (const c of document.querySelectorAll("canvas[data-paint-canvas]")) {{
    out.tagged += 1;
    if (c.getAttribute("data-paint-canvas") === {json.dumps(nonce)} && c.isConnected) mine.push(c);
  }}
  out.canvases = mine.length;
  if (mine.length === 1) {{
    const c = mine[0];
    out.width = c.width; out.height = c.height;
    if (c.width > 0 && c.height > 0 && c.width * c.height <= {int(max_pixels)}) {{
      try {{ out.png = c.toDataURL("image/png"); }} catch (e) {{ out.error = String(e); }}
    }}
  }}
  return out;
}})()"""


def parse_reading(value: Any) -> PageReading:
    v = value if isinstance(value, dict) else {}
    raw = v.get("result")
    result = None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
            result = parsed if isinstance(parsed, dict) else None
        except ValueError:
            result = None
    png = None
    url = v.get("png")
    prefix = "data:image/png;base64,"
    if isinstance(url, str) and url.startswith(prefix):
        try:
            png = base64.b64decode(url[len(prefix):], validate=True)
        except ValueError:
            png = None
    return PageReading(result=result, canvases=_int(v.get("canvases")), tagged=_int(v.get("tagged")),
                       width=_int(v.get("width")), height=_int(v.get("height")), png=png,
                       error=str(v["error"])[:300] if v.get("error") else None)


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
