"""Where the test suite's CPU goes: each test's processes, by test file and by kind.

`make test` is CPU-bound on the 2-core machines (both cores busy from start to end), so its
wall time follows the CPU its tests spend, not their order. This runs the suite as `make test`
does (three pytest-xdist processes, a file each at a time) and charges the CPU of every process
to the test that was running in the pytest process it descends from: Celery workers, the
trainer, Chromium and its renderers, servers a test started. Processes are read from /proc
every half second; one that lives less than that between two reads goes uncounted, so the
total is a little under the machine's.

    .venv/bin/python bench/suite_cpu.py                       # the whole suite (~25 min)
    .venv/bin/python bench/suite_cpu.py tests/paintenv -x     # any pytest arguments
    .venv/bin/python bench/suite_cpu.py --report bench/out/suite-cpu.json   # print a saved run

Writes bench/out/suite-cpu.json and prints the files and tests that cost the most CPU, and
the share of each kind of process (chromium, celery, the trainer's processes, pytest itself).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "suite-cpu.json"
CURRENT_DIR_ENV = "SUITE_CPU_DIR"
TICKS = os.sysconf("SC_CLK_TCK")


# --- the pytest side: loaded into each pytest process with `-p bench.suite_cpu` -----------------

def pytest_runtest_logstart(nodeid, location):
    """Say which test this pytest process runs now (its pid, the test's id)."""
    folder = os.environ.get(CURRENT_DIR_ENV)
    if folder:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder, worker).write_text(f"{os.getpid()}\t{nodeid}")


# --- the sampler -----------------------------------------------------------------------------

def process_kind(command: str) -> str:
    if "chrom" in command:
        return "chromium"
    if "train_process" in command or "accelerate" in command:
        return "training processes"
    if "celery" in command:
        return "celery beat" if " beat" in command else "celery worker"
    if "tests.support.painter" in command:
        return "painter build"
    if "transformers" in command and "serve" in command:
        return "vlm server"
    if "playwright" in command or "node" in command.split(" ")[0]:
        return "playwright driver"
    if "pytest" in command or "exec(eval" in command:
        return "pytest"
    if command.startswith("postgres"):
        return "postgresql"
    return Path(command.split(" ")[0]).name or "other"


class Sampler:
    """Charges each process's CPU since the last read to the test its pytest ancestor runs."""

    def __init__(self, current_dir: Path):
        self.current_dir = current_dir
        self.seen: dict[tuple[int, str], int] = {}
        self.kinds: dict[tuple[int, str], str] = {}  # read once a process: /proc is read every half second
        self.by_test: collections.Counter[str] = collections.Counter()
        self.by_kind: collections.Counter[str] = collections.Counter()
        self.by_test_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.stopped = threading.Event()

    def running_tests(self) -> dict[int, str]:
        tests = {}
        for path in self.current_dir.iterdir():
            try:
                pid, nodeid = path.read_text().split("\t", 1)
            except (OSError, ValueError):
                continue
            tests[int(pid)] = nodeid
        return tests

    def read_once(self, first: bool) -> None:
        tests = self.running_tests()
        processes: dict[int, tuple[int, int, str]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            # ppid, utime + stime, start time (a pid reused is another process)
            processes[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), fields[19])
        for pid, (_, ticks, started) in processes.items():
            before = self.seen.get((pid, started))
            self.seen[(pid, started)] = ticks
            spent = ticks - before if before is not None else (0 if first else ticks)
            if spent <= 0:
                continue
            kind = self.kinds.get((pid, started))
            if kind is None:
                try:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    command = "?"
                kind = self.kinds[(pid, started)] = process_kind(command)
            test = "(no test: the pytest controller, services, the machine)"
            ancestor, hops = pid, 0
            while ancestor in processes and hops < 64:
                if ancestor in tests:
                    test = tests[ancestor]
                    break
                ancestor, hops = processes[ancestor][0], hops + 1
            if kind == "painter build":
                test = "(the painter model's background build)"
            seconds = spent / TICKS
            self.by_test[test] += seconds
            self.by_kind[kind] += seconds
            self.by_test_kind[test][kind] += seconds

    def run(self) -> None:
        first = True
        while not self.stopped.is_set():
            self.read_once(first)
            first = False
            self.stopped.wait(0.5)

    def result(self) -> dict:
        return {"by_test": self.by_test.most_common(), "by_kind": self.by_kind.most_common(),
                "by_test_kind": {test: kinds.most_common() for test, kinds in self.by_test_kind.items()}}


def machine_busy_s() -> float:
    """CPU seconds all cores spent busy since boot (user, nice, system, irq, softirq)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / TICKS


def report(data: dict, top: int) -> str:
    files: collections.Counter[str] = collections.Counter()
    for test, seconds in data["by_test"]:
        files[test.split("::", 1)[0]] += seconds
    counted = sum(seconds for _, seconds in data["by_kind"])
    lines = [f"wall {data['wall_s'] / 60:.1f} min; the machine busy {data['busy_s']:.0f} CPU s, "
             f"{counted:.0f} of them counted to a process ({counted / max(data['busy_s'], 1):.0%})", "",
             "| kind of process | CPU s | share |", "|---|---:|---:|"]
    lines += [f"| {kind} | {seconds:.0f} | {seconds / counted:.0%} |" for kind, seconds in data["by_kind"][:10]]
    lines += ["", f"| test file (top {top}) | CPU s | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {seconds:.0f} | {seconds / counted:.1%} |" for name, seconds in files.most_common(top)]
    lines += ["", f"| test (top {top}) | CPU s | most of it |", "|---|---:|---|"]
    for test, seconds in data["by_test"][:top]:
        kinds = ", ".join(f"{kind} {spent:.0f}" for kind, spent in data["by_test_kind"][test][:2])
        lines.append(f"| {test.split('::')[-1][:90]} | {seconds:.0f} | {kinds} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, help="print a saved run instead of running the suite")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--workers", default="3", help="pytest-xdist processes, as `make test` (TEST_WORKERS)")
    options, pytest_args = parser.parse_known_args()
    if options.report:
        print(report(json.loads(options.report.read_text()), options.top))
        return 0
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as current:
        sampler = Sampler(Path(current))
        thread = threading.Thread(target=sampler.run, daemon=True)
        busy, started = machine_busy_s(), time.monotonic()
        thread.start()
        env = {**os.environ, CURRENT_DIR_ENV: current, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "pytest", "-n", options.workers, "--dist", "loadfile", "-p", "bench.suite_cpu",
                   *pytest_args]
        exit_code = subprocess.call(command, cwd=REPO, env=env)
        sampler.stopped.set()
        thread.join()
    data = {"command": command[2:], "exit_code": exit_code, "wall_s": time.monotonic() - started,
            "busy_s": machine_busy_s() - busy, **sampler.result()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(report(data, options.top))
    print(f"\nsaved to {OUT.relative_to(REPO)}")
    return exit_code


if __name__ == "__main__":
    raise SystemExit(main())
