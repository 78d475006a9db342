"""`manage.py serve_env` in a subprocess for tests: the real OpenEnv server, on a free port,
against the test database and broker (the `worker_env` environment), stopped at teardown."""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.support.processes import free_port, stop_group

REPO = Path(__file__).resolve().parents[2]


@dataclass
class EnvServer:
    env: dict[str, str]
    arguments: tuple[str, ...]
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout: float = 60.0) -> EnvServer:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve_env", *self.arguments, "--port", str(self.port)],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve_env exited with {self.process.returncode}:\n{self.log()}")
            try:
                if requests.get(f"{self.url}/health", timeout=1).ok:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"serve_env did not answer /health in {ready_timeout:.0f} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        stop_group(self.process)
