"""Fixtures of the training tests (the models they train are built in tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture
def workers(start_worker, worker_env) -> dict:
    """A real train, render and score worker each (the end-to-end runs), by queue."""
    worker_env["RENDER_TIMEOUT_S"] = "20"
    return {queue: start_worker(queue) for queue in ("train", "render", "score")}
