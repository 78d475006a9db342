"""Processes in tests: whether they are gone (the renderer's process handling), and free ports
for the servers tests start."""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import psutil


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def still_running(processes: list[psutil.Process], timeout: float = 5.0) -> list[psutil.Process]:
    """Those of `processes` still running after up to `timeout` seconds. A zombie counts as
    gone: it was killed, and only its parent (often not us) has yet to reap it."""
    _gone, alive = psutil.wait_procs(processes, timeout=timeout)
    running = []
    for process in alive:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
        except psutil.NoSuchProcess:
            pass
    return running


def stop_group(process: subprocess.Popen | None, *, grace_s: float = 20.0) -> None:
    """SIGTERM a process started in a session of its own, and its whole group; SIGKILL what is
    left after `grace_s`."""
    stop_groups([process], grace_s=grace_s)


def stop_groups(processes: list[subprocess.Popen | None], *, grace_s: float = 20.0,
                before_term: signal.Signals | None = None) -> None:
    """`stop_group` for several at once: each group is sent SIGTERM (after `before_term`, e.g.
    SIGCONT for a stopped one) before any is waited for, so they shut down side by side (a
    Celery worker takes ~2 s) and the grace period is shared."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        if before_term is not None:
            os.killpg(process.pid, before_term)
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def run_coroutine(coroutine):
    """asyncio.run in a thread of its own: a session's sync Playwright (the `chromium` fixture)
    keeps an event loop running in the test's thread, where asyncio.run is refused."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
