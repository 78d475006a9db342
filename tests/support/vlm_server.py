"""A real OpenAI-compatible server for the VLM judge's tests: `transformers serve` (transformers'
own FastAPI/uvicorn server) running the tiny judge of tests/support/tiny_vlm.py on CPU, in a
process of its own on a free port.

    with VLMServer(model_dir, log_path) as server:   # ready once GET /v1/models lists the model
        VLMJudge(VLMConfig(base_url=server.base_url, model=server.model))
        server.stop()   # SIGTERM: uvicorn finishes the answers in flight, then exits

The server is pinned to the model (`transformers serve MODEL`): it loads it at start-up, lists
it alone under /v1/models by the name it was given (the folder's path) and answers a request
for any other model with HTTP 400. Like vLLM it accepts `response_format` (it does not enforce
it: the tiny judge's answers are JSON because it was trained to answer so).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.processes import free_port


@dataclass
class VLMServer:
    model_dir: Path
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The model's name on this server: the path it was started with."""
        return str(self.model_dir)

    def listed_models(self) -> list[str]:
        response = httpx.get(f"{self.base_url}/models", timeout=5)
        response.raise_for_status()
        return [entry["id"] for entry in response.json()["data"]]

    def start(self, ready_timeout: float = 180.0) -> VLMServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")  # a shared 2-core box
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "transformers.cli.transformers", "serve", self.model,
                 "--device", "cpu", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.model in self.listed_models():
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"transformers serve did not list {self.model} within {ready_timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else "(no log)"

    def __enter__(self) -> VLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
