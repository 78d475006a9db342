"""Run arguments: declared once, validated from the declaration, and what reaches TRL's GRPOConfig."""
from __future__ import annotations

import dataclasses

import pytest

from training.arguments import (
    GENERATION_BACKENDS,
    LOSS_TYPES,
    RENDER_SIZES,
    VLLM_SERVER_URL,
    RunArguments,
    argument_spec,
    argument_specs,
)


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
        assert spec.problem(spec.kind(value)) is None  # alone: with the others it may break the batch layout


def test_whole_numbers_must_be_whole_and_numbers_accept_integers():
    with pytest.raises(ValueError, match="num_generations must be a whole number"):
        RunArguments(num_generations=4.5)
    with pytest.raises(ValueError, match="mask_truncated_completions must be true or false"):
        RunArguments(mask_truncated_completions=1)
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


def test_the_defaults_are_the_published_batch_layout_lora_dropout_and_loss():
    args = RunArguments()
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.num_generations) == (1, 8, 8)
    assert (args.generation_batch_size, args.prompts_per_step) == (8, 1)
    assert (args.lora_dropout, args.loss_type, args.mask_truncated_completions) == (0.0, "dapo", False)
    assert (args.generation, args.vllm_server_base_url) == ("auto", VLLM_SERVER_URL)


@pytest.mark.parametrize(("layout", "generations", "prompts"), [((1, 8), 8, 1), ((8, 1), 8, 1), ((2, 8), 8, 2),
                                                                 ((1, 8), 4, 2), ((4, 3), 6, 2)])
def test_a_step_trains_on_the_per_device_batch_times_the_accumulation_in_whole_groups(layout, generations, prompts):
    args = RunArguments(per_device_train_batch_size=layout[0], gradient_accumulation_steps=layout[1],
                        num_generations=generations)
    assert (args.generation_batch_size, args.prompts_per_step) == (layout[0] * layout[1], prompts)


def test_a_batch_layout_that_splits_a_group_is_refused_with_its_arithmetic():
    with pytest.raises(ValueError, match=r"^per_device_train_batch_size × gradient_accumulation_steps "
                                         r"\(1 × 4 = 4\) must be a multiple of num_generations \(8\)"):
        RunArguments(gradient_accumulation_steps=4)
    with pytest.raises(ValueError, match=r"^gradient_accumulation_steps must be between 1 and 1024$"):
        RunArguments(gradient_accumulation_steps=0, num_generations=8)  # its own problem first, alone


def test_the_vllm_server_needs_an_http_url_and_the_loss_types_are_trls_that_need_nothing_else():
    with pytest.raises(ValueError, match="vllm_server_base_url must be an http:// or https:// URL"):
        RunArguments(generation="vllm-server", vllm_server_base_url="127.0.0.1:8002")
    assert RunArguments(generation="vllm-server", vllm_server_base_url="https://gpu-box:8002").problems() == []
    assert RunArguments(generation="generate", vllm_server_base_url="").problems() == []  # unused there
    import inspect

    from trl.trainer import grpo_config as trl_grpo_config

    documented = inspect.getsource(trl_grpo_config.GRPOConfig)
    assert all(f'"{loss}"' in documented or f"'{loss}'" in documented for loss in LOSS_TYPES)
    assert "luspo" not in LOSS_TYPES  # needs importance_sampling_level="sequence", which a run does not set


