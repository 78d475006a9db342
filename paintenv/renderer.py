"""Sandboxed p5.js + p5.brush renderer: sketch source in, PNG and a verdict out.

One warm headless Chromium per renderer (and one renderer per process, see
`get_renderer`), driven with Playwright's sync API from a dedicated thread, a fresh
browser context per render. The page (paintenv/page/) and the libraries are served
from memory by request interception; nothing else is reachable (see "Sandbox" below).

The parts: render_config.py (RendererConfig, Chromium's switches, size -> density),
render_worker.py (the thread that owns Playwright, the browser and the pre-warmed pages),
render_page.py (one sandboxed page), render_result.py (Render, and the page's reading ->
verdict), browser_process.py (finding and killing the browser's process tree), and this
module: the public Renderer with its watchdog, and one warm renderer per process.

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
caller's thread SIGKILLs the browser's process tree (found by a marker switch, see
browser_process.py), which stops any loop and drops any queued GPU work, and returns
render_timeout; the next render gets a fresh browser (~0.3 s). A page that runs out of memory (V8 heap capped at 1 GiB) crashes
alone: a render_error. A browser that dies before the sketch is served is replaced and
the render retried once, so a dead connection never turns into a verdict on a sketch. A
browser that dies during one of Playwright's calls without a timeout (new_page()) leaves
that call waiting forever: the caller sees the dead browser, and after WEDGED_AFTER_S kills
the worker's Playwright driver (which fails the call), and renders in a new worker.

Sandbox, in layers (each one alone blocks the usual channels; README "Sandbox layers"):
  * The allowlist at runtime (sandbox.py, page/harness.js): the sketch is a function body
    in a module that imports a counting stub for every global outside sketch_api.json;
    the allowed p5 functions pass plain values only; `brush` is a frozen sandbox;
    built-ins are frozen.
  * The verdict comes from raw counts (a string the frozen window.__paint holds) and the
    canvas element p5 made, copied from an isolated world that shares no JavaScript
    object with the sketch.
  * Content-Security-Policy on the page (render_page.py): default-src 'none', scripts
    and images only from the harness origin (no data:, no eval), connect-src/worker-src/
    frame-src 'none'.
  * Request interception on the whole context: only the harness's own files are
    answered (from memory, each before the sketch only); other requests are aborted and
    navigations (popups, location changes, frames) get a 204 so the page stays put.
  * Chromium flags (render_config.py): every host name resolves to nothing and every
    connection, loopback included, goes to a dead proxy (what interception cannot see,
    e.g. WebSockets); WebRTC may not send UDP outside that proxy.
  * The page is an http origin with no file access; nothing is read from disk per render.
Chromium's own OS sandbox is off (`--no-sandbox`) because workers usually run as root in
containers; set `chromium_sandbox=True` where the user namespace sandbox is available.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from paintenv.browser_process import find_browser_pid, kill_browser_tree
from paintenv.render_config import REFERENCE_SIZE, SETUP_BUDGET_S, RendererConfig, density_for
from paintenv.render_page import load_assets
from paintenv.render_result import Render, RenderError, RenderUnavailable
from paintenv.render_worker import RenderJob, RenderWorker
from paintenv.sandbox import RENDER_TIMEOUT

__all__ = ["Renderer", "close_renderer", "get_renderer"]

log = logging.getLogger(__name__)

HAND_OVER_POLL_S = 0.25
# A live worker notices its browser died (a dead connection, a closed page) and relaunches
# within a second or so, a few under heavy load; one still on the dead browser after this
# is stuck in a Playwright call without a timeout (measured: a browser killed during
# new_page() leaves that call waiting forever).
WEDGED_AFTER_S = 5.0


class _WorkerWedged(Exception):
    """The worker was stuck on a dead browser before the sketch ran; it has been replaced."""


class Renderer:
    """Render sketches to PNG + verdict in a warm, sandboxed Chromium.

    Not for concurrent use from several threads at once (calls are serialised); use one
    renderer per process and several processes for parallelism.
    """

    def __init__(self, config: RendererConfig | None = None):
        self.config = config or RendererConfig()
        self._assets: dict[str, tuple[bytes, str]] | None = None
        self._worker: RenderWorker | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.renders = 0
        self.timeouts = 0

    # ---- lifecycle
    def start(self) -> Renderer:
        """Launch Chromium (and pre-warm a page) now instead of on the first render."""
        with self._lock:
            self._submit(RenderJob("start", deadline=time.monotonic() + SETUP_BUDGET_S))
        return self

    def close(self) -> None:
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
            if worker is None:
                return
            job = RenderJob("close")
            worker.jobs.put(job)
            try:
                job.future.result(timeout=15)
            except (FutureTimeout, Exception):  # noqa: BLE001
                if worker.browser_pid:
                    kill_browser_tree(worker.browser_pid, worker.marker)

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
    def render(self, code: str, *, seed: int = 0, size: int = REFERENCE_SIZE, twin: bool = False) -> Render:
        """Run one sketch; a bad sketch is a verdict, only infrastructure raises. `twin`: the
        determinism check's second render, on a page of its own with a churned heap."""
        if not isinstance(size, int) or not 16 <= size <= 4096:
            raise ValueError("size must be an int between 16 and 4096")
        if density_for(size) ** 2 * REFERENCE_SIZE**2 > self.config.max_pixels * 1.0001:
            raise ValueError(f"size {size} exceeds max_pixels={self.config.max_pixels}")
        with self._lock:
            if self._closed:
                raise RenderUnavailable("the renderer is closed")
            t0 = time.perf_counter()
            for attempt in (1, 2):
                job = RenderJob(
                    "render", code=code, seed=int(seed), size=size, deadline=time.monotonic() + SETUP_BUDGET_S,
                    twin=twin,
                )
                try:
                    result = self._submit(job)
                    break
                except _WorkerWedged as exc:
                    # Its browser died under it and it stopped answering (replaced already): the
                    # sketch has not run, so it gets a fresh worker and fresh setup budget, once.
                    if attempt == 2:
                        raise RenderUnavailable("Chromium died under two renderer workers in a row") from exc
            result.elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
            self.renders += 1
            if RENDER_TIMEOUT in result.violations:
                self.timeouts += 1
            return result

    def _submit(self, job: RenderJob) -> Any:
        if self._assets is None:
            self._assets = load_assets(self.config.asset_dir)
        if self._worker is None:
            self._pid = os.getpid()
            self._worker = RenderWorker(self.config, self._assets)
        worker = self._worker
        try:
            return self._await(worker, job)
        except BaseException:
            # The caller gave up while waiting (a Celery revoke that terminates the task raises
            # SystemExit here, a soft time limit SoftTimeLimitExceeded): kill the browser now,
            # or the sketch keeps a core busy and close() waits out its grace for it.
            if not (job.abandoned or job.future.done()):
                self._kill(worker, job)
            raise

    def _await(self, worker: RenderWorker, job: RenderJob) -> Any:
        t0 = time.perf_counter()
        job.future.add_done_callback(lambda _f: job.started.set())
        worker.jobs.put(job)
        if job.kind == "render":
            # Phase 1 (infrastructure): a browser and a page with the libraries, within
            # the setup budget. Phase 2 (the sketch): timeout_s from the hand-over.
            if not self._wait_for_hand_over(worker, job):
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

    def _wait_for_hand_over(self, worker: RenderWorker, job: RenderJob) -> bool:
        """Wait until the worker hands the sketch over (True) or the setup budget ends (False).
        A worker whose browser has been dead for WEDGED_AFTER_S without it moving on is stuck
        in a Playwright call that will never return: it is replaced and _WorkerWedged raised."""
        dead_since: float | None = None
        while not job.started.wait(min(HAND_OVER_POLL_S, max(0.0, job.deadline - time.monotonic()))):
            now = time.monotonic()
            if now >= job.deadline:
                return False
            if not worker.browser_dead():
                dead_since = None
            elif dead_since is None:
                dead_since = now
            elif now - dead_since >= WEDGED_AFTER_S:
                log.error("the renderer's browser died %.0f s ago and its worker is stuck; replacing it",
                          now - dead_since)
                job.abandoned = True
                self._replace(worker)
                raise _WorkerWedged
        return True

    def _replace(self, worker: RenderWorker) -> None:
        """The next render gets a new worker; this one's thread is unblocked and ends."""
        if self._worker is worker:
            self._worker = None
        worker.abandon()

    def _kill(self, worker: RenderWorker, job: RenderJob) -> Any:
        """The watchdog. Playwright's own timeouts cannot help: on timeout it waits for the
        hung page to acknowledge, forever. So the browser is SIGKILLed by pid (with its
        renderer and GPU processes, which also drops any GPU work the sketch queued); the
        pending Playwright call fails at once and the worker relaunches for the next render.
        Returns whatever the worker made of the job, if it says so in time."""
        job.abandoned = True
        worker.killed.set()
        pid = worker.browser_pid or find_browser_pid(worker.marker)
        if pid:
            kill_browser_tree(pid, worker.marker)
        try:
            return job.future.result(timeout=self.config.hard_grace_s)
        except FutureTimeout:
            # The worker thread itself is stuck (a hung driver): replace it.
            log.error("renderer worker did not recover after a kill; replacing it")
            self._replace(worker)
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
