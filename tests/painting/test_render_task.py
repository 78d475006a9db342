"""`render_sketch` on a real render worker: verdicts, stored PNGs, and a worker that survives."""
from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.reward import PRESETS
from painting.pipeline import reward_of
from painting.tasks import render_sketch
from tests.paintenv.adversarial import CASES

CORPUS = Path(__file__).resolve().parents[1] / "paintenv" / "corpus"
GOOD = (CORPUS / "good" / "hibiscus.js").read_text()
LOOP_FOREVER = """
function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  while (true) { brush.noStroke(); }
}
"""

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def render_worker(start_worker, worker_env):
    worker_env["RENDER_TIMEOUT_S"] = "6"
    return start_worker("render")


def test_it_renders_a_good_sketch_and_stores_its_png(render_worker, worker_env):
    result = render_sketch.delay(GOOD, seed=3, size=256).get(timeout=120)
    assert result["passed"] is True
    assert result["violations"] == []
    assert result["paint_fraction"] > 0.005
    png = Path(worker_env["MEDIA_ROOT"]) / result["png_path"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["png_sha256"] in result["png_path"]


def test_a_render_queued_under_the_tasks_name_before_it_moved_still_renders_on_the_render_queue(render_worker):
    assert render_sketch.name == "painting.tasks.render_sketch"
    result = render_sketch.app.send_task("training.tasks.render_sketch", args=[GOOD], kwargs={"size": 128})
    assert result.get(timeout=120)["passed"] is True


def test_a_looping_sketch_is_a_timeout_verdict_and_the_worker_renders_the_next_one(render_worker):
    looped = render_sketch.delay(LOOP_FOREVER, size=256, render_failed_gate=True).get(timeout=120)
    assert "render_timeout" in looped["violations"]
    assert looped["passed"] is False
    after = render_sketch.delay(GOOD, size=256).get(timeout=120)
    assert after["passed"] is True


def test_a_sketch_failing_the_gate_is_not_rendered_unless_asked(render_worker):
    bare = "function setup(){ createCanvas(600,600,WEBGL); brush.fill(\"#c0546a\", 200); brush.circle(300,300,80,0.2); rect(0,0,50,50); }"
    skipped = render_sketch.delay(bare, size=256).get(timeout=60)
    assert skipped["violations"] == ["bare_primitives"]
    assert skipped["rendered"] is False and skipped["png_path"] is None
    rendered = render_sketch.delay(bare, size=256, render_failed_gate=True).get(timeout=120)
    assert "runtime_bare_primitive" in rendered["violations"]


# One hostile sketch per forbidden construct (tests/paintenv/adversarial/), rendered by the
# worker even though the gate refuses it: the render itself must fail with a code, and a
# trainer fooled at the gate would still reward it 0, never None.
ONE_PER_CONSTRUCT = list({case.construct: case for case in CASES if case.wrapper == "computed_name"}.values())


def test_every_forbidden_construct_is_a_failed_render_and_a_zero_reward(render_worker):
    recipe = PRESETS["studio-judge-led"]
    for case in ONE_PER_CONSTRUCT:
        result = render_sketch.delay(case.code, size=128, render_failed_gate=True).get(timeout=120)
        assert result["passed"] is False, case.id
        assert set(result["violations"]) & case.runtime_codes, (case.id, result["violations"])
        reward, _parts, failure = reward_of(
            recipe, code=case.code, gate_passed=True, render=result, score=None)
        assert reward == 0.0 and failure == "", (case.id, reward, failure)
