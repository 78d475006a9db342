"""Run arguments: declared once, validated from the declaration, and what reaches TRL's GRPOConfig."""
from __future__ import annotations

import dataclasses

import pytest

from training.config import RENDER_SIZES, RunArguments, argument_spec, argument_specs


def test_every_argument_is_declared_with_help_and_its_defaults_are_valid():
    specs = argument_specs()
    assert [s.name for s in specs] == [f.name for f in dataclasses.fields(RunArguments)]
    assert all(s.help.strip() for s in specs)
    assert RunArguments().problems() == []


@pytest.mark.parametrize("spec", argument_specs(), ids=lambda s: s.name)
def test_each_argument_refuses_values_outside_its_declared_bounds_and_choices(spec):
    wrong = []
    if spec.min is not None:
        wrong.append(spec.min - 1 if spec.kind is int else spec.min - 1e-9)
    if spec.max is not None:
        wrong.append(spec.max + 1 if spec.kind is int else spec.max * 1.001)
    if spec.choices is not None:
        wrong.append(spec.choices[0] + 1 if spec.kind is int else "surely-not-a-choice")
    wrong.append("text" if spec.kind is not str else 3)
    for value in wrong:
        with pytest.raises(ValueError, match=f"^{spec.name} must be"):
            RunArguments(**{spec.name: value})
    for value in [v for v in (spec.min, spec.max, *(spec.choices or ())) if v is not None]:
        assert getattr(RunArguments(**{spec.name: spec.kind(value)}), spec.name) == value


def test_whole_numbers_must_be_whole_and_numbers_accept_integers():
    with pytest.raises(ValueError, match="num_generations must be a whole number"):
        RunArguments(num_generations=4.5)
    with pytest.raises(ValueError, match="use_vllm must be true or false"):
        RunArguments(use_vllm=1)
    with pytest.raises(ValueError, match="beta must be a number"):
        RunArguments(beta=argument_spec("beta").parse("nan"))
    args = RunArguments(beta=0, learning_rate=1)
    assert (args.beta, args.learning_rate) == (0.0, 1.0) and isinstance(args.beta, float)


def test_all_problems_are_reported_at_once():
    with pytest.raises(ValueError, match="top_p must be between .*; lora_r must be at least 1"):
        RunArguments(top_p=2.0, lora_r=0)


def test_lora_on_the_experts_needs_lora_dropout_0_which_peft_cannot_apply_to_a_parameter():
    with pytest.raises(ValueError, match="lora_target_experts needs lora_dropout 0"):
        RunArguments(lora_target_experts=True, lora_dropout=0.05)
    assert RunArguments(lora_target_experts=True, lora_dropout=0.0).lora_target_experts


def test_the_render_sizes_are_one_list_from_128_to_600():
    assert argument_spec("render_size").choices == RENDER_SIZES
    assert max(RENDER_SIZES) == 600 and 128 in RENDER_SIZES and RunArguments().render_size == 600


def test_stored_arguments_with_keys_that_moved_still_load():
    stored = {**RunArguments(num_generations=4).to_dict(), "length_low_tokens": 10, "length_full_tokens": 20,
              "length_high_tokens": 30, "warp_speed": 9}
    args = RunArguments.from_dict(stored)
    assert args.num_generations == 4 and "length_low_tokens" not in args.to_dict()
    assert RunArguments.from_dict(None) == RunArguments()


@pytest.mark.parametrize(("name", "text", "value"), [
    ("num_generations", "4", 4), ("learning_rate", "1e-3", 1e-3), ("use_vllm", "true", True),
    ("use_vllm", "0", False), ("bf16", "none", None), ("bf16", "yes", True), ("vllm_mode", "server", "server"),
])
def test_command_line_text_is_read_by_the_argument_type(name, text, value):
    assert argument_spec(name).parse(text) == value


@pytest.mark.parametrize(("name", "text", "message"), [
    ("num_generations", "four", "num_generations must be a whole number, not 'four'"),
    ("top_p", "high", "top_p must be a number"),
    ("use_vllm", "maybe", "use_vllm must be true or false"),
    ("use_vllm", "none", "use_vllm must be true or false"),  # only bf16 may be none
])
def test_command_line_text_of_the_wrong_type_is_refused_clearly(name, text, message):
    with pytest.raises(ValueError, match=message):
        argument_spec(name).parse(text)


# -- what reaches TRL ------------------------------------------------------------------------------


def test_grpo_config_gets_every_argument_it_shares_by_name_and_none_of_the_app_only_ones():
    from trl import GRPOConfig

    from training.models import Run
    from training.trainer import grpo_config

    shared = {
        "max_steps": 7, "num_generations": 4, "learning_rate": 1e-3, "warmup_steps": 2, "lr_scheduler_type": "cosine",
        "scale_rewards": "group", "top_p": 0.9, "top_k": 5, "temperature": 0.7, "max_completion_length": 300,
        "beta": 0.01, "use_vllm": True, "vllm_mode": "server", "bf16": False,
    }
    args = RunArguments(**shared, prompts_per_step=2, checkpoint_every=3)
    # A new name clash would show here; report_to reaches GRPOConfig as TRL's list (test_tracking.py).
    assert set(args.shared_with(GRPOConfig)) == set(shared) | {"report_to"}
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=3), args)
    assert {name: getattr(config, name) for name in shared} == shared
    assert (config.per_device_train_batch_size, config.save_steps, config.seed) == (8, 3, 3)
    assert not any(hasattr(config, name) for name in ("render_size", "lora_r", "torch_threads", "checkpoint_every"))


# -- several processes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("arguments", "processes", "layout"), [
    ({}, 1, (8, 1)),
    ({}, 2, (4, 1)),
    ({"num_generations": 4, "prompts_per_step": 2}, 8, (1, 1)),
    ({"num_generations": 6}, 3, (2, 1)),
])
def test_a_steps_completions_are_shared_equally_by_the_processes(arguments, processes, layout):
    from training.config import batch_layout

    shared = batch_layout(RunArguments(**arguments), processes)
    assert (shared.per_device_train_batch_size, shared.gradient_accumulation_steps) == layout
    assert shared.per_device_train_batch_size * shared.gradient_accumulation_steps * processes == \
        RunArguments(**arguments).batch_size


def test_a_number_of_processes_that_does_not_divide_a_steps_completions_is_refused_at_launch():
    with pytest.raises(ValueError, match=r"num_processes 3 must divide a step's 8 completions"):
        RunArguments(num_processes=3)
    assert RunArguments(num_processes=0).problems() == []  # one per visible GPU: counted on the train worker


def test_grpo_config_gives_each_process_its_share_of_the_step():
    from training.models import Run
    from training.trainer import grpo_config

    # Two groups of 4 in two processes; built here in one process, where TRL checks one share is whole groups.
    args = RunArguments(num_generations=4, prompts_per_step=2, num_processes=2)
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=3), args, processes=2)
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps) == (4, 1)
    assert not hasattr(config, "num_processes") and not hasattr(config, "accelerate_config")
