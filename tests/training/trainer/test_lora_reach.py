"""The trainer prints what its LoRA reaches: each parameter family and their share of the model."""
from __future__ import annotations

import logging

import pytest

from tests.training.trainer.test_trainer import adapted
from training.arguments import RunArguments
from training.trainer.lora_reach import family, lora_reach, report

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("name", "expected"), [
    ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", "q_proj"),
    ("base_model.model.model.layers.3.mlp.down_proj.lora_B.default.weight", "down_proj"),
    ("base_model.model.model.language_model.layers.1.mlp.experts.base_layer.lora_A.default.weight", "experts"),
    ("model.embed_tokens.weight", "embed_tokens"),
])
def test_a_parameter_belongs_to_the_module_its_adapter_wraps(name, expected):
    assert family(name) == expected


def test_the_report_names_every_family_the_lora_trains_and_its_share(tiny_model, caplog):
    model = adapted(tiny_model, RunArguments())
    reach = lora_reach(model)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert reach.trainable == trainable and reach.total == sum(p.numel() for p in model.parameters())
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"} <= set(reach.families)
    assert sum(reach.families.values()) == trainable
    with caplog.at_level(logging.INFO, logger="training.trainer.lora_reach"):
        report(model)
    assert f"LoRA trains {trainable:,} of {reach.total:,} parameters" in caplog.text and "q_proj" in caplog.text


def test_experts_opted_in_show_as_their_own_family(tiny_vl_model):
    plain = lora_reach(adapted(tiny_vl_model, RunArguments()))
    with_experts = lora_reach(adapted(tiny_vl_model, RunArguments(lora_target_experts=True, lora_dropout=0.0)))
    assert "experts" not in plain.families and with_experts.families["experts"] > 0
    assert with_experts.share > plain.share
