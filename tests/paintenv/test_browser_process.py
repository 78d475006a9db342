"""Finding the browser by its marker switch and killing its whole process tree (no Chromium:
stand-in processes carry the same switches)."""
from __future__ import annotations

import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from paintenv.browser_process import (
    browser_alive,
    driver_of,
    find_browser_pid,
    kill_browser_tree,
    kill_driver,
)
from paintenv.render_config import MARKER_SWITCH
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


def test_a_browser_is_alive_until_killed_and_a_zombie_counts_as_dead(spawn):
    marker = uuid.uuid4().hex
    browser = spawn("sleep 60", MARKER_SWITCH + marker)
    deadline = time.monotonic() + 5  # until the forked child has exec'd into the shell
    while find_browser_pid(marker) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert browser_alive(browser.pid, marker)
    assert not browser_alive(browser.pid, uuid.uuid4().hex)  # the pid, but not our browser
    browser.kill()
    time.sleep(0.2)  # not reaped yet: a zombie until wait()
    assert psutil.Process(browser.pid).status() == psutil.STATUS_ZOMBIE
    assert not browser_alive(browser.pid, marker)
    browser.wait()
    assert not browser_alive(browser.pid, marker)


def test_the_driver_is_the_process_below_ours_that_the_browser_runs_under(spawn):
    marker = uuid.uuid4().hex
    driver = spawn('sh -c "sleep 60" "$0" "$1" & wait', MARKER_SWITCH + marker)  # a driver with its browser
    browser = children_of(driver.pid, 1)[0]
    assert driver_of(browser.pid).pid == driver.pid
    assert driver_of(driver.pid).pid == driver.pid


def test_a_process_not_below_ours_has_no_driver():
    assert driver_of(1) is None


@pytest.mark.browser
def test_killing_the_driver_fails_a_playwright_call_that_would_wait_forever():
    # Its own thread: the session `chromium` fixture may already hold a sync Playwright in this
    # thread, and Playwright refuses a second one inside that one's event loop.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_kill_the_driver_under_a_call_that_waits_forever).result()


def _kill_the_driver_under_a_call_that_waits_forever():
    from django.conf import settings
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    marker = uuid.uuid4().hex
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=settings.CHROMIUM_PATH, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", MARKER_SWITCH + marker])
        page = browser.new_page()
        driver = driver_of(find_browser_pid(marker))
        assert driver is not None and driver.pid != find_browser_pid(marker)
        timer = threading.Timer(1.0, kill_driver, args=(driver,))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(PlaywrightError):
            page.evaluate("new Promise(() => {})")  # never settles: only a dead connection ends it
        assert time.monotonic() - t0 < 10
        timer.join()
        assert not driver.is_running()
