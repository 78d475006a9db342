"""Real Celery worker and beat processes for tests (never task_always_eager).

A worker is started as `celery -A paintapp worker` in a subprocess, against the test
database and a Redis database reserved for tests, and is ready once it answers a ping.
Beat (`celery -A paintapp beat`) sends the periodic tasks of the settings' schedule.

A worker a test leaves idle and whole is parked in the `WorkerFleet` for a later test that
asks for the same worker (queues, pool, environment): starting one costs ~1.5 CPU s, and a
render worker's Chromium ~1 s more at its first render, where a run's tests start ~120.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from paintapp.celery import app
from tests.support.processes import stop_group, stop_groups

# What pytest sets in the environment for each test: a worker has no use for it.
PER_TEST_ENV = frozenset({"PYTEST_CURRENT_TEST"})
CONTROL_TIMEOUT_S = 5.0  # a worker answers control messages between its other work

REPO = Path(__file__).resolve().parents[2]


@dataclass(kw_only=True)
class CeleryProcess:
    """A `celery -A paintapp ...` subprocess in a session of its own, so it dies as a whole."""

    env: dict[str, str]
    log_path: Path | None = None
    process: subprocess.Popen | None = None
    log_offset: int = 0  # where this test's lines begin in a log a parked worker kept writing
    reusable: bool = True  # false once a test killed or stopped it, or a part of it

    def spawn(self, *arguments: str) -> subprocess.Popen:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "paintapp", *arguments],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        return self.process

    def log_text(self) -> str:
        """What the process wrote to its log since the current test took it."""
        with open(self.log_path, "rb") as log:
            log.seek(self.log_offset)
            return log.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole process group (a worker's parent and pool children), like a crashed machine."""
        self.reusable = False
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        self.reusable = False
        stop_group(self.process)


@dataclass(kw_only=True)
class WorkerProcess(CeleryProcess):
    queues: tuple[str, ...]
    concurrency: int = 1
    pool: str = "prefork"  # "solo" runs tasks in the worker's own thread (no terminate, as on Windows)
    hostname: str = field(default_factory=lambda: f"test-{uuid.uuid4().hex[:8]}@localhost")
    kind: WorkerKind | None = None  # what it is to the WorkerFleet that started it

    def start(self, ready_timeout: float = 60.0) -> WorkerProcess:
        self.spawn(
            "worker", "-Q", ",".join(self.queues), "-c", str(self.concurrency), "-P", self.pool,
            "-n", self.hostname,
            "--loglevel=INFO", "--without-gossip", "--without-mingle",
        )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.hostname} exited with {self.process.returncode}; log: {self.log_path}")
            if app.control.ping(destination=[self.hostname], timeout=0.5):
                return self
        raise TimeoutError(f"worker {self.hostname} did not answer a ping within {ready_timeout}s")

    def kill_pool_children(self) -> list[int]:
        """SIGKILL the pool's processes only, like the kernel's OOM killer taking the one that
        trains: the worker replaces them and requeues their tasks (reject_on_worker_lost)."""
        self.reusable = False
        children = psutil.Process(self.process.pid).children()
        for child in children:
            child.kill()
        psutil.wait_procs(children, timeout=10)
        return [child.pid for child in children]


@dataclass(kw_only=True)
class BeatProcess(CeleryProcess):
    """Beat as the Procfile runs it: its schedule file goes where the settings say (VAR_DIR)."""

    def start(self) -> BeatProcess:
        self.spawn("beat", "--loglevel=INFO")
        return self


@dataclass(frozen=True)
class WorkerKind:
    """What makes two workers interchangeable: the same queues, pool and environment."""

    queues: tuple[str, ...]
    concurrency: int
    pool: str
    env: frozenset[tuple[str, str]]


