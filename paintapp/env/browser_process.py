"""The renderer's Chromium as operating-system processes: find it, kill its whole tree.

Each renderer launches Chromium with a marker switch of its own (MARKER_SWITCH + a
random hex). The watchdog uses it to find the browser without asking Playwright (whose
objects belong to another thread), and to be sure a pid still names our browser before
SIGKILLing it and every process below it (renderers, GPU, zygotes).
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

from paintapp.env.render_config import MARKER_SWITCH

__all__ = ["find_browser_pid", "kill_browser_tree"]


def find_browser_pid(marker: str) -> int | None:
    """The pid of the browser process launched with our marker switch (Linux /proc)."""
    needle = (MARKER_SWITCH + marker).encode()
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


def kill_browser_tree(pid: int, marker: str) -> None:
    """SIGKILL the browser and every process below it (renderers, GPU, zygotes).

    The root must still carry our marker switch, so a recycled pid is never touched.
    """
    try:
        if (MARKER_SWITCH + marker).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
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
