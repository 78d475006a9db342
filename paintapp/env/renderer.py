"""Sandboxed p5.js + p5.brush renderer: sketch source in, PNG and a verdict out.

One warm headless Chromium per renderer (and one renderer per process, see
`get_renderer`), driven with Playwright's sync API from a dedicated thread, a fresh
browser context per render. The page (paintapp/env/page/) and the libraries are served
from memory by request interception; nothing else is reachable (see "Sandbox" below).

A render: take the pre-warmed context (harness + p5 + p5.brush already loaded, seeded
with 0) or open one; reseed Math.random with the render's seed; inject the sketch as the
module /sketch.js (so stacks name it) behind its stubs (sandbox.py); start p5 in global
mode; seed randomSeed/noiseSeed (p5.brush's own seed follows p5's) right before setup();
run setup() and then exactly `draw_frames` (default 1) frames of draw(), then noLoop() —
a sketch that paints in setup() gets one extra draw() frame, as with noLoop() in a
browser; wait for p5.brush's post-draw flush; read 1 pixel (the GPU finishes); then read
the result and copy the canvas from an isolated world.

`size` is the pixel width of the sketch's 600-unit canvas: pixelDensity is pinned to
size/600, so width/height and every coordinate stay 0..600, p5.brush scales its strokes
and buffers with the density, and a 384 px render is the 600 px painting, finer or
coarser (a sketch's own pixelDensity(n) is ignored).

Failures of the SKETCH are verdicts in `Render.violations` (see sandbox.py for the codes).
Only failures of the INFRASTRUCTURE raise `RenderUnavailable`: Chromium missing or failing
to launch three times in a row, the libraries missing, WebGL unavailable in a fresh browser.

The watchdog lives outside the page. The sketch gets `timeout_s` from the moment it is
handed over (launching Chromium and loading the libraries have their own 30 s budget:
exceeding that is RenderUnavailable, not the sketch's fault). At the deadline the
caller's thread SIGKILLs the browser (found by a marker switch in /proc), which stops any
loop and drops any queued GPU work, and returns render_timeout; the next render gets a
fresh browser (~0.3 s). A page that runs out of memory (V8 heap capped at 1 GiB) crashes
alone: a render_error. A browser that dies before the sketch is served is replaced and
the render retried once, so a dead connection never turns into a verdict on a sketch.

Sandbox, in layers (each one alone blocks the usual channels; README "Sandbox layers"):
  * The allowlist at runtime (sandbox.py, page/harness.js): the sketch is a function body
    in a module that imports a counting stub for every global outside sketch_api.json;
    the allowed p5 functions pass plain values only; `brush` is a frozen sandbox;
    built-ins are frozen.
  * The verdict comes from raw counts (a string the frozen window.__paint holds) and the
    canvas element p5 made, copied from an isolated world that shares no JavaScript
    object with the sketch.
  * Content-Security-Policy on the page: default-src 'none', scripts and images only
    from the harness origin (no data:, no eval), connect-src/worker-src/frame-src 'none'.
  * Request interception on the whole context: only the harness's own files are
    answered (from memory, each before the sketch only); other requests are aborted and
    navigations (popups, location changes, frames) get a 204 so the page stays put.
  * Chromium flags: every host name resolves to nothing and every connection, loopback
    included, goes to a dead proxy (what interception cannot see, e.g. WebSockets);
    WebRTC may not send UDP outside that proxy.
  * The page is an http origin with no file access; nothing is read from disk per render.
Chromium's own OS sandbox is off (`--no-sandbox`) because workers usually run as root in
containers; set `chromium_sandbox=True` where the user namespace sandbox is available.
"""
from __future__ import annotations

import base64
import logging
import math
import os
import re
import shutil
import signal
import threading
import time
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from paintapp.env.image import BLANK_THRESHOLD, paint_fraction
from paintapp.env.sandbox import (  # noqa: F401 - the codes are part of this module's API
    BLANK_CANVAS,
    CANVAS_SWAPPED,
    CANVAS_TOO_LARGE,
    RENDER_ERROR,
    RENDER_TIMEOUT,
    RUNTIME_BARE_PRIMITIVE,
    RUNTIME_CODES,
    RUNTIME_DISALLOWED_BRUSH,
    RUNTIME_FORBIDDEN_API,
    RUNTIME_TEXT,
    PageReading,
    code_for_denied,
    compose_module,
    counts,
    png_size,
    read_page,
    shadowable,
    shadows_module,
    webgl_available,
)
from paintapp.env.sketch_api import SKETCH_API

