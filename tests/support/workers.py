"""Real Celery worker and beat processes for tests (never task_always_eager).

A worker is started as `celery -A paintapp worker` in a subprocess, against the test
database and a Redis database reserved for tests, and is ready once it answers a ping.
Beat (`celery -A paintapp beat`) sends the periodic tasks of the settings' schedule.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from paintapp.celery import app
from tests.support.processes import stop_group

REPO = Path(__file__).resolve().parents[2]


@dataclass(kw_only=True)
class CeleryProcess:
    """A `celery -A paintapp ...` subprocess in a session of its own, so it dies as a whole."""

    env: dict[str, str]
    log_path: Path | None = None
    process: subprocess.Popen | None = None

    def spawn(self, *arguments: str) -> subprocess.Popen:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "paintapp", *arguments],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        return self.process

    def kill(self) -> None:
        """SIGKILL the whole process group (a worker's parent and pool children), like a crashed machine."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        stop_group(self.process)


@dataclass(kw_only=True)
class WorkerProcess(CeleryProcess):
    queues: tuple[str, ...]
    concurrency: int = 1
    pool: str = "prefork"  # "solo" runs tasks in the worker's own thread (no terminate, as on Windows)
    hostname: str = field(default_factory=lambda: f"test-{uuid.uuid4().hex[:8]}@localhost")

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
