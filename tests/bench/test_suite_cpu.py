"""bench/suite_cpu.py: a test's processes' CPU is charged to that test."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.suite_cpu import Sampler, process_kind, report

BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"


def test_the_cpu_of_a_process_a_test_started_is_charged_to_that_test(tmp_path):
    (tmp_path / "gw0").write_text(f"{os.getpid()}\ttests/a/test_x.py::test_busy")
    sampler = Sampler(tmp_path)
    sampler.read_once(first=True)
    child = subprocess.Popen([sys.executable, "-c", BUSY + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while sampler.by_test["tests/a/test_x.py::test_busy"] < 0.5 and time.monotonic() < deadline:
            sampler.read_once(first=False)
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()
    assert sampler.by_test["tests/a/test_x.py::test_busy"] >= 0.5
    table = report({"wall_s": 60, "busy_s": 2, **sampler.result()}, top=5)
    assert "| tests/a/test_x.py |" in table and "| test_busy |" in table


def test_processes_are_grouped_by_what_they_are():
    assert process_kind("/usr/lib/chromium/chromium --type=renderer") == "chromium"
    assert process_kind("python -m celery -A paintapp worker -Q train") == "celery worker"
    assert process_kind("python -m celery -A paintapp beat") == "celery beat"
    assert process_kind("python manage.py train_process 7") == "training processes"
    assert process_kind("postgres: 15/main: postgres test_paintapp_gw0") == "postgresql"
