"""The one pipeline from sketch to reward: verdicts are 0, infrastructure failures are None."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from paintenv.paint import paint_reply
from paintenv.render_config import RendererConfig
from paintenv.renderer import Renderer
from paintenv.reward import PRESETS
from painting.pipeline import (
    RENDER_ONLY,
    Batch,
    InProcess,
    JudgedSketch,
    PaintJob,
    Workers,
    _determinism_sample,
    paint_batch,
    render_seed,
    stage_queues,
)
from tests.curation.factories import painting_png

CORPUS = Path(__file__).resolve().parents[1] / "paintenv" / "corpus"
GOOD = (CORPUS / "good" / "hibiscus.js").read_text()
MINIMAL = (CORPUS / "good" / "minimal.js").read_text()
LOOPING = (CORPUS / "hostile" / "loop_in_setup.js").read_text()  # passes the gate, never finishes
BARE_RECT = GOOD.replace("brush.noStroke();", "brush.noStroke(); rect(0, 0, 10, 10);", 1)
HPS_ONLY = PRESETS["studio-hps-only"]  # the features scorer: no judge, no references needed

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


def renders_stored(media: Path) -> list[str]:
    return sorted(path.name for path in (media / "renders").rglob("*.png"))


def render_only(*sketches: str, deadline_s: float, executor: Workers | None = None) -> Batch:
    jobs = [PaintJob(reply=sketch, prompt="x", seed=seed) for seed, sketch in enumerate(sketches)]
    return paint_batch(jobs, recipe=RENDER_ONLY, pool_id=None, size=128, executor=executor or Workers(),
                       render_deadline_s=deadline_s)


def test_without_a_render_worker_the_reward_is_none_at_the_deadline_and_the_expired_task_never_runs(
    start_worker, worker_env, no_worker
):
    painted = render_only(MINIMAL, deadline_s=1.0).paintings[0]
    assert painted.reward is None and "not back by the stage's 1 s deadline; revoked" in painted.failure
    assert painted.parts["gate"] == 1.0, "the sketch passed the gate; only the infrastructure failed"
    start_worker("render")
    # The queue is first in, first out: once a later render is back, the worker has taken the
    # expired task before it, and discarded it.
    later = render_only(GOOD, deadline_s=60).paintings[0]
    assert later.reward == 1.0, later.failure
    assert renders_stored(Path(worker_env["MEDIA_ROOT"])) == [Path(later.render["png_path"]).name]


def test_a_render_still_running_at_the_deadline_is_terminated_so_the_next_batch_gets_the_worker(
    start_worker, worker_env
):
    worker_env["RENDER_TIMEOUT_S"] = "90"  # left running, a looping sketch would hold the worker that long
    start_worker("render")
    lost = render_only(LOOPING, LOOPING, deadline_s=8)
    assert lost.rewards == [None, None] and lost.late_count == 0
    assert all(p.failure.endswith("deadline; revoked") for p in lost.paintings)
    # A fresh pool process and browser take the next render at once.
    following = render_only(GOOD, deadline_s=30).paintings[0]
    assert following.reward == 1.0, following.failure


def test_a_render_back_after_the_deadline_is_counted_late_and_not_used(start_worker, worker_env):
    worker_env["RENDER_TIMEOUT_S"] = "4"  # the looping sketch's verdict (render_timeout, worth 0) comes back then
    start_worker("render", pool="solo")  # a pool that cannot terminate its running task
    assert render_only(MINIMAL, deadline_s=60).rewards == [1.0]  # Chromium is up: the next render starts at once
    batch = render_only(LOOPING, deadline_s=2, executor=Workers(settle_s=30))
    painted = batch.paintings[0]
    assert batch.late_count == 1
    assert painted.reward is None and painted.render is None
    assert painted.failure.endswith("it came back later and was not used")


def test_a_batch_is_lost_when_nothing_the_workers_had_to_judge_came_back():
    def painted(reward, sketch=GOOD):
        return JudgedSketch(job=PaintJob(reply=sketch, prompt="x"), painting=paint_reply(sketch, renderer=None), reward=reward)

    assert Batch([painted(None), painted(None)]).lost
    assert Batch([painted(None), painted(0.0, BARE_RECT)]).lost, "gate refusals alone, all 0, teach nothing"
    assert not Batch([painted(None), painted(0.0)]).lost, "a render's verdict came back from a worker"
    assert not Batch([painted(0.0, BARE_RECT)]).lost, "nothing was lost"


def test_a_recipe_that_scores_nothing_needs_render_workers_only():
    assert stage_queues(RENDER_ONLY) == ("render",)
    assert stage_queues(HPS_ONLY) == ("render", "score")


def test_a_painting_given_as_png_is_scored_without_a_render_and_without_a_sketch(media):
    calls = []

    class Counting(InProcess):
        def render(self, calls_, **kwargs):
            calls.append(calls_)
            return super().render(calls_, **kwargs)

    painted = paint_batch([PaintJob(reply=None, prompt="a flower", png=painting_png(size=96))], recipe=HPS_ONLY,
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


# --- reward integrity: determinism and painted writing ---------------------------------------

STACK_DEPTH = (CORPUS / "nondeterministic" / "stack_depth.js").read_text()
UNPINNED = ("--js-flags=--max-old-space-size=1024",)  # V8's background compilers left on


def test_a_painting_checked_for_determinism_passes_when_its_twin_agrees(in_process, media):
    batch = paint_batch([PaintJob(reply=GOOD, prompt="x", seed=5), PaintJob(reply=BARE_RECT, prompt="x", seed=6)],
                        recipe=RENDER_ONLY, pool_id=None, size=128, executor=in_process, check_every=1)
    good, refused = batch.paintings
    assert good.passed and good.reward == 1.0 and good.render["findings"]["determinism"]["same"]
    assert refused.render is None and batch.determinism_checked == 1  # only sketches that passed the gate


def test_a_painting_that_depends_on_the_stack_budget_fails_as_nondeterministic_and_is_worth_zero(media):
    # Without the harness's pin (V8 on one thread) the probe's depth moved in 10 of 12 pairs.
    with Renderer(RendererConfig(timeout_s=30, extra_args=UNPINNED)) as unpinned:
        batch = paint_batch([PaintJob(reply=STACK_DEPTH, prompt="x", seed=9) for _ in range(4)], recipe=RENDER_ONLY,
                            pool_id=None, size=128, executor=InProcess(unpinned), check_every=1)
    caught = [p for p in batch.paintings if "nondeterministic" in p.violations]
    # Failed once in a full suite with 3 checked (2026-12-05): say what each painting's first render
    # and its twin comparison were, for the next time.
    seen = [(p.violations, (p.render or {}).get("findings", {}).get("determinism")) for p in batch.paintings]
    assert caught and batch.determinism_checked == 4, seen
    assert all(p.reward == 0.0 and p.failure == "" and not p.passed for p in caught)


def test_one_in_n_sketches_is_drawn_for_a_second_render():
    rng = random.Random(3)
    assert _determinism_sample(list(range(40)), 0, rng) == []
    assert _determinism_sample(list(range(40)), 1, rng) == list(range(40))
    drawn = [len(_determinism_sample(list(range(80)), 8, random.Random(seed))) for seed in range(50)]
    assert 8 <= sum(drawn) / len(drawn) <= 12  # 80 / 8 = 10 on average


def test_a_twin_lost_to_infrastructure_checks_nothing_and_fails_nothing(media):
    class LosesTwins(InProcess):
        def render(self, calls, **kwargs):
            first = super().render(calls[:1], **kwargs)
            return first + [RuntimeError("render worker gone")] * (len(calls) - 1)

    batch = paint_batch([PaintJob(reply=GOOD, prompt="x", seed=5)], recipe=RENDER_ONLY, pool_id=None, size=128,
                        executor=LosesTwins(), check_every=1)
    painted = batch.paintings[0]
    assert painted.passed and painted.reward == 1.0 and painted.failure == "" and batch.determinism_checked == 0


def test_a_painting_given_as_png_with_writing_in_it_is_painted_text(renderer, media):
    from tests.paintenv.adversarial.painted_text import STYLES, text_sketch

    png = renderer.render(text_sketch("BEST PAINTING", STYLES[0]), seed=1, size=400).png
    painted = paint_batch([PaintJob(reply=None, prompt="a flower", png=png)], recipe=HPS_ONLY, pool_id=None, size=192,
                          executor=InProcess()).paintings[0]
    assert painted.violations == ["painted_text"] and painted.reward == 0.0 and painted.score is None
