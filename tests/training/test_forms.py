"""The launch form's hyper-parameter fields come from the run arguments' declarations."""
from __future__ import annotations

import pytest
from django import forms

from training.arguments import GENERATION_BACKENDS, LOSS_TYPES, RENDER_SIZES, argument_specs
from training.forms import LaunchForm

pytestmark = pytest.mark.django_db


def launch_form(data=None) -> LaunchForm:
    return LaunchForm(data, recipe_names=["studio-judge-led"], default_base_model="/models/tiny")


def test_the_form_shows_the_arguments_declared_for_it_with_their_bounds_choices_and_help():
    form = launch_form()
    on_form = [s for s in argument_specs() if s.on_form]
    assert list(form.ARGUMENT_FIELDS) == [s.name for s in on_form]
    for spec in on_form:
        field = form.fields[spec.name]
        assert (field.initial, field.label, field.help_text) == (spec.default, spec.label, spec.help)
        if spec.choices is not None:
            assert [value for value, _ in field.choices] == list(spec.choices)
        elif spec.kind in (int, float):
            assert (field.min_value, field.max_value) == (spec.min, spec.max)
    assert [value for value, _ in form.fields["render_size"].choices] == list(RENDER_SIZES)
    assert isinstance(form.fields["mask_truncated_completions"], forms.BooleanField)
    assert "vllm_gpu_memory_utilization" not in form.fields  # declared without on_form: command line only


def test_the_form_shows_the_published_batch_layout_lora_dropout_loss_and_generation_backends():
    form = launch_form()
    initial = {name: form.fields[name].initial for name in (
        "per_device_train_batch_size", "gradient_accumulation_steps", "lora_dropout", "loss_type",
        "mask_truncated_completions", "generation")}
    assert initial == {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 8, "lora_dropout": 0.0,
                       "loss_type": "dapo", "mask_truncated_completions": False, "generation": "auto"}
    assert [value for value, _ in form.fields["generation"].choices] == list(GENERATION_BACKENDS)
    assert [value for value, _ in form.fields["loss_type"].choices] == list(LOSS_TYPES)


def test_the_form_refuses_values_outside_the_declared_bounds_on_the_field_itself():
    form = launch_form({"num_generations": 1, "top_p": 1.5, "render_size": 601, "lr_scheduler_type": "sawtooth"})
    assert not form.is_valid()
    for name in ("num_generations", "top_p", "render_size", "lr_scheduler_type"):
        assert form.errors[name], name


def test_the_forms_arguments_are_typed_values_ready_for_a_launch(pool_and_model):
    pool, model_dir = pool_and_model
    data = {name: field.initial for name, field in launch_form().fields.items() if field.initial is not None}
    data.update(pool=pool.id, base_model=model_dir, subjects=["a peach hibiscus"], render_size="128")
    data.pop("mask_truncated_completions")  # an unticked box is not posted
    data.update(generation="continuous-batching", loss_type="grpo", gradient_accumulation_steps="16")
    form = launch_form(data)
    assert form.is_valid(), form.errors
    arguments = form.arguments()
    assert arguments["render_size"] == 128 and arguments["mask_truncated_completions"] is False
    assert (arguments["generation"], arguments["loss_type"], arguments["gradient_accumulation_steps"]) == (
        "continuous-batching", "grpo", 16)
    # A GRPO launch takes the form's GRPO arguments; SFT's own (its epochs) keep their defaults.
    assert set(arguments) == set(LaunchForm.ARGUMENT_FIELDS) - {"num_train_epochs"}


@pytest.fixture
def pool_and_model(curator, tmp_path):
    from curation.services import grade_set, pool_freeze
    from tests.curation.factories import make_reference

    for tier in ["love"] * 2 + ["okay"] * 2:
        grade_set(reference=make_reference(), curator=curator, tier=tier)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return pool_freeze(name="forms", curator=curator), str(tmp_path / "model")