def test_a_run_stored_with_use_vllm_and_prompts_per_step_loads_as_it_ran():
    old = {**RunArguments(num_generations=4).to_dict(), "use_vllm": True, "vllm_mode": "server", "prompts_per_step": 2}
    for key in ("generation", "per_device_train_batch_size", "gradient_accumulation_steps"):
        del old[key]
    args = RunArguments.from_dict(old)
    assert args.generation == "vllm-server"
    # one batch of G × prompts_per_step completions, no accumulation: the layout the run trained with
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.prompts_per_step) == (8, 1, 2)
    assert RunArguments.from_dict({"use_vllm": False, "vllm_mode": "colocate"}).generation == "generate"
    assert RunArguments.from_dict({"use_vllm": True, "vllm_mode": "colocate"}).generation == "vllm-colocate"
    assert RunArguments.from_dict({"prompts_per_step": 1}).generation_batch_size == 8
    kept = RunArguments.from_dict({"generation": "continuous-batching", "use_vllm": True,
                                   "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4, "prompts_per_step": 3})
    assert (kept.generation, kept.generation_batch_size) == ("continuous-batching", 8)  # the new keys win


@pytest.mark.parametrize(("name", "text", "value"), [
    ("num_generations", "4", 4), ("learning_rate", "1e-3", 1e-3), ("mask_truncated_completions", "true", True),
    ("mask_truncated_completions", "0", False), ("bf16", "none", None), ("bf16", "yes", True),
    ("generation", "vllm-server", "vllm-server"), ("vllm_max_model_length", "none", None),
    ("vllm_server_base_url", " http://gpu:8002 ", "http://gpu:8002"),
])
def test_command_line_text_is_read_by_the_argument_type(name, text, value):
    assert argument_spec(name).parse(text) == value


@pytest.mark.parametrize(("name", "text", "message"), [
    ("num_generations", "four", "num_generations must be a whole number, not 'four'"),
    ("top_p", "high", "top_p must be a number"),
    ("mask_truncated_completions", "maybe", "mask_truncated_completions must be true or false"),
    ("mask_truncated_completions", "none", "mask_truncated_completions must be true or false"),  # not optional
])
def test_command_line_text_of_the_wrong_type_is_refused_clearly(name, text, message):
    with pytest.raises(ValueError, match=message):
        argument_spec(name).parse(text)


# -- what reaches TRL ------------------------------------------------------------------------------


def test_grpo_config_gets_every_argument_it_shares_by_name_and_none_of_the_app_only_ones():
    from trl import GRPOConfig

    from training.models import Run
    from training.trainer.grpo import grpo_config

    shared = {
        "max_steps": 7, "num_generations": 4, "learning_rate": 1e-3, "warmup_steps": 2, "lr_scheduler_type": "cosine",
        "scale_rewards": "group", "top_p": 0.9, "top_k": 5, "temperature": 0.7, "max_completion_length": 300,
        "beta": 0.01, "bf16": False, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4,
        "loss_type": "dr_grpo", "mask_truncated_completions": True, "vllm_server_base_url": "http://gpu:8002",
        "vllm_gpu_memory_utilization": 0.5, "vllm_enable_sleep_mode": True, "vllm_max_model_length": 4096,
        "vllm_tensor_parallel_size": 1, "hub_strategy": "every_save", "hub_private_repo": False,
        "hub_model_id": "studio/run-config-test",
    }
    args = RunArguments(**shared, checkpoint_every=3)
    # A new name clash would show here; report_to reaches GRPOConfig as TRL's list (test_tracking.py).
    assert set(args.shared_with(GRPOConfig)) == set(shared) | {"report_to"}
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=3), args)
    assert {name: getattr(config, name) for name in shared} == shared
    assert (config.save_steps, config.seed) == (3, 3)
    assert (config.generation_batch_size, config.steps_per_generation) == (8, 4)  # TRL's arithmetic is ours
    assert not any(hasattr(config, name) for name in ("render_size", "lora_r", "torch_threads", "checkpoint_every",
                                                      "generation"))


@pytest.mark.parametrize(("generation", "use_vllm", "vllm_mode", "continuous"), [
    ("generate", False, None, False), ("compiled", False, None, False), ("continuous-batching", False, None, True),
    ("vllm-colocate", True, "colocate", False), ("vllm-server", True, "server", False),
])
def test_each_generation_backend_sets_trls_switches(generation, use_vllm, vllm_mode, continuous):
    from training.models import Run
    from training.trainer.grpo import grpo_config

    assert generation in GENERATION_BACKENDS
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=0), RunArguments(generation=generation))
    assert (config.use_vllm, config.use_transformers_continuous_batching) == (use_vllm, continuous)
    if vllm_mode:
        assert config.vllm_mode == vllm_mode


