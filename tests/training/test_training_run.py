"""End-to-end GRPO on CPU: tiny model, real Celery workers for all three queues, real Chromium.

One tiny model is built per test session (TRL SFT, ~1–2 min); each run is a few steps at a
small render size.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from paintenv.reward import PRESETS
from painting import services as painting_services
from tests.curation.factories import make_pool
from tests.support.runs import FAST, MECHANICS, wait_for, wait_until_ended
from training import services
from training.models import Rollout, Step

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="e2e")


def test_a_run_generating_with_transformers_continuous_batching_takes_its_steps_and_stores_each_group(
    workers, pool, tiny_model
):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model,
                              arguments=MECHANICS | {"max_steps": 2, "generation": "continuous-batching"})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2]
    assert list(Rollout.objects.filter(run=run).order_by("step", "position").values_list("step", "position")) == [
        (step, position) for step in (1, 2) for position in range(4)]  # one group of G = 4 a step, 1 × 4
    for step in Step.objects.filter(run=run):
        assert step.metrics["ours/generation_s"] > 0 and step.metrics["completions/mean_length"] > 0
    assert (Path(run.output_dir) / "adapter" / "adapter_model.safetensors").exists()


def test_two_runs_in_a_row_on_one_train_worker_each_train_in_a_fresh_process(workers, pool, tiny_model):
    import psutil

    launch = dict(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model, arguments=MECHANICS | {"max_steps": 1})
    first, second = services.run_launch(**launch), services.run_launch(**launch)
    first, second = wait_until_ended(first), wait_until_ended(second)
    assert (first.status, second.status) == ("finished", "finished"), (first.error, second.error)
    first_pid, second_pid = (int(run.trainer.rsplit(":", 1)[1]) for run in (first, second))
    assert first_pid != second_pid and workers["train"].process.pid not in (first_pid, second_pid)
    assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE
    # Each fresh process was forked with torch already loaded: the worker's main process preloads it.
    assert any("libtorch_cpu" in m.path for m in psutil.Process(workers["train"].process.pid).memory_maps())


def test_a_run_with_a_hub_repo_pushes_its_latest_checkpoint_and_its_adapter_there(start_worker, worker_env, pool,
                                                                                 tiny_model):
    from tests.support.hub_server import LocalHub

    with LocalHub() as hub:  # the Hub's API, served here; the train worker has a token for it
        worker_env.update(HF_ENDPOINT=hub.endpoint, HF_TOKEN="hf_test_token", RENDER_TIMEOUT_S="20")
        for queue in ("train", "render", "score"):
            start_worker(queue)
        run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model,
                                  arguments=MECHANICS | {"max_steps": 1, "hub_model_id": "ada/hibiscus-grpo"})
        run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert hub.created["ada/hibiscus-grpo"]["visibility"] == "private"
    pushed = [name for push in hub.pushes for name in push.files]
    assert {"last-checkpoint/adapter_model.safetensors", "last-checkpoint/trainer_state.json"} <= set(pushed)
    final = hub.pushes[-1].files
    assert "adapter_model.safetensors" in final and "adapter_config.json" in final


def test_stop_ends_the_run_after_a_step_and_resume_continues_without_duplicates(workers, pool, tiny_model):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model, arguments=MECHANICS | {"max_steps": 4})
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


def test_a_crashing_reward_part_gives_none_and_never_kills_the_trainer(workers, pool, painter_model):
    # The painter, whose sketches pass the gate and reach the quality part (the quick model's
    # never did: none passed, and the test asserted nothing).
    recipe = PRESETS["studio-hps-only"].with_(quality="tests.support.broken_backends.ExplodingQualityScorer")
    painting_services.recipe_save(name="exploding", recipe=recipe)
    run = services.run_launch(pool=pool, recipe_name="exploding", base_model=painter_model,
                              arguments=FAST | {"max_steps": 2, "max_completion_length": 1024})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    passed = Rollout.objects.filter(run=run, passed=True)
    assert passed.exists(), [r.failure or r.violations for r in Rollout.objects.filter(run=run)]
    for r in passed:
        assert r.reward is None and "quality model crashed" in r.failure
    assert not Rollout.objects.filter(run=run, passed=True, reward=0.0).exists()


def test_a_one_step_run_of_the_tiny_qwen3_5_moe_model_trains_expert_lora_and_its_adapter_loads_back_and_evaluates(
    workers, pool, tiny_vl_model
):
    from django.core.management import call_command
    from safetensors import safe_open

    arguments = FAST | {"max_steps": 1, "max_completion_length": 48, "lora_target_experts": True, "lora_dropout": 0.0,
                        "eval_samples_per_subject": 2}
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_vl_model, arguments=arguments)
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1]
    rollouts = Rollout.objects.filter(run=run)
    assert rollouts.count() == 4
    assert all(r.reward is not None for r in rollouts), [r.failure for r in rollouts]  # every reply got a verdict
    adapter = Path(run.output_dir) / "adapter"
    with safe_open(str(adapter / "adapter_model.safetensors"), "pt") as saved:
        keys = list(saved.keys())
    assert [k for k in keys if ".mlp.experts." in k] and not [k for k in keys if "visual" in k]
    assert "error" not in run.eval_result, run.eval_result
    assert run.eval_result["samples"] == 2

    out = io.StringIO()
    call_command("evaluate_run", str(run.id), "--json", stdout=out)  # base + adapter loaded back, in this process
    result = json.loads(out.getvalue())
    assert result["samples"] == 2 and result["none"] == 0
    assert len(result["per_subject"][run.subjects[0]]["rewards"]) == 2
