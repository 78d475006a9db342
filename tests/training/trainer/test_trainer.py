"""What the trainer hands PEFT: LoRA on the language model of any model class the studio
trains, never on a vision tower, and on the routed experts only when a run asks for it."""
from __future__ import annotations

import pytest

from training.arguments import RunArguments
from training.trainer.grpo import lora_config
from training.trainer.model_loading import EXPERT_PARAMETERS

pytestmark = pytest.mark.slow


def adapted(model_dir: str, args: RunArguments):
    from peft import get_peft_model
    from trl.trainer.utils import create_model_from_path

    return get_peft_model(create_model_from_path(model_dir), lora_config(args))


def expert_wrappers(model) -> dict[str, set[str]]:
    """Module name -> the parameters PEFT wraps with LoRA there (nested wrappers included)."""
    from peft.tuners.lora.layer import ParamWrapper

    found: dict[str, set[str]] = {}
    for name, module in model.named_modules():
        if isinstance(module, ParamWrapper):
            found.setdefault(name.replace(".base_layer", ""), set()).add(module.parameter_name)
    return found


def test_the_vision_tower_gets_no_lora_and_the_experts_none_by_default(tiny_vl_model):
    model = adapted(tiny_vl_model, RunArguments())
    lora = [name for name, _ in model.named_parameters() if "lora_" in name]
    assert lora and all(".language_model." in name for name in lora)
    assert not [name for name in lora if "visual" in name]
    assert {"q_proj", "in_proj_qkv", "out_proj"} <= {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in lora}
    assert expert_wrappers(model) == {}
    assert all(not p.requires_grad for name, p in model.named_parameters() if "visual" in name)


def test_opting_in_puts_lora_on_both_fused_expert_weights_of_every_moe_layer_and_saves_them(tiny_vl_model, tmp_path):
    from safetensors import safe_open
    from transformers import AutoConfig

    model = adapted(tiny_vl_model, RunArguments(lora_target_experts=True, lora_dropout=0.0))
    layers = AutoConfig.from_pretrained(tiny_vl_model).text_config.num_hidden_layers
    wrapped = expert_wrappers(model)
    assert len(wrapped) == layers
    assert all(params == {p.rsplit(".", 1)[-1] for p in EXPERT_PARAMETERS} for params in wrapped.values())
    assert not [name for name in wrapped if "visual" in name]

    model.save_pretrained(tmp_path / "adapter")
    with safe_open(str(tmp_path / "adapter" / "adapter_model.safetensors"), "pt") as saved:
        keys = list(saved.keys())
    experts = [k for k in keys if ".mlp.experts." in k]
    assert len(experts) == layers * 2 * 2  # per layer: two parameters, lora_A and lora_B each
    assert not [k for k in keys if "visual" in k]

