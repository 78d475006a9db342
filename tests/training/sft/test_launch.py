"""Launching SFT runs and GRPO runs from SFT (service and CLI): what goes together and what is
refused, before any worker trains; freezing datasets in versions."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.curation.factories import make_pool
from training import services
from training.models import Run, SftDataset
from training.sft_dataset import SftSources

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("launch_without_workers")]


@pytest.fixture
def dataset(pool, curator):
    return services.sft_dataset_freeze(name="studio", sources=SftSources(pool_id=pool.id), created_by=curator)


def test_freezing_a_name_again_makes_its_next_version_with_its_counts(pool, curator, dataset):
    again = services.sft_dataset_freeze(name="studio", sources=SftSources(pool_id=pool.id, reference_tiers=("love", "okay")))
    assert (dataset.label, again.label) == ("studio:v1", "studio:v2")
    assert dataset.counts["references"]["kept"] == len(dataset.examples) > 0
    assert len(again.examples) > len(dataset.examples)  # the okay references too
    assert SftSources.from_dict(again.sources).reference_tiers == ("love", "okay")
    with pytest.raises(services.LaunchError, match="no example"):
        services.sft_dataset_freeze(name="empty", sources=SftSources(pool_id=pool.id, references=False))
    assert not SftDataset.objects.filter(name="empty").exists()


def test_an_sft_run_takes_its_steps_from_the_dataset_and_the_epochs(dataset, model_dir):
    run = services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", base_model=model_dir, kind="sft",
                              sft_dataset=dataset, arguments={"per_device_train_batch_size": 2,
                                                              "gradient_accumulation_steps": 1, "num_train_epochs": 2})
    examples = len(dataset.examples)
    assert run.is_sft and run.max_steps == 2 * -(-examples // 2) and run.name == "SFT on studio:v1"
    assert run.sft_dataset == dataset


def test_what_does_not_go_together_is_refused(dataset, curator, model_dir):
    other = make_pool(curator, name="other")
    refused = {
        "needs a frozen SFT dataset": dict(pool=dataset.pool, kind="sft"),
        "evaluate it on that pool": dict(pool=other, kind="sft", sft_dataset=dataset),
        "turns 1": dict(pool=dataset.pool, kind="sft", sft_dataset=dataset, arguments={"turns": 2}),
        "not from an SFT dataset": dict(pool=dataset.pool, sft_dataset=dataset),
        "grpo or sft": dict(pool=dataset.pool, kind="dpo"),
    }
    for message, launch in refused.items():
        with pytest.raises(services.LaunchError, match=message):
            services.run_launch(recipe_name="studio-hps-only", base_model=model_dir, **launch)
    assert not Run.objects.exists()


def test_a_grpo_run_from_sft_takes_the_sft_runs_base_model_and_lora_shape(dataset, model_dir, tmp_path):
    sft = services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", base_model=model_dir, kind="sft",
                              sft_dataset=dataset, arguments={"lora_r": 8, "lora_alpha": 16})
    with pytest.raises(services.LaunchError, match="not an SFT run that finished"):
        services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", init_run=sft)
    Run.objects.filter(id=sft.id).update(status="finished", steps_done=sft.max_steps)
    sft.refresh_from_db()
    grpo = services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", init_run=sft,
                               arguments={"lora_r": 32})
    assert (grpo.base_model, grpo.arguments.lora_r, grpo.arguments.lora_alpha) == (model_dir, 8, 16)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text("{}")
    with pytest.raises(services.LaunchError, match="was trained on"):
        services.run_launch(pool=dataset.pool, recipe_name="studio-hps-only", init_run=sft, base_model=str(elsewhere))
    with pytest.raises(services.LaunchError, match=f"#{grpo.id} continues this run's adapter"):
        services.run_delete(run=sft)


def test_the_commands_freeze_a_dataset_and_launch_sft_and_grpo_from_it(pool, model_dir, capsys):
    call_command("sft_dataset", "--pool", pool.label, "--freeze", "cli")
    assert "froze cli:v1" in capsys.readouterr().out
    call_command("train", kind="sft", dataset="cli", base_model=model_dir, recipe="studio-hps-only",
                 set=["num_train_epochs=1"])
    sft = Run.objects.get()
    assert sft.is_sft and sft.sft_dataset.label == "cli:v1" and sft.pool == pool
    with pytest.raises(CommandError, match="needs --dataset"):
        call_command("train", kind="sft", base_model=model_dir)
    with pytest.raises(CommandError, match="steps come from its dataset"):
        call_command("train", kind="sft", dataset="cli", base_model=model_dir, steps=3)
    with pytest.raises(CommandError, match="no SFT dataset"):
        call_command("train", kind="sft", dataset="cli:v9", base_model=model_dir)
    Run.objects.filter(id=sft.id).update(status="finished", steps_done=sft.max_steps)
    call_command("train", from_run=sft.id, pool=pool.label, recipe="studio-hps-only")
    assert Run.objects.get(init_run=sft).base_model == model_dir


def test_examples_longer_than_the_longest_allowed_are_left_out_not_cut(dataset, tiny_model):
    from transformers import AutoTokenizer

    from training.sft_examples import Example
    from training.trainer.sft import fitting_rows

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rows = [Example(**example).chat() for example in dataset.examples]
    lengths = sorted(len(tokenizer(tokenizer.apply_chat_template(r["prompt"] + r["completion"], tokenize=False,
                                                                 enable_thinking=False)).input_ids) for r in rows)
    kept, left_out = fitting_rows(rows, tokenizer, lengths[0])
    assert (len(kept), left_out) == (lengths.count(lengths[0]), len(rows) - lengths.count(lengths[0]))
    assert fitting_rows(rows, tokenizer, lengths[-1]) == (rows, 0)