log = logging.getLogger(__name__)

REFERENCE_SIZE = 600  # sketches are written for a 600x600 canvas
# Launching Chromium and loading a page with the libraries must fit in this; it is the
# infrastructure's budget, separate from the sketch's timeout_s.
SETUP_BUDGET_S = 30.0
ORIGIN = "http://paint.invalid"  # .invalid never resolves: nothing here can leak to a real host
SKETCH_PATH = "/sketch.js"
SHADOWS_PATH = "/shadows.js"
PAGE_DIR = Path(__file__).resolve().parent / "page"
REPO_ROOT = Path(__file__).resolve().parents[2]

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

# Playwright 1.65's own --disable-features list. Chromium honours only the LAST
# --disable-features switch, so ours must repeat it; `playwright_disabled_features()`
# re-reads it from the installed package and falls back to this copy.
_PLAYWRIGHT_DISABLED_FEATURES_FALLBACK = (
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding",
    "ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin",
    "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
    "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
)
# Headless Chromium 156 preloads an omnibox WebUI page into every new context; turning
# these off roughly halves the CPU a render costs (FIELD-NOTES, re-measured in bench/).
OUR_DISABLED_FEATURES = (
    "WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup", "PreloadTopChromeWebUI",
    "Translate", "OptimizationGuideModelDownloading", "InterestFeedContentSuggestions",
)


class RenderUnavailable(Exception):
    """The renderer cannot render at all (infrastructure), never a verdict on a sketch."""


@dataclass(frozen=True)
class RenderError:
    message: str
    line: int | None = None  # 1-based line in the sketch source
    col: int | None = None  # 1-based column in the sketch source


