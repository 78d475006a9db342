"""Real Celery worker processes for tests (never task_always_eager).

A worker is started as `celery -A paintapp worker` in a subprocess, against the test
database and a Redis database reserved for tests, and is ready once it answers a ping.
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

from paintapp.celery import app

REPO = Path(__file__).resolve().parents[2]


@dataclass
class WorkerProcess:
    queues: tuple[str, ...]
    env: dict[str, str]
    concurrency: int = 1
    pool: str = "prefork"  # "solo" runs tasks in the worker's own thread (no terminate, as on Windows)
    log_path: Path | None = None
    hostname: str = field(default_factory=lambda: f"test-{uuid.uuid4().hex[:8]}@localhost")
    process: subprocess.Popen | None = None

    def start(self, ready_timeout: float = 60.0) -> WorkerProcess:
        cmd = [
            sys.executable, "-m", "celery", "-A", "paintapp", "worker",
            "-Q", ",".join(self.queues), "-c", str(self.concurrency), "-P", self.pool, "-n", self.hostname,
            "--loglevel=INFO", "--without-gossip", "--without-mingle",
        ]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            cmd, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.hostname} exited with {self.process.returncode}; log: {self.log_path}")
            if app.control.ping(destination=[self.hostname], timeout=0.5):
                return self
        raise TimeoutError(f"worker {self.hostname} did not answer a ping within {ready_timeout}s")

    def kill(self) -> None:
        """SIGKILL the whole worker (parent and pool children), like a crashed machine."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
