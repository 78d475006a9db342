"""The renderer's Chromium as operating-system processes: find it, kill its whole tree.

Each renderer launches Chromium with a marker switch of its own (MARKER_SWITCH + a
random hex). The watchdog uses it to find the browser without asking Playwright (whose
objects belong to another thread), and to be sure a pid still names our browser before
SIGKILLing it and every process below it (renderers, GPU, zygotes).
"""
from __future__ import annotations

import os

import psutil

from paintenv.render_config import MARKER_SWITCH

__all__ = ["browser_alive", "driver_of", "find_browser_pid", "kill_browser_tree", "kill_driver"]


def _command_line(process: psutil.Process) -> str:
    """The process's arguments joined with NULs, as /proc shows them ('' when unreadable)."""
    try:
        return "\0".join(process.cmdline())
    except psutil.Error:
        return ""


def _is_our_browser(command_line: str, marker: str) -> bool:
    # Chromium's children carry --type=renderer/gpu-process/zygote; the browser does not.
    return MARKER_SWITCH + marker in command_line and "--type=" not in command_line


def find_browser_pid(marker: str) -> int | None:
    """The pid of the browser process launched with our marker switch."""
    for process in psutil.process_iter():
        if _is_our_browser(_command_line(process), marker):
            return process.pid
    return None


def kill_browser_tree(pid: int, marker: str) -> None:
    """SIGKILL the browser and every process below it (renderers, GPU, zygotes).

    The root must still carry our marker switch, so a recycled pid is never touched; psutil
    also refuses to signal a process whose pid was reused after it was looked up.
    """
    try:
        root = psutil.Process(pid)
        if MARKER_SWITCH + marker not in _command_line(root):
            return
    except psutil.Error:  # already gone
        return
    _kill_tree(root)


def browser_alive(pid: int, marker: str) -> bool:
    """Whether `pid` is still our browser, running (a zombie left for its parent to reap is dead)."""
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and _is_our_browser(_command_line(process), marker)
    except psutil.Error:
        return False


def driver_of(browser_pid: int) -> psutil.Process | None:
    """The process below ours that the browser runs under: Playwright's driver (node), which
    holds the connection every Playwright call of ours waits on."""
    me = os.getpid()
    try:
        process: psutil.Process | None = psutil.Process(browser_pid)
        while process is not None and process.ppid() != me:
            process = process.parent()
        return process
    except psutil.Error:
        return None


def kill_driver(driver: psutil.Process) -> None:
    """SIGKILL Playwright's driver and what runs below it. Every call pending on its connection
    then fails at once ("connection closed"), which a call on a browser that died mid-call
    never does by itself. psutil refuses to signal a pid that was reused since `driver` was found."""
    _kill_tree(driver)


def _kill_tree(root: psutil.Process) -> None:
    """SIGKILL `root` and every process below it, quietly for those already gone."""
    try:
        # The whole tree first, then the kills: a child of a dead parent is reparented
        # and could no longer be found below the root.
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:  # already gone
        return
    for process in tree:
        try:
            process.kill()
        except psutil.Error:
            pass
