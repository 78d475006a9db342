"""The trainer's own generation (training/trainer/generation.py): the adapter folded into the weights
for decoding gives the unfolded model's next-token logits and leaves the base weights bit-identical
step after step; the compiled backend decodes from one static cache and compiles the decode step
(forced here on a CPU, where transformers does not compile by itself) from the current weights."""
from __future__ import annotations

import tempfile

import pytest
import torch

from training.arguments import RunArguments
from training.trainer.generation import FoldedWeights, StudioGRPOTrainer, foldable_layers
from training.trainer.lora_reach import lora_config
from training.trainer.trl_config import grpo_config_of

PROMPT = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.scaleBrushes(3);\n"


def adapted(model_dir: str, dtype=torch.float32, *, args: RunArguments | None = None, seed: int = 0):
    """The tiny model with the run's LoRA, its B matrices random (a trained adapter, not the zero start)."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype), lora_config(args or RunArguments()))
    for name, parameter in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(parameter, std=0.05)
    return model.eval()


def base_weights(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters() if "lora_" not in name}


def bit_identical(before: dict[str, torch.Tensor], model) -> bool:
    return all(torch.equal(before[name], p) for name, p in model.named_parameters() if "lora_" not in name)


def prompt_ids(model_dir: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)(PROMPT, return_tensors="pt").input_ids


# Tolerances: float32 folds to within rounding (measured 4.8e-7 on logits up to 0.65), the same next
# token everywhere; bf16 rounds W + BA once to 8 bits of mantissa where the unfolded model adds in
# float32 after a bf16 matmul (measured 0.0063 on logits up to 0.70), which can flip the argmax
# of this random model where two logits tie within that.
@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float32, 1e-5), (torch.bfloat16, 0.02)])
def test_folding_gives_the_unfolded_models_next_token_logits_and_restores_every_bit(tiny_model, dtype, tolerance):
    model = adapted(tiny_model, dtype)
    ids = prompt_ids(tiny_model)
    before = base_weights(model)
    layers = foldable_layers(model)
    with torch.no_grad():
        unfolded = model(ids).logits.float()
        with FoldedWeights().folded(model) as count:
            folded = model(ids).logits.float()
            assert all(layer.merged for layer in layers) and foldable_layers(model) == []
            changed = not bit_identical(before, model)
        after = model(ids).logits.float()
    assert count == len(layers) == 14 and changed  # 2 layers × q, k, v, o, gate, up, down
    assert (folded - unfolded).abs().max().item() <= tolerance
    if dtype == torch.float32:
        assert torch.equal(folded.argmax(-1), unfolded.argmax(-1))
    assert torch.equal(after, unfolded) and bit_identical(before, model)
    assert not any(layer.merged for layer in foldable_layers(model))


def test_peft_s_own_merge_and_unmerge_would_drift_which_the_check_sees(tiny_model):
    """Why the originals are copied back: adding and subtracting the delta in the weights' dtype
    does not give the same bits back (this is what the check above would catch)."""
    model = adapted(tiny_model, torch.bfloat16)
    before = base_weights(model)
    model.merge_adapter()
    model.unmerge_adapter()
    assert not bit_identical(before, model)


def test_layers_peft_wraps_otherwise_stay_unfolded_and_still_count(tiny_vl_model):
    from peft.tuners.lora.layer import ParamWrapper

    model = adapted(tiny_vl_model, args=RunArguments(lora_target_experts=True, lora_dropout=0.0))
    experts = [m for m in model.modules() if isinstance(m, ParamWrapper)]
    before = base_weights(model)
    ids = torch.tensor([[5, 17, 42, 9, 100, 7]])
    with torch.no_grad():
        unfolded = model(input_ids=ids).logits
        with FoldedWeights().folded(model) as count:
            folded = model(input_ids=ids).logits
            assert experts and not any(m.merged for m in experts)
    assert count == len(foldable_layers(model)) > 0
    assert (folded - unfolded).abs().max().item() <= 1e-5
    assert bit_identical(before, model)


def gate_free_reward(prompts, completions, completion_ids, **kwargs):
    """A reward that varies within a group (so every step has an advantage and a gradient)."""
    return [float(sum(ids) % 7) for ids in completion_ids]


gate_free_reward.__name__ = "varied"


def train(model_dir: str, generation: str, *, steps: int = 3, force_compile: bool = False, **changes):
    from datasets import Dataset

    from paintenv.prompts import SUBJECTS, build_messages, make_subject

    args = RunArguments(max_steps=steps, generation=generation, max_completion_length=48, checkpoint_every=1000,
                        warmup_steps=0, learning_rate=1e-2, **changes)
    output = tempfile.mkdtemp(prefix="generation-test-")
    trainer = StudioGRPOTrainer(
        model=model_dir, reward_funcs=gate_free_reward, args=grpo_config_of(args, output_dir=output, seed=0),
        train_dataset=Dataset.from_list([{"prompt": build_messages(make_subject(SUBJECTS[0].text))}] * steps),
        peft_config=lora_config(args), fold_adapter=True, compile_decode=generation == "compiled",
    )
    if force_compile:
        trainer.generation_config.compile_config._compile_all_devices = True  # transformers compiles on GPUs only
    return trainer


@pytest.mark.slow
@pytest.mark.parametrize("generation", ["generate", "compiled", "continuous-batching"])
def test_grpo_steps_generate_with_the_folded_policy_and_leave_the_base_weights_bit_identical(
        tiny_model, generation, one_torch_thread):
    trainer = train(tiny_model, generation)
    before = base_weights(trainer.model)
    lora_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}
    trainer.train()
    assert bit_identical(before, trainer.model)
    assert any(not torch.equal(lora_before[n], p) for n, p in trainer.model.named_parameters() if "lora_B" in n)
    logged = [entry for entry in trainer.state.log_history if "ours/tokens_per_s" in entry]
    assert [entry["step"] for entry in logged] == [1, 2, 3]
    assert all(entry["ours/completion_tokens"] > 0 and entry["ours/tokens_per_s"] > 0 for entry in logged)
    assert all(0 <= entry["ours/fold_s"] < entry["ours/completion_tokens"] / entry["ours/tokens_per_s"]
               for entry in logged)
    if generation == "compiled":
        assert trainer.generation_config.cache_implementation == "static"
        assert trainer.generation_config.max_cache_len == 2304  # 2,048 + 48, in 256-token pages
        assert not trainer.generation_config.disable_compile


@pytest.mark.slow
def test_the_compiled_decode_step_reads_each_steps_folded_weights(tiny_model, one_torch_thread):
    """Compiled once (forced on this CPU; ~25 s cold), then two more steps without compiling again,
    and greedy decoding through the compiled step matches the eager unfolded policy's after training."""
    import torch._dynamo
    from torch._dynamo.utils import counters
    from transformers import TrainerCallback

    torch._dynamo.reset()
    counters.clear()
    graphs: list[int] = []  # the graphs Dynamo has compiled, at the end of each step

    class CountGraphs(TrainerCallback):
        def on_step_end(self, *args, **kwargs):
            graphs.append(counters["stats"]["unique_graphs"])

    trainer = train(tiny_model, "compiled", force_compile=True)
    trainer.add_callback(CountGraphs())
    trainer.train()
    assert graphs[0] > 0 and graphs == [graphs[0]] * 3  # compiled in the first step, reused by the next two
    assert trainer.compile_failed == ""

    # Greedy through the step compiled in step 1 (the group's batch, the run's cache length), so
    # it reads the weights that three updates have moved since: a compile baking weights in fails.
    model = trainer.model
    ids = prompt_ids(tiny_model)
    greedy = {"max_new_tokens": 24, "do_sample": False, "cache_implementation": "static", "disable_compile": False,
              "max_cache_len": 2304, "pad_token_id": trainer.processing_class.pad_token_id}
    with torch.no_grad(), trainer._folded_weights.folded(model):
        compiled = model.generate(input_ids=ids.repeat(trainer.num_generations, 1),
                                  compile_config=trainer.generation_config.compile_config, **greedy)
    assert counters["stats"]["unique_graphs"] == graphs[0]  # not compiled again
    with torch.no_grad():
        eager = model.generate(input_ids=ids, max_new_tokens=24, do_sample=False,
                               pad_token_id=trainer.processing_class.pad_token_id)
    assert all(torch.equal(row, eager[0]) for row in compiled)


def test_a_decode_step_that_fails_to_compile_falls_back_to_eager_decoding_once(tiny_model, monkeypatch, caplog):
    trainer = train(tiny_model, "compiled", steps=1, force_compile=True)
    calls = []

    def broken_compile(self, compile_config):
        calls.append(compile_config)
        raise RuntimeError("inductor could not lower this graph")

    monkeypatch.setattr(type(trainer.model.get_base_model()), "get_compiled_call", broken_compile)
    trainer.train()
    assert len(calls) == 1 and trainer.generation_config.disable_compile
    assert trainer.compile_failed == "RuntimeError: inductor could not lower this graph"
    assert "compiling the decode step failed; generating eagerly from here on" in caplog.text
    assert [e["ours/completion_tokens"] for e in trainer.state.log_history if "ours/completion_tokens" in e] == [384.0]
