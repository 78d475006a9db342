"""Models for the training tests, built once per session (no network: the project builds them)."""
from __future__ import annotations

import pytest

from tests.support.painter import built_once, models_dir, painter_path, wait_for_build


@pytest.fixture(scope="session")
def tiny_model() -> str:
    """A fast-to-build model: it runs GRPO mechanics but rarely writes a passing sketch.
    Built once into MODELS_DIR and shared by the test processes (tests only read it)."""
    from training.tiny_model import QUICK_SPEC, build_tiny_model

    return str(built_once(models_dir() / "tiny-quick-tests", QUICK_SPEC, build_tiny_model))


@pytest.fixture(scope="session")
def painter_model(request) -> str:
    """The demo model's shape with fewer SFT epochs: its sketches pass the gate and often
    render. Built once per machine into MODELS_DIR (~4-5 min of one core), in the background
    from the start of the session (tests/conftest.py); this waits for that build."""
    path = painter_path()
    wait_for_build(getattr(request.config, "painter_build", None), path, timeout_s=1800)
    return str(path)


@pytest.fixture
def workers(start_worker, worker_env) -> dict:
    """A real train, render and score worker each (the end-to-end runs), by queue."""
    worker_env["RENDER_TIMEOUT_S"] = "20"
    return {queue: start_worker(queue) for queue in ("train", "render", "score")}


@pytest.fixture(scope="session")
def tiny_vl_model() -> str:
    """A Qwen3.5-MoE vision-language model (vision tower, routed experts, processor files) of
    ~300K parameters with a one-step SFT (~1 min): it runs the VL training path, not a painter.
    Built once into MODELS_DIR like `tiny_model`."""
    from training.tiny_vl_model import QUICK_VL_SPEC, build_tiny_vl_model

    return str(built_once(models_dir() / "tiny-vl-tests", QUICK_VL_SPEC, build_tiny_vl_model))


@pytest.fixture
def one_torch_thread():
    """As the trainer sets it on CPU (train_steps), for tests that generate in their own process:
    contended OpenMP threads make generation crawl."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
