"""The render page: one browser context with the harness and the libraries loaded, its
sandbox (CSP, request interception), and the isolated world the result is read from.

The page (paintenv/page/) and the libraries are served from memory by request
interception; nothing else is reachable:
  * Content-Security-Policy on the page: default-src 'none', scripts and images only
    from the harness origin (no data:, no eval), connect-src/worker-src/frame-src 'none'.
  * Request interception on the whole context: only the harness's own files are
    answered (from memory, each before the sketch only); other requests are aborted and
    navigations (popups, location changes, frames) get a 204 so the page stays put.
  * The page is an http origin with no file access; nothing is read from disk per render.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paintenv.render_config import REFERENCE_SIZE
from paintenv.render_result import RenderUnavailable
from paintenv.sandbox import shadowable, shadows_module
from paintenv.sketch_api import SKETCH_API

if TYPE_CHECKING:  # Playwright loads with the first page, not with this module
    from playwright.sync_api import Route

__all__ = [
    "SKETCH_PATH",
    "PageSlot",
    "ShadowStubs",
    "close_page",
    "load_assets",
    "open_page",
    "remaining_ms",
]

ORIGIN = "http://paint.invalid"  # .invalid never resolves: nothing here can leak to a real host
SKETCH_PATH = "/sketch.js"
SHADOWS_PATH = "/shadows.js"
PAGE_DIR = Path(__file__).resolve().parent / "page"

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'none'",
        "media-src 'none'",
        "object-src 'none'",
        "frame-src 'none'",
        "child-src 'none'",
        "worker-src 'none'",
        "manifest-src 'none'",
        "form-action 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)


# --------------------------------------------------------------------------- assets
_ASSET_FILES = {
    "/": ("page", "index.html", "text/html; charset=utf-8"),
    "/harness-pre.js": ("page", "harness-pre.js", "text/javascript; charset=utf-8"),
    "/harness.js": ("page", "harness.js", "text/javascript; charset=utf-8"),
    "/p5.min.js": ("npm", "p5/lib/p5.min.js", "text/javascript; charset=utf-8"),
    "/p5.brush.js": ("npm", "p5.brush/dist/p5.brush.js", "text/javascript; charset=utf-8"),
}


def load_assets(asset_dir: Path) -> dict[str, tuple[bytes, str]]:
    """Read the harness and the libraries once; every render is served from these bytes."""
    assets: dict[str, tuple[bytes, str]] = {}
    for url_path, (where, rel, ctype) in _ASSET_FILES.items():
        path = (PAGE_DIR if where == "page" else Path(asset_dir)) / rel
        try:
            assets[url_path] = (path.read_bytes(), ctype)
        except OSError as exc:
            hint = " (run `npm ci` or set PAINTAPP_NODE_MODULES)" if where == "npm" else ""
            raise RenderUnavailable(f"renderer asset missing: {path}{hint}") from exc
    return assets


# --------------------------------------------------------------------------- pages
@dataclass
class ShadowStubs:
    """The page's global names less the allowlist, asked once of a page no sketch has
    touched, and the module of stubs every sketch imports for them (see sandbox.py)."""

    names: list[str] | None = None
    module: bytes = b""


class PageSlot:
    """One context + page with the harness loaded, waiting for (or running) a sketch."""

    def __init__(self) -> None:
        self.context: Any = None
        self.page: Any = None
        self.code: str | None = None
        self.blocked: list[str] = []
        self.crashed = False
        self.navigated = False
        self.sketch_served = False  # until then, a failure cannot be the sketch's doing
        self.shadows_served = False
        self.cdp: Any = None  # a DevTools session for the isolated reader
        self.reader_world: int | None = None
        self.opened_ms = 0.0  # context + page
        self.loaded_ms = 0.0  # harness + libraries
        self.prewarmed = False


def open_page(browser: Any, assets: dict[str, tuple[bytes, str]], stubs: ShadowStubs,
              deadline: float) -> PageSlot:
    """A fresh context with the harness and the libraries loaded, by `deadline`
    (time.monotonic()). The first page also fills in `stubs`."""
    slot = PageSlot()
    t0 = time.perf_counter()
    context = browser.new_context(
        viewport={"width": REFERENCE_SIZE, "height": REFERENCE_SIZE},
        device_scale_factor=1,
        service_workers="block",
        accept_downloads=False,
        java_script_enabled=True,
    )
    slot.context = context

    def handle(route: Route) -> None:
        request = route.request
        url = request.url
        path = None
        if url.startswith(ORIGIN + "/"):
            path = url[len(ORIGIN):].split("?", 1)[0].split("#", 1)[0]
        try:
            if request.is_navigation_request():
                # Exactly one navigation per context: the harness page itself. A
                # sketch cannot navigate away, open popups or load frames.
                if path == "/" and not slot.navigated:
                    slot.navigated = True
                else:
                    if len(slot.blocked) < 50:
                        slot.blocked.append(f"navigation {url[:200]}")
                    # 204 No Content: the navigation ends without committing, so the
                    # page (and the render) stays as it was. An abort would replace
                    # it with Chromium's error page.
                    route.fulfill(status=204, body=b"")
                    return
            if path == SKETCH_PATH and slot.code is not None and not slot.sketch_served:
                slot.sketch_served = True
                route.fulfill(status=200, body=slot.code.encode("utf-8", "replace"), headers={
                    "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store"})
            elif path == SHADOWS_PATH and not slot.sketch_served and not slot.shadows_served:
                slot.shadows_served = True
                route.fulfill(status=200, body=stubs.module, headers={
                    "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store"})
            elif path is not None and path in assets and not slot.sketch_served:
                # The harness and the libraries load before the sketch, and never again
                # (a sketch's import() of p5 would be a second, unguarded copy).
                body, ctype = assets[path]
                headers = {"content-type": ctype, "cache-control": "no-store"}
                if path == "/":
                    headers["content-security-policy"] = CSP
                route.fulfill(status=200, body=body, headers=headers)
            elif path is not None:
                route.fulfill(status=404, body=b"", headers={"content-type": "text/plain"})
            else:
                if len(slot.blocked) < 50:
                    slot.blocked.append(f"request {url[:200]}")
                route.abort("blockedbyclient")
        except Exception:  # noqa: BLE001 - the page went away mid-request
            pass

    try:
        context.route("**/*", handle)
        page = context.new_page()
        slot.page = page
        page.on("crash", lambda _page: setattr(slot, "crashed", True))
        t1 = time.perf_counter()
        slot.opened_ms = (t1 - t0) * 1000
        page.goto(ORIGIN + "/", wait_until="load", timeout=remaining_ms(deadline))
        if not page.evaluate("() => !!(window.__paint && window.__paint.libraries)"):
            raise RenderUnavailable("the render harness or the p5/p5.brush libraries failed to load")
        if stubs.names is None:
            names = page.evaluate("n => window.__paint.shadowNames(n)",
                                  sorted(SKETCH_API.allowed_globals))
            stubs.names = shadowable([str(n) for n in names or []])
            stubs.module = shadows_module(stubs.names).encode("utf-8")
        # The stubs are built now, off the critical path, not per render.
        if not page.evaluate("a => window.__paint.prepare(a)", SKETCH_API.to_page()):
            raise RenderUnavailable("the render page's stub module failed to load")
        # A world of its own on the same page: the same DOM and canvas, none of the
        # page's JavaScript objects, so nothing the sketch does reaches the reader.
        slot.cdp = context.new_cdp_session(page)
        frame_id = slot.cdp.send("Page.getFrameTree")["frameTree"]["frame"]["id"]
        world = slot.cdp.send("Page.createIsolatedWorld",
                              {"frameId": frame_id, "worldName": "paint-reader"})
        slot.reader_world = int(world["executionContextId"])
        slot.loaded_ms = (time.perf_counter() - t1) * 1000
    except BaseException:
        close_page(slot)
        raise
    return slot


def remaining_ms(deadline: float) -> float:
    # A little past the deadline: the watchdog (which kills the browser at the deadline)
    # is the authority; Playwright's timeout is only a backstop.
    return max(1.0, (deadline - time.monotonic()) * 1000 + 2000)


def close_page(slot: PageSlot) -> None:
    try:
        if slot.context is not None:
            slot.context.close()
    except Exception:  # noqa: BLE001 - the browser may already be gone
        pass
