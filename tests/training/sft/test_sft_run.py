"""SFT runs end to end on real workers: the tiny model trained on a frozen dataset, stopped and
resumed, evaluated next to its base, and a GRPO run that continues its adapter."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import MECHANICS, wait_for, wait_until_ended
from training import services
from training.export.dataset import export_run
from training.models import Run, Step
from training.sft.dataset import SftSources
from training.sft.warm_start import adapter_file_digest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# Two examples a step, a checkpoint every step, one cheap held-out sample per subject.
SFT_FAST = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, "learning_rate": 1e-3,
            "warmup_steps": 0, "checkpoint_every": 1, "render_size": 128, "max_completion_length": 256,
            "eval_samples_per_subject": 1, "render_deadline_s": 60, "score_deadline_s": 60}


@pytest.fixture
def dataset(pool, curator):
    return services.sft_dataset_freeze(name="studio", sources=SftSources(pool_id=pool.id), created_by=curator)


def launch_sft(dataset, model: str, **arguments) -> Run:
    return services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", base_model=model, kind="sft",
                               sft_dataset=dataset, arguments=SFT_FAST | arguments)


def test_a_one_epoch_sft_run_trains_its_dataset_and_a_grpo_run_starts_from_its_adapter(workers, dataset, tiny_model,
                                                                                        tmp_path):
    examples = len(dataset.examples)
    sft = wait_until_ended(launch_sft(dataset, tiny_model, num_train_epochs=1.0))
    assert sft.status == "finished", sft.error
    assert sft.max_steps == -(-examples // 2)  # one epoch of batches of 2
    steps = list(Step.objects.filter(run=sft).order_by("step"))
    assert [s.step for s in steps] == list(range(1, sft.max_steps + 1))
    for step in steps:
        assert step.reward_mean is None  # SFT has no reward
        assert step.metrics["loss"] > 0 and 0 <= step.metrics["mean_token_accuracy"] <= 1
        assert step.metrics["learning_rate"] is not None
    adapter = Path(sft.output_dir) / "adapter"
    assert (adapter / "adapter_model.safetensors").exists()
    for figures in (sft.eval_result, sft.eval_result["base"]):  # the adapter's and its base model's
        assert figures["samples"] == len(sft.subjects)
        assert 0 <= figures["gate_pass_rate"] <= 1 and 0 <= figures["render_rate"] <= 1
    exported = export_run(run=sft, out_dir=tmp_path / "export")  # the run carries its frozen dataset
    document = json.loads((exported.out_dir / "run.json").read_text())
    assert (document["kind"], document["sft_dataset"]["label"]) == ("sft", dataset.label)
    rows = (exported.out_dir / "sft_dataset.jsonl").read_text().splitlines()
    assert [json.loads(row)["origin"] for row in rows] == [e["origin"] for e in dataset.examples]

    grpo = services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", base_model=tiny_model,
                               init_run=sft, arguments=MECHANICS | {"max_steps": 1, "lora_r": 4})
    assert grpo.arguments.lora_r == sft.arguments.lora_r  # the continued LoRA's rank, not the one asked
    grpo = wait_until_ended(grpo)
    assert grpo.status == "finished", grpo.error
    digest, parameters = adapter_file_digest(adapter)
    assert grpo.init_check["matches"] and grpo.init_check["sha256"] == digest
    assert grpo.init_check["parameters"] == parameters > 0
    assert grpo.init_run_id == sft.id and list(sft.continued_by.all()) == [grpo]


def test_an_sft_run_stops_after_a_step_and_resumes_from_its_checkpoint_to_the_end(workers, dataset, tiny_model):
    sft = launch_sft(dataset, tiny_model, num_train_epochs=20.0)  # ~60 short steps: the stop lands early
    wait_for(lambda: Step.objects.filter(run=sft).exists(), 300, "the SFT run's first step")
    sft.refresh_from_db()
    services.run_stop(run=sft)
    sft = wait_until_ended(sft)
    assert sft.status == "stopped", sft.error
    stopped_at = sft.checkpoint_step
    assert stopped_at and stopped_at < sft.max_steps
    sft = wait_until_ended(services.run_resume(run=sft))
    assert sft.status == "finished", sft.error
    assert sft.resumed_from.endswith(f"checkpoint-{stopped_at}")
    assert list(Step.objects.filter(run=sft).order_by("step").values_list("step", flat=True)) == list(
        range(1, sft.max_steps + 1))