class WorkerFleet:
    """The workers of one pytest process that tests left idle and whole, parked for a later test
    that asks for the same kind.

    A parked worker consumes nothing and answers nothing: its queues' consumers are cancelled,
    then its process group is stopped (SIGSTOP), so a later test that wants no worker, or another
    kind on the same queue, sees none. (A message the worker's last wait for its queues, up to
    BRPOP_S, still takes goes back to the queue: kombu requeues a message no consumer wants; the
    stop waits that wait out.) Taken again it is continued and consumes its queues once more. A
    worker a test killed, stopped or left busy is stopped instead; at most `keep` are parked.
    """

    BRPOP_S = 1.0  # kombu's Redis transport waits this long for a queue's next message

    def __init__(self, *, root: Path, broker_url: str, keep: int):
        self.root, self.broker_url, self.keep = root, broker_url, keep
        self.media, self.var = root / "media", root / "var"
        root.mkdir(parents=True, exist_ok=True)
        self.parked: list[WorkerProcess] = []
        self.every: list[WorkerProcess] = []  # all it started: close() leaves none running
        self.reused = 0

    @property
    def started(self) -> int:
        return len(self.every)

    def fresh_media(self) -> Path:
        """The workers' MEDIA_ROOT, emptied for the next test (parked workers write nothing)."""
        shutil.rmtree(self.media, ignore_errors=True)
        self.media.mkdir(parents=True)
        return self.media

    def start(self, *, queues: tuple[str, ...], concurrency: int, pool: str, env: dict[str, str]) -> WorkerProcess:
        """A parked worker of this kind, continued, or a new one."""
        env = {name: value for name, value in env.items() if name not in PER_TEST_ENV}
        kind = WorkerKind(queues, concurrency, pool, frozenset(env.items()))
        parked = next((worker for worker in self.parked if worker.kind == kind), None)
        if parked is not None:
            self.parked.remove(parked)
            if self._resume(parked):
                self.reused += 1
                return parked
            self._stop([parked])
        worker = WorkerProcess(queues=queues, env=dict(env), concurrency=concurrency, pool=pool, kind=kind,
                               log_path=self.root / f"worker-{'-'.join(queues)}-{self.started + 1}.log")
        self.every.append(worker)
        return worker.start()

    def release(self, workers: list[WorkerProcess]) -> None:
        """After their test: park the workers that are whole, idle and on the tests' own broker; stop the rest."""
        keep = [w for w in workers if w.kind is not None and w.reusable and w.process.poll() is None
                and w.env.get("CELERY_BROKER_URL") == self.broker_url]
        self._stop([worker for worker in workers if worker not in keep])
        for worker in keep:
            for queue in worker.queues:
                app.control.cancel_consumer(queue, destination=[worker.hostname])
        idle = [worker for worker in keep if self._consumes_nothing_and_holds_no_task(worker)]
        self._stop([worker for worker in keep if worker not in idle])
        if not idle:
            return
        time.sleep(self.BRPOP_S + 0.2)
        for worker in idle:
            os.killpg(worker.process.pid, signal.SIGSTOP)
        self.parked += idle
        excess = len(self.parked) - self.keep
        if excess > 0:
            self._stop(self.parked[:excess])
            del self.parked[:excess]

    def close(self) -> None:
        self._stop(self.every)
        self.parked.clear()

    @staticmethod
    def _stop(workers: list[WorkerProcess]) -> None:
        """Stop them side by side, parked ones included (continued first: a stopped process
        keeps a SIGTERM pending until then; continuing a running one changes nothing)."""
        for worker in workers:
            worker.reusable = False
        stop_groups([worker.process for worker in workers], before_term=signal.SIGCONT)

    def _consumes_nothing_and_holds_no_task(self, worker: WorkerProcess) -> bool:
        if not self._consumes(worker, set()):
            return False  # no answer, or the cancel has not happened
        inspect = self._inspect(worker)
        for tasks in (inspect.active(), inspect.reserved()):
            if tasks is None or tasks.get(worker.hostname) != []:
                return False  # still running, or holding, a task of the test that used it
        return True

    def _resume(self, worker: WorkerProcess) -> bool:
        if worker.process.poll() is not None:
            return False
        os.killpg(worker.process.pid, signal.SIGCONT)
        for queue in worker.queues:
            app.control.add_consumer(queue, destination=[worker.hostname])
        if not self._consumes(worker, set(worker.queues)):
            return False
        worker.log_offset = worker.log_path.stat().st_size
        worker.reusable = True
        return True

    @staticmethod
    def _inspect(worker: WorkerProcess):
        return app.control.inspect(destination=[worker.hostname], timeout=CONTROL_TIMEOUT_S, limit=1)

    def _consumes(self, worker: WorkerProcess, queues: set[str]) -> bool:
        """Whether the worker comes to consume exactly `queues` within CONTROL_TIMEOUT_S (the
        consumer changes happen on its next turn of the event loop, after its reply)."""
        inspect, deadline = self._inspect(worker), time.monotonic() + CONTROL_TIMEOUT_S
        while time.monotonic() < deadline:
            answer = (inspect.active_queues() or {}).get(worker.hostname)
            if answer is not None and {queue["name"] for queue in answer} == queues:
                return True
            time.sleep(0.1)
        return False
