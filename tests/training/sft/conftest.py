"""Fixtures of the SFT tests: a pool whose references carry their sketches' code."""
from __future__ import annotations

from pathlib import Path

import pytest

from curation.services import grade_set, pool_freeze
from tests.curation.factories import make_reference

CORPUS = Path(__file__).resolve().parents[2] / "paintenv" / "corpus" / "good"
SKETCHES = {name: (CORPUS / f"{name}.js").read_text() for name in ("hibiscus", "iris", "poppy", "rose", "minimal")}


def variant(code: str, n: int) -> str:
    """The same sketch with one number changed: another example, not a duplicate."""
    return code.replace("createCanvas(600, 600, WEBGL);", f"createCanvas(600, 600, WEBGL); let variant = {n};", 1)


@pytest.fixture
def pool(curator):
    """Six love and two okay references with their code; eval share 0.25: two go to eval."""
    codes = [variant(SKETCHES["hibiscus"], i) for i in range(6)] + [SKETCHES["iris"], SKETCHES["poppy"]]
    for i, code in enumerate(codes):
        grade_set(reference=make_reference(subject=f"a flower {i}", source=code), curator=curator,
                  tier="love" if i < 6 else "okay")
    return pool_freeze(name="sft", curator=curator, eval_share=0.25, seed=3)


@pytest.fixture
def launch_without_workers(settings):
    """For tests of what a launch stores and refuses on its own: no worker runs there."""
    settings.LAUNCH_CHECKS_WORKERS = False


@pytest.fixture
def model_dir(tmp_path):
    """A folder a launch accepts as a local model (its config.json); nothing loads it."""
    (tmp_path / "config.json").write_text("{}")
    return str(tmp_path)