@dataclass
class Render:
    png: bytes | None
    violations: list[str] = field(default_factory=list)
    errors: list[RenderError] = field(default_factory=list)
    brush_calls: dict[str, int] = field(default_factory=dict)
    bare_calls: dict[str, int] = field(default_factory=dict)
    paint_fraction: float = 0.0
    elapsed_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    size: int = REFERENCE_SIZE
    seed: int = 0
    # What the page tried and the sandbox refused (aborted requests, CSP reports).
    blocked: list[str] = field(default_factory=list)

    @property
    def rendered(self) -> bool:
        return self.png is not None

    @property
    def passed(self) -> bool:
        return self.png is not None and not self.violations

    def to_dict(self, include_png: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d["png"] = base64.b64encode(self.png).decode("ascii") if (include_png and self.png) else None
        d["passed"] = self.passed
        return d


def _default_chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"


def _default_asset_dir() -> Path:
    return Path(os.environ.get("PAINTAPP_NODE_MODULES") or (REPO_ROOT / "node_modules"))


@dataclass(frozen=True)
class RendererConfig:
    # None or a missing default path falls back to Playwright's own Chromium, if installed.
    chromium_path: str | None = field(default_factory=_default_chromium_path)
    timeout_s: float = 60.0  # the sketch's budget from hand-over (load, setup, frames, capture)
    max_pixels: int = 2048 * 2048  # per canvas / graphics / framebuffer, pixel density included
    prewarm: bool = True  # load the next page (p5 + p5.brush) right after each render
    recycle_after: int = 200  # renders per browser before a fresh launch (leaks, GPU state)
    asset_dir: Path = field(default_factory=_default_asset_dir)
    # "swiftshader" (CPU) | "hardware" (a real GPU through ANGLE/EGL); env RENDER_GPU_MODE
    gpu_mode: str = field(default_factory=lambda: os.environ.get("RENDER_GPU_MODE") or "swiftshader")
    extra_args: tuple[str, ...] = ()
    draw_frames: int = 1  # draw() frames after setup(), then noLoop()
    hard_grace_s: float = 10.0  # after a kill at the deadline, how long the worker may take to recover
    chromium_sandbox: bool = False  # Chromium's OS sandbox (not available as root)
    headless: bool = True
    # The module-scope stubs for every global outside the allowlist (sandbox.py). Off
    # only to test the layers beneath it (CSP, request interception, Chromium flags)
    # with sketches that can reach `fetch` and `document`; never off in the studio.
    shadow_globals: bool = True

    def __post_init__(self) -> None:
        if self.gpu_mode not in ("swiftshader", "hardware"):
            raise ValueError(f"gpu_mode must be 'swiftshader' or 'hardware', not {self.gpu_mode!r}")
        if self.draw_frames < 1:
            raise ValueError("draw_frames must be at least 1")
        if self.timeout_s <= 0 or self.max_pixels <= 0:
            raise ValueError("timeout_s and max_pixels must be positive")


def playwright_disabled_features() -> tuple[str, ...]:
    """Playwright's own --disable-features list, read from the installed driver bundle."""
    try:
        import playwright

        bundle = Path(playwright.__file__).parent / "driver" / "package" / "lib" / "coreBundle.js"
        text = bundle.read_text(encoding="utf-8", errors="replace")
        m = re.search(r"disabledFeatures = \[(.*?)\]\.filter", text, re.S)
        if m:
            body = re.sub(r"//[^\n]*", "", m.group(1))
            names = tuple(re.findall(r'"([A-Za-z0-9_]+)"', body))
            if names:
                return names
    except Exception:  # noqa: BLE001 - any surprise means: use the known list
        pass
    return _PLAYWRIGHT_DISABLED_FEATURES_FALLBACK


def chromium_args(config: RendererConfig, marker: str = "") -> list[str]:
    """The Chromium switches we add to Playwright's defaults (see bench/render.py)."""
    features = list(dict.fromkeys(playwright_disabled_features() + OUR_DISABLED_FEATURES))
    args = [f"--disable-features={','.join(features)}"]
    if config.gpu_mode == "swiftshader":
        # "Software only" compositing: WebGL still runs on SwiftShader, but nothing pretends
        # SwiftShader is a GPU. NEVER --use-angle=swiftshader without --disable-gpu: the
        # canvas becomes "hardware accelerated" and a 600x600 painting takes ~40 s, not ~3 s.
        # --in-process-gpu: SwiftShader runs in the browser process instead of a separate
        # GPU process; measured ~20% less CPU per trivial render (no command-buffer IPC),
        # same pixels. A GPU crash then takes the browser down: one render_error and a
        # relaunch, the same price the watchdog already pays after any timeout.
        args += ["--disable-gpu", "--in-process-gpu"]
    else:
        # A real GPU through ANGLE (EGL on NVIDIA/Mesa; use extra_args for Vulkan).
        args += ["--use-gl=angle", "--use-angle=gl-egl", "--ignore-gpu-blocklist",
                 "--enable-gpu-rasterization"]
    args += [
        # Black holes for anything that slips past interception (WebSockets, preconnect).
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",  # loopback too goes to the dead proxy
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        # A page that hoards memory dies at 1 GiB of JS heap (a "page crashed" verdict in
        # about a second) instead of growing to V8's default of ~4 GiB per renderer.
        "--js-flags=--max-old-space-size=1024",
        "--disable-renderer-accessibility",
        "--no-pings",
        "--deny-permission-prompts",
    ]
    if marker:
        # Unknown switches are ignored by Chromium; this one lets the watchdog find (and
        # kill) exactly this browser without touching Playwright from another thread.
        args.append(f"--paintapp-renderer={marker}")
    args += list(config.extra_args)
    return args


def density_for(size: int) -> float:
    """pixelDensity that renders the 600-unit canvas at exactly `size` pixels.

    p5 sizes the backing canvas as units * density, and the canvas truncates: 512/600*600
    is 511.99999999999994 in floating point, so nudge up until it lands on `size`.
    """
    d = size / REFERENCE_SIZE
    while REFERENCE_SIZE * d < size:
        d = math.nextafter(d, math.inf)
    return d


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


# --------------------------------------------------------------------------- browser side
class _Slot:
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


@dataclass
class _Job:
    kind: str  # "render" | "start" | "close"
    code: str = ""
    seed: int = 0
    size: int = REFERENCE_SIZE
    deadline: float = 0.0  # time.monotonic() by which the page must be ready (infrastructure)
    future: Future = field(default_factory=Future)
    abandoned: bool = False
    started: threading.Event = field(default_factory=threading.Event)  # the sketch was handed over
    run_deadline: float = 0.0  # set at hand-over: the sketch's own time budget ends here


class _Worker:
    """Owns Playwright, the browser and the pre-warmed page; lives in one thread.

    Playwright's sync objects belong to the thread that made them, so every Playwright
    call happens here. The caller's thread only waits (with a hard deadline) and, if a
    render wedges the browser, kills the browser process by pid — the pending Playwright
    call then fails and this thread recovers.
    """

    def __init__(self, config: RendererConfig, assets: dict[str, tuple[bytes, str]]):
        self.config = config
        self.assets = assets
        self.jobs: Queue[_Job] = Queue()
        self.marker = uuid.uuid4().hex
        self.pw: Any = None
        self.browser: Any = None
        self.browser_pid: int | None = None
        self.ready: _Slot | None = None
        self.used: _Slot | None = None  # last render's page, closed after the hand-over
        self.renders_in_browser = 0
        self.launch_failures = 0
        self.killed = threading.Event()  # set by the watchdog before it kills the browser
        # The page's global names less the allowlist, asked once of a page no sketch has
        # touched; every sketch module imports a stub for each (see sandbox.py).
        self.shadow_names: list[str] | None = None
        self.shadows_js: bytes = b""
        self.thread = threading.Thread(target=self._loop, name="paint-renderer", daemon=True)
        self.thread.start()

    # ---- thread loop
    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            if job.kind == "close":
                self._shutdown()
                job.future.set_result(None)
                return
            if self.killed.is_set():
                self._close_browser()  # the watchdog killed it; start clean
            if job.kind == "render" and (job.abandoned or time.monotonic() >= job.deadline):
                # Its caller has given up on it already (the queue was stuck behind a
                # wedged pre-warm); running it now would only delay the next one.
                job.future.set_result(None)
                continue
            try:
                if job.kind == "start":
                    self._ensure_browser()
                    if self.config.prewarm:
                        self._prewarm(time.monotonic() + SETUP_BUDGET_S)
                    result: Any = None
                else:
                    result = self._render(job)
                if not job.future.done():
                    job.future.set_result(result)
            except BaseException as exc:  # noqa: BLE001 - hand everything to the caller
                if not job.future.done():
                    job.future.set_exception(exc)
            if self.killed.is_set():
                self._close_browser()
            used, self.used = self.used, None
            if used is not None:
                _close_quietly(used)
            # Pre-warm the next page now, while the caller works on this result.
            if job.kind == "render" and self.config.prewarm and self.jobs.empty():
                try:
                    self._prewarm(time.monotonic() + SETUP_BUDGET_S)
                except BaseException:  # noqa: BLE001 - the next render opens its own page
                    log.debug("prewarm failed", exc_info=True)
                    self._discard_ready()

    # ---- browser lifecycle
    def _executable(self) -> str | None:
        path = self.config.chromium_path
        if path and Path(path).exists():
            return path
        if path and path != "/usr/bin/chromium":
            found = shutil.which(path)
            if found:
                return found
            raise RenderUnavailable(f"Chromium not found at {path!r}")
        return None  # Playwright's own browser, if one was installed

    def _ensure_browser(self) -> None:
        if self.browser is not None and self.browser.is_connected():
            if self.renders_in_browser < self.config.recycle_after:
                return
            log.info("recycling Chromium after %d renders", self.renders_in_browser)
        self._close_browser()
        if self.pw is None:
            from playwright.sync_api import sync_playwright

            try:
                self.pw = sync_playwright().start()
            except Exception as exc:  # noqa: BLE001
                raise RenderUnavailable(f"Playwright could not start: {exc}") from exc
        executable = self._executable()
        last: Exception | None = None
        while self.launch_failures < 3:
            try:
                self.browser = self.pw.chromium.launch(
                    executable_path=executable,
                    headless=self.config.headless,
                    chromium_sandbox=self.config.chromium_sandbox,
                    args=chromium_args(self.config, self.marker),
                    timeout=30_000,
                )
                self.launch_failures = 0
                self.renders_in_browser = 0
                self.browser_pid = _find_browser_pid(self.marker)
                self.killed.clear()
                return
            except Exception as exc:  # noqa: BLE001
                last = exc
                self.launch_failures += 1
                log.warning("Chromium launch failed (%d in a row): %s", self.launch_failures, exc)
                time.sleep(0.2 * self.launch_failures)
        self.launch_failures = 0  # a later render may try again from scratch
        raise RenderUnavailable(f"Chromium failed to launch 3 times in a row: {last}")

    def _close_browser(self) -> None:
        self._discard_ready()
        if self.browser is not None:
            try:
                self.browser.close()
            except Exception:  # noqa: BLE001 - already dead
                pass
        self.browser = None
        if self.browser_pid:
            _kill_tree(self.browser_pid, self.marker)  # stragglers of a wedged browser
        self.browser_pid = None

    def _shutdown(self) -> None:
        self._close_browser()
        if self.pw is not None:
            try:
                self.pw.stop()
            except Exception:  # noqa: BLE001
                pass
            self.pw = None

    # ---- pages
    def _discard_ready(self) -> None:
        for slot in (self.ready, self.used):
            if slot is not None:
                _close_quietly(slot)
        self.ready = self.used = None

    def _prewarm(self, deadline: float) -> None:
        if self.ready is None:
            self._ensure_browser()
            slot = self._open(deadline)
            slot.prewarmed = True
            self.ready = slot

    def _open(self, deadline: float) -> _Slot:
        """A fresh context with the harness and the libraries loaded."""
        from playwright.sync_api import Route

        slot = _Slot()
        t0 = time.perf_counter()
        context = self.browser.new_context(
            viewport={"width": REFERENCE_SIZE, "height": REFERENCE_SIZE},
            device_scale_factor=1,
            service_workers="block",
            accept_downloads=False,
            java_script_enabled=True,
        )
        slot.context = context
        assets = self.assets

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
                    route.fulfill(status=200, body=self.shadows_js, headers={
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
            page.goto(ORIGIN + "/", wait_until="load", timeout=_remaining_ms(deadline))
            if not page.evaluate("() => !!(window.__paint && window.__paint.libraries)"):
                raise RenderUnavailable("the render harness or the p5/p5.brush libraries failed to load")
            if self.shadow_names is None:
                names = page.evaluate("n => window.__paint.shadowNames(n)",
                                      sorted(SKETCH_API.allowed_globals))
                self.shadow_names = shadowable([str(n) for n in names or []])
                self.shadows_js = shadows_module(self.shadow_names).encode("utf-8")
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
            _close_quietly(slot)
            raise
        return slot

    # ---- one render
    def _render(self, job: _Job, retried: bool = False) -> Render:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        started = time.perf_counter()
        timings: dict[str, float] = {}
        slot: _Slot | None = None
        ok = False
        try:
            slot = self._take_slot(job.deadline)
            timings["context_ms"] = round(slot.opened_ms, 1)
            timings["load_ms"] = round(slot.loaded_ms, 1)
            timings["prewarmed"] = 1.0 if slot.prewarmed else 0.0
            t_run = time.perf_counter()
            shadows = (self.shadow_names or []) if self.config.shadow_globals else []
            slot.code = compose_module(job.code, shadows)
            self.renders_in_browser += 1
            # The sketch's clock starts now: launching Chromium and loading the libraries
            # are the infrastructure's time, not the sketch's.
            job.run_deadline = time.monotonic() + self.config.timeout_s
            job.started.set()
            handle = slot.page.wait_for_function(
                "o => window.__paint.render(o)",
                arg={
                    "seed": job.seed & 0xFFFFFFFF,
                    "density": density_for(job.size),
                    "maxPixels": self.config.max_pixels,
                    "maxGraphicsPixels": 4 * self.config.max_pixels,
                    "drawFrames": self.config.draw_frames,
                    "sketchUrl": SKETCH_PATH,
                },
                timeout=_remaining_ms(job.run_deadline),
            )
            handle.dispose()
            timings["run_ms"] = round((time.perf_counter() - t_run) * 1000, 1)
            t_read = time.perf_counter()
            reading = read_page(slot.cdp, slot.reader_world, self.config.max_pixels)
            timings["capture_ms"] = round((time.perf_counter() - t_read) * 1000, 1)
            result = self._verdict(job, reading, timings)
            ok = True
            status = (reading.result or {}).get("status")
            if status == "error" and reading.png is None and not webgl_available(slot.cdp, slot.reader_world):
                # WebGL itself is gone (the GPU process gave up after crashes): that is
                # the browser's fault, not the sketch's. A fresh browser, then one retry.
                log.warning("WebGL unavailable; relaunching Chromium")
                self._close_browser()
                if retried:
                    raise RenderUnavailable("WebGL is unavailable in a freshly launched Chromium")
                ok = False
                return self._retry(job)
        except RenderUnavailable:
            self._close_browser()
            raise
        except PlaywrightTimeout:
            result = self._failure(job, RENDER_TIMEOUT, self._too_long())
            # A timed-out sketch may have flooded the shared GPU process: next render
            # gets a fresh browser (~0.3 s) rather than inheriting its queue.
            self._close_browser()
        except PlaywrightError as exc:
            if not self.killed.is_set() and not retried and slot is not None and not slot.sketch_served:
                # The browser failed before the sketch was even fetched (it died between
                # renders, say): not the sketch's fault. Fresh browser, one retry.
                log.warning("render page failed before the sketch ran; retrying: %s", exc)
                self._close_browser()
                ok = False
                return self._retry(job)
            if self.killed.is_set():
                result = self._failure(job, RENDER_TIMEOUT, self._too_long())
            elif slot is not None and slot.crashed:
                result = self._failure(job, RENDER_ERROR, "The page crashed (out of memory?).")
            elif "navigat" in str(exc).lower() or "context was destroyed" in str(exc).lower():
                log.info("navigation during render: %s", exc)
                result = self._failure(job, RENDER_ERROR, "The sketch navigated away from the page.")
            elif self.browser is None or not self.browser.is_connected():
                result = self._failure(job, RENDER_ERROR, "Chromium died during the render.")
            else:
                first_line = (str(exc).splitlines() or [""])[0][:300]
                result = self._failure(job, RENDER_ERROR, f"The page failed: {first_line}")
            self._close_browser()
        finally:
            if slot is not None:
                if ok and self.config.prewarm:
                    # Closed right after the result is handed over, off the critical path.
                    self.used = slot
                else:
                    _close_quietly(slot)
        result.blocked = (slot.blocked if slot else []) + result.blocked
        timings["worker_ms"] = round((time.perf_counter() - started) * 1000, 1)
        result.timings = {**timings, **result.timings}
        return result

    def _take_slot(self, deadline: float) -> _Slot:
        """The pre-warmed page, or a new one. Nothing of the sketch has run yet, so a
        failure here is the browser's: relaunch once, then give up (infrastructure)."""
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self._ensure_browser()
        slot, self.ready = self.ready, None
        if slot is not None and not slot.crashed and not slot.page.is_closed():
            return slot
        if slot is not None:
            _close_quietly(slot)
        for attempt in (1, 2):
            try:
                return self._open(deadline)
            except PlaywrightTimeout:
                raise
            except PlaywrightError as exc:
                log.warning("opening a render page failed (attempt %d): %s", attempt, exc)
                self._close_browser()
                if attempt == 2:
                    raise RenderUnavailable(f"Chromium cannot open a page: {exc}") from exc
                self._ensure_browser()
        raise AssertionError("unreachable")

    def _retry(self, job: _Job) -> Render:
        """Render again in a fresh browser, with fresh budgets (the caller's watchdog
        follows job.run_deadline, so it waits for the retry)."""
        job.deadline = time.monotonic() + SETUP_BUDGET_S
        job.run_deadline = job.deadline + self.config.timeout_s
        return self._render(job, retried=True)

    def _too_long(self) -> str:
        return f"The render took longer than {self.config.timeout_s:g} s."

    def _failure(self, job: _Job, code: str, message: str) -> Render:
        return Render(
            png=None, violations=[code], errors=[RenderError(message)], size=job.size, seed=job.seed
        )

    def _verdict(self, job: _Job, reading: PageReading, timings: dict[str, float]) -> Render:
        """Decide the verdict from what was read: the harness's raw counts, the canvas p5
        made (still in the page, at the size it was made), and its pixels."""
        data = reading.result
        if data is None:
            # The harness always writes its result before the render promise resolves;
            # a page that resolved without one was tampered with by the sketch.
            return self._failure(job, RENDER_ERROR, "The render page returned no result.")
        errors = [
            RenderError(
                str(e.get("message", ""))[:600], _int_or_none(e.get("line")), _int_or_none(e.get("col"))
            )
            for e in (data.get("errors") or [])[:20]
            if isinstance(e, dict)
        ]
        denied = counts(data.get("denied"))
        violations = sorted({code_for_denied(name) for name in denied})
        png: bytes | None = None
        made_w = _int_or_none(data.get("canvasWidth")) or 0
        made_h = _int_or_none(data.get("canvasHeight")) or 0
        if reading.width * reading.height > self.config.max_pixels:
            violations.append(CANVAS_TOO_LARGE)
        elif made_w and (not reading.connected or (reading.width, reading.height) != (made_w, made_h)):
            # The canvas p5 made is gone from the page, or not the size it was made at.
            violations.append(CANVAS_SWAPPED)
        elif reading.png is not None and png_size(reading.png) == (reading.width, reading.height):
            png = reading.png
        elif reading.png is not None:
            violations.append(CANVAS_SWAPPED)
        if png is None and not errors and not violations:
            errors.append(RenderError(reading.error or "The sketch produced no canvas."))
        if errors or data.get("status") == "error":
            violations.append(RENDER_ERROR)
        fraction = 0.0
        if png is not None:
            t = time.perf_counter()
            fraction = paint_fraction(png)
            timings["measure_ms"] = round((time.perf_counter() - t) * 1000, 1)
            if fraction < BLANK_THRESHOLD:
                violations.append(BLANK_CANVAS)
        raw_marks = data.get("marks") if isinstance(data.get("marks"), dict) else {}
        marks = {k: float(v) for k, v in raw_marks.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)}

        def span(a: str, b: str) -> float | None:
            return round(marks[b] - marks[a], 1) if a in marks and b in marks else None

        # Page-clock spans: draw = sketch load + setup + frames; flush = GPU finish.
        for key, a, b in (
            ("draw_ms", "run", "done"), ("sketch_ms", "run", "sketchLoaded"),
            ("setup_ms", "setupStart", "setupEnd"), ("frames_ms", "setupEnd", "done"),
            ("gpu_flush_ms", "done", "flushed"),
        ):
            value = span(a, b)
            if value is not None:
                timings[key] = value
        blocked = [f"csp {c}"[:200] for c in (data.get("csp") or [])[:50] if isinstance(c, str)]
        return Render(
            png=png,
            violations=list(dict.fromkeys(violations)),
            errors=errors,
            brush_calls=counts(data.get("brush")),
            bare_calls=denied,
            paint_fraction=round(fraction, 6),
            size=job.size,
            seed=job.seed,
            blocked=blocked,
        )


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _remaining_ms(deadline: float) -> float:
    # A little past the deadline: the watchdog (which kills the browser at the deadline)
    # is the authority; Playwright's timeout is only a backstop.
    return max(1.0, (deadline - time.monotonic()) * 1000 + 2000)


def _close_quietly(slot: _Slot) -> None:
    try:
        if slot.context is not None:
            slot.context.close()
    except Exception:  # noqa: BLE001 - the browser may already be gone
        pass


def _find_browser_pid(marker: str) -> int | None:
    """The pid of the browser process launched with our marker switch (Linux /proc)."""
    needle = f"--paintapp-renderer={marker}".encode()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmd and b"--type=" not in cmd:
            return int(entry.name)
    return None


def _kill_tree(pid: int, marker: str) -> None:
    """SIGKILL the browser and every process below it (renderers, GPU, zygotes).

    The root must still carry our marker switch, so a recycled pid is never touched.
    """
    try:
        if f"--paintapp-renderer={marker}".encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
    except OSError:
        return
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    todo, tree = [pid], []
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


# --------------------------------------------------------------------------- public API
class Renderer:
    """Render sketches to PNG + verdict in a warm, sandboxed Chromium.

    Not for concurrent use from several threads at once (calls are serialised); use one
    renderer per process and several processes for parallelism.
    """

    def __init__(self, config: RendererConfig | None = None):
        self.config = config or RendererConfig()
        self._assets: dict[str, tuple[bytes, str]] | None = None
        self._worker: _Worker | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.renders = 0
        self.timeouts = 0

    # ---- lifecycle
    def start(self) -> Renderer:
        """Launch Chromium (and pre-warm a page) now instead of on the first render."""
        with self._lock:
            self._submit(_Job("start", deadline=time.monotonic() + SETUP_BUDGET_S))
        return self

    def close(self) -> None:
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
            if worker is None:
                return
            job = _Job("close")
            worker.jobs.put(job)
            try:
                job.future.result(timeout=15)
            except (FutureTimeout, Exception):  # noqa: BLE001
                if worker.browser_pid:
                    _kill_tree(worker.browser_pid, worker.marker)

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; close() explicitly
        try:
            if self._worker is not None and self._worker.thread.is_alive() and self._pid_ok():
                self.close()
        except Exception:  # noqa: BLE001
            pass

    def _pid_ok(self) -> bool:
        return getattr(self, "_pid", os.getpid()) == os.getpid()

    # ---- rendering
    def render(self, code: str, *, seed: int = 0, size: int = REFERENCE_SIZE) -> Render:
        """Run one sketch; a bad sketch is a verdict, only infrastructure raises."""
        if not isinstance(size, int) or not 16 <= size <= 4096:
            raise ValueError("size must be an int between 16 and 4096")
        if density_for(size) ** 2 * REFERENCE_SIZE**2 > self.config.max_pixels * 1.0001:
            raise ValueError(f"size {size} exceeds max_pixels={self.config.max_pixels}")
        with self._lock:
            if self._closed:
                raise RenderUnavailable("the renderer is closed")
            t0 = time.perf_counter()
            job = _Job(
                "render", code=code, seed=int(seed), size=size, deadline=time.monotonic() + SETUP_BUDGET_S
            )
            result = self._submit(job)
            result.elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
            self.renders += 1
            if RENDER_TIMEOUT in result.violations:
                self.timeouts += 1
            return result

    def _submit(self, job: _Job) -> Any:
        if self._assets is None:
            self._assets = load_assets(self.config.asset_dir)
        if self._worker is None:
            self._pid = os.getpid()
            self._worker = _Worker(self.config, self._assets)
        worker = self._worker
        t0 = time.perf_counter()
        job.future.add_done_callback(lambda _f: job.started.set())
        worker.jobs.put(job)
        if job.kind == "render":
            # Phase 1 (infrastructure): a browser and a page with the libraries, within
            # the setup budget. Phase 2 (the sketch): timeout_s from the hand-over.
            if not job.started.wait(max(0.0, job.deadline - time.monotonic())):
                self._kill(worker, job)
                raise RenderUnavailable(f"Chromium had no page ready within {SETUP_BUDGET_S:g} s")
            if job.future.done():
                return job.future.result()
        while True:
            deadline = job.run_deadline if job.kind == "render" else job.deadline
            try:
                return job.future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                # A retry (fresh browser after an infrastructure failure) restarts the
                # sketch's clock; otherwise its time is up.
                if job.kind == "render" and job.run_deadline > time.monotonic():
                    continue
                break
        result = self._kill(worker, job)
        if job.kind == "render" and isinstance(result, Render) and result.png is not None:
            return result  # it finished in the instant before the kill
        if job.kind != "render":
            raise RenderUnavailable("Chromium did not start in time")
        return Render(
            png=None,
            violations=[RENDER_TIMEOUT],
            errors=[RenderError(f"The render took longer than {self.config.timeout_s:g} s.")],
            elapsed_ms=round((time.perf_counter() - t0) * 1000, 1),
            timings={"killed": 1.0},
            size=job.size,
            seed=job.seed,
        )

    def _kill(self, worker: _Worker, job: _Job) -> Any:
        """The watchdog. Playwright's own timeouts cannot help: on timeout it waits for the
        hung page to acknowledge, forever. So the browser is SIGKILLed by pid (with its
        renderer and GPU processes, which also drops any GPU work the sketch queued); the
        pending Playwright call fails at once and the worker relaunches for the next render.
        Returns whatever the worker made of the job, if it says so in time."""
        job.abandoned = True
        worker.killed.set()
        pid = worker.browser_pid or _find_browser_pid(worker.marker)
        if pid:
            _kill_tree(pid, worker.marker)
        try:
            return job.future.result(timeout=self.config.hard_grace_s)
        except FutureTimeout:
            # The worker thread itself is stuck (a hung driver): leave it behind.
            log.error("renderer worker did not recover after a kill; replacing it")
            if self._worker is worker:
                self._worker = None
        except Exception:  # noqa: BLE001 - whatever the worker made of it
            pass
        return None


_renderer: Renderer | None = None
_renderer_pid: int | None = None
_renderer_lock = threading.Lock()


def get_renderer(config: RendererConfig | None = None) -> Renderer:
    """The process's warm renderer, created lazily.

    Fork-safe: a forked child (Celery prefork) never reuses its parent's browser — the
    pid changes, so it builds its own on first use. A different `config` replaces it.
    """
    global _renderer, _renderer_pid
    with _renderer_lock:
        pid = os.getpid()
        if _renderer is not None and _renderer_pid != pid:
            _renderer = None  # the parent's; its thread and browser are not ours to touch
        if _renderer is not None and config is not None and config != _renderer.config:
            _renderer.close()
            _renderer = None
        if _renderer is not None and _renderer._closed:
            _renderer = None
        if _renderer is None:
            _renderer = Renderer(config)
            _renderer_pid = pid
        return _renderer


def close_renderer() -> None:
    """Close this process's warm renderer, if it has one (a worker process shutting down)."""
    global _renderer
    with _renderer_lock:
        if _renderer is not None and _renderer_pid == os.getpid():
            _renderer.close()
        _renderer = None


def _forget_after_fork() -> None:
    global _renderer, _renderer_pid, _renderer_lock
    _renderer = None
    _renderer_pid = None
    _renderer_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
