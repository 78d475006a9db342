"""An SFT run on real workers stops after a step and resumes from its checkpoint (the whole warm
start, SFT to GRPO, is tests/training/sft/test_sft_browser.py)."""
from __future__ import annotations

import pytest

from tests.support.runs import wait_for, wait_until_ended
from training import services
from training.models import Run, Step
from training.sft_dataset import SftSources

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
