"""The renderer's worker thread: it owns Playwright, the browser and the pool of
pre-warmed pages, and runs each render job.

Playwright's sync objects belong to the thread that made them, so every Playwright call
happens here; renderer.py's caller thread only queues jobs and keeps the watchdog.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from queue import Queue
from typing import Any

from paintenv.browser_process import (
    browser_alive,
    driver_of,
    find_browser_pid,
    kill_browser_tree,
    kill_driver,
)
from paintenv.coverage import instrument
from paintenv.render_config import (
    REFERENCE_SIZE,
    SETUP_BUDGET_S,
    RendererConfig,
    chromium_args,
    density_for,
)
from paintenv.render_page import (
    SKETCH_PATH,
    PageSlot,
    ShadowStubs,
    close_page,
    open_page,
)
from paintenv.render_result import Render, RenderUnavailable, failed_render, render_from_reading
from paintenv.sandbox import RENDER_ERROR, RENDER_TIMEOUT, compose_module, read_page, webgl_available

__all__ = ["RenderJob", "RenderWorker"]

log = logging.getLogger(__name__)


@dataclass
class RenderJob:
    kind: str  # "render" | "start" | "close"
    code: str = ""
    seed: int = 0
    size: int = REFERENCE_SIZE
    deadline: float = 0.0  # time.monotonic() by which the page must be ready (infrastructure)
    future: Future = field(default_factory=Future)
    abandoned: bool = False
    started: threading.Event = field(default_factory=threading.Event)  # the sketch was handed over
    run_deadline: float = 0.0  # set at hand-over: the sketch's own time budget ends here
    # The determinism check's second render: on a page opened for it (not the pre-warmed
    # one) whose heap the harness churns first, so its history differs from the first's.
    twin: bool = False


class RenderWorker:
    """Owns Playwright, the browser and the pre-warmed page; lives in one thread.

    Playwright's sync objects belong to the thread that made them, so every Playwright
    call happens here. The caller's thread only waits (with a hard deadline) and, if a
    render wedges the browser, kills the browser process by pid — the pending Playwright
    call then fails and this thread recovers.
    """

    def __init__(self, config: RendererConfig, assets: dict[str, tuple[bytes, str]]):
        self.config = config
        self.assets = assets
        self.jobs: Queue[RenderJob] = Queue()
        self.marker = uuid.uuid4().hex
        self.pw: Any = None
        self.browser: Any = None
        self.browser_pid: int | None = None
        self.driver: Any = None  # Playwright's driver process (psutil), found with the first browser
        self.ready: PageSlot | None = None
        self.used: PageSlot | None = None  # last render's page, closed after the hand-over
        self.renders_in_browser = 0
        self.launch_failures = 0
        self.killed = threading.Event()  # set by the watchdog before it kills the browser
        self.stubs = ShadowStubs()  # filled in by the first page
        self.thread = threading.Thread(target=self._loop, name="paint-renderer", daemon=True)
        self.thread.start()

    # ---- from the caller's thread
    def browser_dead(self) -> bool:
        """Whether the browser this worker last launched has died and the worker has not
        moved on from it (it resets browser_pid when it closes or relaunches)."""
        pid = self.browser_pid
        return pid is not None and not browser_alive(pid, self.marker)

    def abandon(self) -> None:
        """Give up on this worker: kill its Playwright driver, so the Playwright call its
        thread is stuck in fails at once, and ask the thread to end. (A browser that dies
        during `new_page()` leaves that call waiting forever: it has no timeout.)"""
        if self.driver is not None:
            kill_driver(self.driver)  # the browser runs below it
        elif self.browser_pid:
            kill_browser_tree(self.browser_pid, self.marker)
        self.jobs.put(RenderJob("close"))

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
                close_page(used)
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
                self.browser_pid = find_browser_pid(self.marker)
                if self.driver is None and self.browser_pid:
                    self.driver = driver_of(self.browser_pid)
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
            kill_browser_tree(self.browser_pid, self.marker)  # stragglers of a wedged browser
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
                close_page(slot)
        self.ready = self.used = None

    def _prewarm(self, deadline: float) -> None:
        if self.ready is None:
            self._ensure_browser()
            slot = open_page(self.browser, self.assets, self.stubs, deadline)
            slot.prewarmed = True
            self.ready = slot

    # ---- one render
    def _render(self, job: RenderJob, retried: bool = False) -> Render:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        started = time.perf_counter()
        timings: dict[str, float] = {}
        slot: PageSlot | None = None
        ok = False
        try:
            slot = self._take_slot(job.deadline, fresh=job.twin)
            timings["context_ms"] = round(slot.opened_ms, 1)
            timings["load_ms"] = round(slot.loaded_ms, 1)
            timings["prewarmed"] = 1.0 if slot.prewarmed else 0.0
            t_cov = time.perf_counter()
            # which of the sketch's code runs: the length part counts only that
            marked = instrument(job.code)
            timings["coverage_ms"] = round((time.perf_counter() - t_cov) * 1000, 1)
            t_run = time.perf_counter()
            shadows = (self.stubs.names or []) if self.config.shadow_globals else []
            slot.code = compose_module(marked.code if marked else job.code, shadows, marked.name if marked else None)
            self.renders_in_browser += 1
            # The sketch's clock starts now: launching Chromium and loading the libraries
            # are the infrastructure's time, not the sketch's.
            job.run_deadline = time.monotonic() + self.config.timeout_s
            job.started.set()
            # evaluate() awaits the render's promise. wait_for_function would do the same after
            # compiling Playwright's 339 KB injected script into every page (~0.02 CPU s a
            # render, measured 2026-12-06), and its timeout is no use here: the watchdog kills
            # the browser at job.run_deadline, which fails this call at once.
            slot.page.evaluate("o => window.__paint.render(o)", {
                "seed": job.seed & 0xFFFFFFFF,
                "density": density_for(job.size),
                "maxPixels": self.config.max_pixels,
                "maxGraphicsPixels": 4 * self.config.max_pixels,
                "drawFrames": self.config.draw_frames,
                "sketchUrl": SKETCH_PATH,
                "churn": job.twin,
                "markers": marked.markers if marked else 0,
            })
            timings["run_ms"] = round((time.perf_counter() - t_run) * 1000, 1)
            t_read = time.perf_counter()
            reading = read_page(slot.cdp, slot.reader_world, self.config.max_pixels)
            timings["capture_ms"] = round((time.perf_counter() - t_read) * 1000, 1)
            result = render_from_reading(reading, size=job.size, seed=job.seed,
                                         max_pixels=self.config.max_pixels, timings=timings)
            if marked is not None:
                result.executed = marked.executed((reading.result or {}).get("ran"))
                result.errors = [replace(e, col=marked.original_column(e.line, e.col)) for e in result.errors]
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
                    close_page(slot)
        result.blocked = (slot.blocked if slot else []) + result.blocked
        timings["worker_ms"] = round((time.perf_counter() - started) * 1000, 1)
        result.timings = {**timings, **result.timings}
        return result

    def _take_slot(self, deadline: float, fresh: bool = False) -> PageSlot:
        """The pre-warmed page (kept for the next render when `fresh`), or a new one. Nothing
        of the sketch has run yet, so a failure here is the browser's: relaunch once, then
        give up (infrastructure)."""
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self._ensure_browser()
        slot, self.ready = (None, self.ready) if fresh else (self.ready, None)
        if slot is not None and not slot.crashed and not slot.page.is_closed():
            return slot
        if slot is not None:
            close_page(slot)
        for attempt in (1, 2):
            try:
                return open_page(self.browser, self.assets, self.stubs, deadline)
            except PlaywrightTimeout:
                raise
            except PlaywrightError as exc:
                log.warning("opening a render page failed (attempt %d): %s", attempt, exc)
                self._close_browser()
                if attempt == 2:
                    raise RenderUnavailable(f"Chromium cannot open a page: {exc}") from exc
                self._ensure_browser()
        raise AssertionError("unreachable")

    def _retry(self, job: RenderJob) -> Render:
        """Render again in a fresh browser, with fresh budgets (the caller's watchdog
        follows job.run_deadline, so it waits for the retry)."""
        job.deadline = time.monotonic() + SETUP_BUDGET_S
        job.run_deadline = job.deadline + self.config.timeout_s
        return self._render(job, retried=True)

    def _too_long(self) -> str:
        return f"The render took longer than {self.config.timeout_s:g} s."

    def _failure(self, job: RenderJob, code: str, message: str) -> Render:
        return failed_render(code, message, size=job.size, seed=job.seed)
