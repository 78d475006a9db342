"""End-to-end GRPO on CPU: tiny model, real Celery workers for all three queues, real Chromium.

One tiny model is built per test session (TRL SFT, ~1–2 min); each run is a few steps at a
small render size.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from paintapp.env.reward import PRESETS
from painting import services as painting_services
from tests.curation.factories import make_pool
from tests.support.runs import FAST, wait_for, wait_until_ended
from training import services
from training.models import Rollout, Step

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="e2e")


@pytest.fixture
def workers(start_worker, worker_env):
    worker_env["RENDER_TIMEOUT_S"] = "20"
    return {queue: start_worker(queue) for queue in ("train", "render", "score")}


def lora_b_norm(adapter_dir: Path) -> float:
    from safetensors.numpy import load_file

    tensors = load_file(str(adapter_dir / "adapter_model.safetensors"))
    return float(sum(abs(v).sum() for k, v in tensors.items() if "lora_B" in k))


def test_a_three_step_run_finishes_with_steps_rollouts_paintings_and_a_trained_adapter(workers, pool, painter_model):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    tiny_model = painter_model
    run = services.run_launch(pool=pool, recipe_name="judge-led", base_model=tiny_model, arguments=FAST | {"max_steps": 3, "max_completion_length": 1024})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2, 3]
    rollouts = Rollout.objects.filter(run=run)
    assert rollouts.count() == 4 * 3
    step = Step.objects.get(run=run, step=3)
    for key in ("reward", "reward_std", "loss", "ours/gate_pass_rate", "ours/none_count", "ours/render_s", "ours/update_s"):
        assert key in step.metrics, key
    painted = [r for r in rollouts if r.png]
    assert painted, "no rollout was rendered: the tiny model never passed the gate"
    for r in painted:
        assert r.paint_fraction is not None and r.png.startswith("renders/")
    passed = [r for r in rollouts if r.passed]
    for r in passed:
        assert r.reward is not None and r.parts["judge"] is not None and r.parts["quality"] is not None
        assert len(r.judge_detail["references"]) == 4  # 2 love + 2 okay, both orders each
        assert all(len(ref["orders"]) == 2 for ref in r.judge_detail["references"])
    for r in rollouts.filter(passed=False, failure=""):
        assert r.reward == 0.0
    adapter = Path(run.output_dir) / "adapter"
    assert lora_b_norm(adapter) > 0  # LoRA B starts at zero: any mass means the weights changed
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    PeftModel.from_pretrained(base, str(adapter))


def test_a_dead_render_worker_gives_none_rewards_with_reasons_never_fake_zeros(start_worker, worker_env, pool, tiny_model):
    worker_env["RENDER_TIMEOUT_S"] = "20"
    start_worker("train")
    start_worker("score")
    # No render worker at all for the first step: every gated rollout waits out the deadline.
    run = services.run_launch(
        pool=pool, recipe_name="hps-only", base_model=tiny_model,
        arguments=FAST | {"max_steps": 2, "render_deadline_s": 8},
    )
    wait_for(lambda: Step.objects.filter(run=run, step=1).exists(), 300, "step 1")
    first = Rollout.objects.filter(run=run, step=1)
    gated = [r for r in first if r.stats and not r.violations]
    for r in gated:
        assert r.reward is None and r.failure.startswith("render:")
    assert Step.objects.get(run=run, step=1).metrics["ours/none_count"] == len(gated)
    start_worker("render")
    run = wait_until_ended(run)
    assert run.status == "finished", run.error


def test_stop_ends_the_run_after_a_step_and_resume_continues_without_duplicates(workers, pool, tiny_model):
    run = services.run_launch(pool=pool, recipe_name="hps-only", base_model=tiny_model, arguments=FAST | {"max_steps": 4})
    wait_for(lambda: Step.objects.filter(run=run).exists(), 300, "the first step")
    run.refresh_from_db()
    services.run_stop(run=run)
    run = wait_until_ended(run)
    assert run.status == "stopped"
    assert 1 <= run.steps_done < 4
    assert (Path(run.output_dir) / "adapter" / "adapter_model.safetensors").exists()
    services.run_resume(run=run)
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2, 3, 4]
    assert Rollout.objects.filter(run=run).count() == 4 * 4
    assert run.resumed_from.rsplit("-", 1)[-1].isdigit()


def test_a_crashing_reward_part_gives_none_and_never_kills_the_trainer(workers, pool, tiny_model):
    recipe = PRESETS["hps-only"].with_(quality="tests.support.broken_backends.ExplodingQualityScorer")
    painting_services.recipe_save(name="exploding", recipe=recipe)
    run = services.run_launch(pool=pool, recipe_name="exploding", base_model=tiny_model, arguments=FAST | {"max_steps": 2})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    passed = Rollout.objects.filter(run=run, passed=True)
    for r in passed:
        assert r.reward is None and "quality model crashed" in r.failure
    assert not Rollout.objects.filter(run=run, passed=True, reward=0.0).exists()
