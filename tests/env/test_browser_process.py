"""Finding the browser by its marker switch and killing its whole process tree (no Chromium:
stand-in processes carry the same switches)."""
from __future__ import annotations

import subprocess
import time
import uuid

import psutil
import pytest

from paintapp.env.browser_process import find_browser_pid, kill_browser_tree
from paintapp.env.render_config import MARKER_SWITCH
from tests.support.processes import still_running


@pytest.fixture
def spawn():
    """Start `sh` running `script`, with extra arguments in its command line; every
    process left over is killed afterwards."""
    started: list[subprocess.Popen] = []

    def start(script: str, *args: str) -> subprocess.Popen:
        process = subprocess.Popen(["sh", "-c", script, "sh", *args])
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
        process.wait()


def children_of(pid: int, count: int) -> list[psutil.Process]:
    """The `count` processes below `pid`, once they have started."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        children = psutil.Process(pid).children(recursive=True)
        if len(children) >= count:
            return children
        time.sleep(0.02)
    raise AssertionError(f"{pid} did not start {count} children")


def test_it_finds_the_browser_by_its_marker_and_not_a_child_process_that_shares_it(spawn):
    marker = uuid.uuid4().hex
    spawn("sleep 60", MARKER_SWITCH + marker, "--type=renderer")
    browser = spawn("sleep 60", MARKER_SWITCH + marker)
    spawn("sleep 60", MARKER_SWITCH + uuid.uuid4().hex)  # another renderer's browser
    assert find_browser_pid(marker) == browser.pid


def test_no_process_with_the_marker_means_no_browser():
    assert find_browser_pid(uuid.uuid4().hex) is None


def test_it_kills_the_browser_and_every_process_below_it(spawn):
    marker = uuid.uuid4().hex
    browser = spawn("sh -c 'sleep 60 & wait' & sleep 60 & wait", MARKER_SWITCH + marker)
    below = children_of(browser.pid, 3)  # a shell with its sleep, and a sleep
    kill_browser_tree(browser.pid, marker)
    browser.wait(timeout=5)
    assert still_running(below) == []


def test_it_leaves_a_process_alone_whose_command_line_lacks_the_marker(spawn):
    # A recycled pid: the number is ours, the process is not.
    stranger = spawn("sleep 60", MARKER_SWITCH + uuid.uuid4().hex)
    kill_browser_tree(stranger.pid, uuid.uuid4().hex)
    time.sleep(0.2)
    assert stranger.poll() is None


def test_killing_a_browser_that_is_already_gone_is_quiet(spawn):
    marker = uuid.uuid4().hex
    browser = spawn("exit 0", MARKER_SWITCH + marker)
    browser.wait(timeout=5)
    kill_browser_tree(browser.pid, marker)
