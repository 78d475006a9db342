"""Checking that processes are gone, for the tests of the renderer's process handling."""
from __future__ import annotations

import psutil


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