def test_continuous_batching_gets_a_cache_for_one_processs_share_of_a_step_not_the_free_memory():
    from training.models import Run
    from training.trainer.backends import CB_CPU_BATCH_TOKENS, CB_GPU_BATCH_TOKENS, continuous_batching_config
    from training.trainer.grpo import grpo_config

    args = RunArguments(generation="continuous-batching", max_completion_length=1024, turns=2)
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=0), args)
    cache = config.transformers_continuous_batching_config
    # 8 completions a step, each up to 2 turns x (2048 prompt + 1024 completion) tokens in 256-token pages
    assert cache == {"num_blocks": 8 * 24, "max_batch_tokens": CB_CPU_BATCH_TOKENS}
    # two processes: each holds its half of the step
    assert continuous_batching_config(args, 2, on_gpu=False)["num_blocks"] == 4 * 24
    # a GPU: the same cache, not TRL's half of the card, and CUDA graphs
    assert continuous_batching_config(args, 1, on_gpu=True) == {
        "num_blocks": 8 * 24, "max_batch_tokens": CB_GPU_BATCH_TOKENS, "use_cuda_graph": True}
    plain = grpo_config(Run(output_dir="/tmp/run-config-test", seed=0), RunArguments(generation="generate"))
    assert not plain.transformers_continuous_batching_config  # generate: nothing to size


def test_the_compiled_backend_sizes_one_static_cache_for_every_call():
    from training.models import Run
    from training.trainer.grpo import grpo_config

    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=0),
                         RunArguments(generation="compiled", max_completion_length=1000, turns=2))
    assert config.cache_implementation == "static"
    assert config.generation_kwargs == {"max_cache_len": 6144}  # 2 × (2048 + 1000) = 6096, in 256-token pages


def test_auto_prefers_what_was_measured_fastest_on_the_box_then_vllm_then_compiled():
    from training.trainer.backends import auto_candidates, unresolved_auto

    assert [b for b, _ in auto_candidates(cuda=False, vllm=True, measured={"compiled": 900.0})] == ["generate"]
    assert [b for b, _ in auto_candidates(cuda=True, vllm=False, measured={})] == ["compiled", "generate"]
    assert [b for b, _ in auto_candidates(cuda=True, vllm=True, measured={})] == ["vllm-colocate", "compiled", "generate"]
    measured = {"generate": 150.0, "compiled": 2900.0, "vllm-colocate": 2100.0, "auto": 5.0}
    chosen, why = auto_candidates(cuda=True, vllm=True, measured=measured)[0]
    assert chosen == "compiled" and "fastest measured on this box for this model: 2,900 tokens/s" in why
    assert [b for b, _ in auto_candidates(cuda=True, vllm=False, measured=measured)] == ["compiled", "generate"]
    assert (unresolved_auto(on_gpu=False), unresolved_auto(on_gpu=True)) == ("generate", "compiled")


# -- several processes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("arguments", "processes", "layout"), [
    ({}, 1, (1, 8)),
    ({}, 2, (1, 4)),
    ({"num_generations": 4}, 8, (1, 1)),
    ({"num_generations": 6, "per_device_train_batch_size": 6, "gradient_accumulation_steps": 1}, 3, (2, 1)),
    ({"num_generations": 6, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 3}, 2, (3, 1)),
])
def test_a_steps_completions_are_shared_equally_by_the_processes(arguments, processes, layout):
    from training.arguments import batch_layout

    shared = batch_layout(RunArguments(**arguments), processes)
    assert (shared.per_device_train_batch_size, shared.gradient_accumulation_steps) == layout
    assert shared.per_device_train_batch_size * shared.gradient_accumulation_steps * processes == \
        RunArguments(**arguments).generation_batch_size


def test_a_number_of_processes_that_does_not_divide_a_steps_completions_is_refused_at_launch():
    with pytest.raises(ValueError, match=r"num_processes 3 must divide a step's 8 completions"):
        RunArguments(num_processes=3)
    assert RunArguments(num_processes=0).problems() == []  # one per visible GPU: counted on the train worker


def test_grpo_config_gives_each_process_its_share_of_the_step():
    from training.models import Run
    from training.trainer.grpo import grpo_config

    # Two groups of 4 (1 × 8) in two processes: 1 × 4 each; built here in one process, where TRL
    # checks that one share is whole groups.
    args = RunArguments(num_generations=4, num_processes=2)
    config = grpo_config(Run(output_dir="/tmp/run-config-test", seed=3), args, processes=2)
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps) == (1, 4)
    assert not hasattr(config, "num_processes") and not hasattr(config, "accelerate_config")
