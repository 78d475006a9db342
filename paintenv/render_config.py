"""What a renderer is configured with, and the Chromium switches that configuration means.

`size` (the pixel width of a render) maps to a pixel density over the sketch's 600-unit
canvas (`density_for`); see renderer.py for how a render runs.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MARKER_SWITCH",
    "OUR_DISABLED_FEATURES",
    "REFERENCE_SIZE",
    "SETUP_BUDGET_S",
    "RendererConfig",
    "chromium_args",
    "density_for",
    "playwright_disabled_features",
]

REFERENCE_SIZE = 600  # sketches are written for a 600x600 canvas
# Launching Chromium and loading a page with the libraries must fit in this; it is the
# infrastructure's budget, separate from the sketch's timeout_s.
SETUP_BUDGET_S = 30.0
REPO_ROOT = Path(__file__).resolve().parents[1]
# Unknown switches are ignored by Chromium; this one lets the watchdog find (and kill)
# exactly this browser without touching Playwright from another thread.
MARKER_SWITCH = "--paintapp-renderer="

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
# these off roughly halves the CPU a render costs (measured, and re-measured by bench/render.py).
# It also starts a spare renderer process for each new context, which no page uses: each render
# has a context of its own, closed after it. Without it a render starts one renderer process, not
# two (42 for 20 renders before, 21 after; ~20 ms less CPU a render, 2026-12-05).
OUR_DISABLED_FEATURES = (
    "WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup", "PreloadTopChromeWebUI",
    "Translate", "OptimizationGuideModelDownloading", "InterestFeedContentSuggestions",
    "SpareRendererForSitePerProcess",
)


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


def disabled_features_switch() -> str:
    """Playwright's --disable-features list and ours in the one switch Chromium honours."""
    return f"--disable-features={','.join(dict.fromkeys(playwright_disabled_features() + OUR_DISABLED_FEATURES))}"


def chromium_args(config: RendererConfig, marker: str = "") -> list[str]:
    """The Chromium switches we add to Playwright's defaults (see bench/render.py)."""
    args = [disabled_features_switch()]
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
        # --single-threaded pins the stack budget: with V8's background compilers a
        # function's frames change size whenever its optimised code happens to land, so
        # `try { return probe(n + 1) } catch { return n }` returned 15,557, 15,017, 15,659
        # and 9,613 on four renders of one sketch and seed (a layout from nothing but
        # timing); on one thread tier-ups happen at fixed points and it returns the same
        # depth every render, in fresh browsers too. Measured cost: none (2.49 s against
        # 2.57 s a 600 px painting; SwiftShader, not V8, takes the CPU).
        "--js-flags=--max-old-space-size=1024 --single-threaded",
        "--disable-renderer-accessibility",
        "--no-pings",
        "--deny-permission-prompts",
    ]
    if marker:
        args.append(MARKER_SWITCH + marker)
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
