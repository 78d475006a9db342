"""Models for the training tests, built once per session (no network: the project builds them)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """A fast-to-build model: it runs GRPO mechanics but rarely writes a passing sketch."""
    from training.tiny_model import QUICK_SPEC, build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("models") / "tiny", QUICK_SPEC))


@pytest.fixture(scope="session")
def painter_model() -> str:
    """The demo model's shape with fewer SFT epochs: its sketches pass the gate and often
    render. Built once per machine into MODELS_DIR (~4 min on 2 cores)."""
    from django.conf import settings

    from training.tiny_model import PAINTER_TEST_SPEC, build_tiny_model

    path = settings.MODELS_DIR / "tiny-painter-tests"
    if not (path / "config.json").exists():
        build_tiny_model(path, PAINTER_TEST_SPEC)
    return str(path)
