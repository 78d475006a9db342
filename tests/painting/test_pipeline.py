"""The one pipeline from sketch to reward: verdicts are 0, infrastructure failures are None."""
from __future__ import annotations

from pathlib import Path

import pytest

from paintapp.env.render_config import RendererConfig
from paintapp.env.renderer import Renderer
from paintapp.env.reward import PRESETS
from painting.pipeline import RENDER_ONLY, InProcess, PaintJob, Workers, paint_batch, render_seed
from tests.curation.factories import png_bytes

GOOD = (Path(__file__).resolve().parents[1] / "env" / "corpus" / "good" / "hibiscus.js").read_text()
BARE_RECT = GOOD.replace("brush.noStroke();", "brush.noStroke(); rect(0, 0, 10, 10);", 1)
HPS_ONLY = PRESETS["hps-only"]  # the features scorer: no judge, no references needed

pytestmark = pytest.mark.slow


@pytest.fixture
def in_process(renderer):
    return InProcess(renderer)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_a_good_sketch_is_rendered_scored_and_rewarded_with_every_part(in_process, media):
    reply = f"Here it is.\n```javascript\n{GOOD}```\n"
    painted = paint_batch([PaintJob(reply=reply, prompt="a peach hibiscus", seed=3)], recipe=HPS_ONLY,
                          pool_id=None, size=192, executor=in_process).paintings[0]
    assert painted.passed and painted.failure == ""
    assert (media / painted.render["png_path"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert painted.parts["gate"] == 1.0 and painted.parts["quality"] is not None
    expected = HPS_ONLY.w_gate + HPS_ONLY.w_length * painted.parts["length"] + HPS_ONLY.w_quality * painted.parts["quality"]
    assert painted.reward == pytest.approx(expected, abs=1e-6)


def test_a_sketch_the_gate_refuses_is_worth_zero_and_is_never_rendered(in_process, media):
    painted = paint_batch([PaintJob(reply=BARE_RECT, prompt="x", seed=0)], recipe=HPS_ONLY, pool_id=None,
                          size=192, executor=in_process).paintings[0]
    assert painted.reward == 0.0 and painted.violations == ["bare_primitives"]
    assert painted.render is None and painted.score is None and painted.failure == ""


def test_a_renderer_that_cannot_start_makes_the_reward_none_with_the_reason_never_zero(media):
    broken = InProcess(Renderer(RendererConfig(chromium_path="/nonexistent/chromium")))
    batch = paint_batch([PaintJob(reply=GOOD, prompt="x"), PaintJob(reply=BARE_RECT, prompt="x")],
                        recipe=HPS_ONLY, pool_id=None, size=192, executor=broken)
    unavailable, refused = batch.paintings
    assert unavailable.reward is None and unavailable.failure.startswith("render: RenderUnavailable")
    assert unavailable.parts["unavailable"] == [unavailable.failure]
    assert refused.reward == 0.0, "a gate failure is still a verdict when the renderer is down"
    assert batch.none_count == 1


def test_without_a_render_worker_the_stage_deadline_makes_the_reward_none(db, no_worker):
    batch = paint_batch([PaintJob(reply=GOOD, prompt="x")], recipe=HPS_ONLY, pool_id=None, size=192,
                        executor=Workers(), render_deadline_s=1.0)
    painted = batch.paintings[0]
    assert painted.reward is None and "TimeoutError" in painted.failure
    assert painted.parts["gate"] == 1.0, "the sketch passed the gate; only the infrastructure failed"


def test_a_painting_given_as_png_is_scored_without_a_render_and_without_a_sketch(media):
    calls = []

    class Counting(InProcess):
        def render(self, calls_, **kwargs):
            calls.append(calls_)
            return super().render(calls_, **kwargs)

    painted = paint_batch([PaintJob(reply=None, prompt="a flower", png=png_bytes(size=96))], recipe=HPS_ONLY,
                          pool_id=None, size=192, executor=Counting()).paintings[0]
    assert calls == [] and painted.painting is None
    assert painted.parts["length"] == 0.0 and painted.parts["quality"] is not None
    assert painted.reward is not None and painted.reward >= HPS_ONLY.w_gate


def test_a_recipe_that_weights_nothing_scored_renders_without_scoring(in_process, media):
    painted = paint_batch([PaintJob(reply=GOOD, prompt="x", seed=1)], recipe=RENDER_ONLY, pool_id=None,
                          size=128, executor=in_process).paintings[0]
    assert painted.passed and painted.score is None and painted.reward == 1.0


def test_the_render_seed_rule_gives_each_step_and_index_its_own_seed():
    seeds = {render_seed(7, step, index) for step in range(0, 4) for index in range(16)}
    assert len(seeds) == 64 and render_seed(7, 2, 3) == 2010
