"""The editor's instant preview: the render harness run in the curator's own browser, in a
sandboxed iframe, exactly as a render worker runs it (static/js/preview.js and
preview-frame.js). The page gets the same four files the worker's page loads, in the same
order, and the worker's render options; the stub module is composed here, by the sandbox's
own functions, for the global names of the curator's browser (asked once per page).

The preview is never scored: the server render is the one that counts.
"""
from __future__ import annotations

import re

from django.conf import settings
from django.templatetags.static import static
from django.urls import reverse

from paintenv.render_config import density_for
from paintenv.render_page import PAGE_DIR, SHADOWS_PATH
from paintenv.sandbox import compose_module, shadowable, shadows_module
from paintenv.sketch_api import SKETCH_API
from painting.services import renderer_config
from training.editor.services import EditorError

# Where the studio serves each file the worker's page loads (settings.STATICFILES_DIRS maps
# these folders onto paintenv/page/ and node_modules, the worker's own sources).
STATIC_FOR_PAGE_PATH = {
    "/harness-pre.js": "paint-harness/harness-pre.js",
    "/p5.min.js": "vendor/p5/p5.min.js",
    "/p5.brush.js": "vendor/p5.brush/p5.brush.js",
    "/harness.js": "paint-harness/harness.js",
}
MAX_NAMES = 20_000  # a browser has ~1,600 global names; more is not a browser asking
IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,199}\Z")
_SKETCH_MARK = "\u0000the sketch\u0000"


def page_scripts() -> list[str]:
    """The harness page's scripts in index.html's order (the order matters: see index.html)."""
    sources = re.findall(r'<script src="([^"]+)"', (PAGE_DIR / "index.html").read_text(encoding="utf-8"))
    return [STATIC_FOR_PAGE_PATH[src] for src in sources]


def preview_config(render_settings: dict) -> dict:
    """What the editor page needs to paint a preview like the worker would, with the
    rollout's seed and size."""
    renderer = renderer_config()
    return {
        "scripts": [static(path) for path in page_scripts()],
        "frameScript": static("js/preview-frame.js"),
        "kitUrl": reverse("training:preview-kit"),
        "api": SKETCH_API.to_page(),
        "allowed": sorted(SKETCH_API.allowed_globals),
        # As the render worker passes them to __paint.render().
        "options": {
            "seed": render_settings["seed"] & 0xFFFFFFFF,
            "density": density_for(render_settings["size"]),
            "maxPixels": renderer.max_pixels,
            "maxGraphicsPixels": 4 * renderer.max_pixels,
            "drawFrames": renderer.draw_frames,
        },
        "budgetMs": round(settings.EDITOR_PREVIEW_BUDGET_S * 1000),
    }


def preview_kit(names: object) -> dict:
    """The stub module and the sketch's wrapper for a browser whose page has these global
    names (what __paint.shadowNames() answered there): the wrapper is split around the
    sketch, so the page can wrap each edit without asking again."""
    if not isinstance(names, list) or len(names) > MAX_NAMES:
        raise EditorError(f"Send the page's global names as a list of at most {MAX_NAMES:,}.")
    if not all(isinstance(name, str) and IDENTIFIER.match(name) for name in names):
        raise EditorError("Every name must be a JavaScript identifier.")
    shadowed = shadowable(names)
    head, tail = compose_module(_SKETCH_MARK, shadowed).split(_SKETCH_MARK)
    return {"specifier": SHADOWS_PATH, "shadows": shadows_module(shadowed), "head": head, "tail": tail}
