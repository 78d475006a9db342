"""The tiny Qwen3.5-MoE vision-language painter: its tokenizer and chat template, and a quick
build that loads by path like a real Qwen3.5 checkpoint. No database, no network."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from demo.tiny_model import SPEC_FILE, sft_examples
from demo.tiny_vl_model import QUICK_VL_SPEC, VISION_TOKENS, TinyVLSpec, build_vl_tokenizer
from demo.tokenizer import EOS_TOKEN, tokenizer_corpus
from paintenv.prompts import SUBJECTS, build_messages


@pytest.fixture(scope="module")
def examples():
    return sft_examples(4)


@pytest.fixture(scope="module")
def tokenizer(examples):
    return build_vl_tokenizer(tokenizer_corpus(examples), vocab_size=2048, max_length=8192)


def test_the_chat_template_turns_an_image_part_into_the_vision_tokens_and_keeps_text_parts(tokenizer):
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which is better?"}]}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert text == "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Which is better?<|im_end|>\n"
    for token in VISION_TOKENS:
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1


def test_without_thinking_the_generation_prompt_closes_an_empty_think_block_and_with_it_opens_one(tokenizer):
    messages = build_messages(SUBJECTS[0])
    quiet = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    thinking = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert quiet.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert thinking.endswith("<|im_start|>assistant\n<think>\n")


def test_a_prompt_without_thinking_is_a_token_prefix_of_prompt_plus_reply_so_trl_masks_cleanly(tokenizer, examples):
    for ex in examples[:2]:
        prompt = tokenizer.apply_chat_template(ex["prompt"], add_generation_prompt=True, tokenize=True,
                                               return_dict=True, enable_thinking=False)["input_ids"]
        full = tokenizer.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=True, return_dict=True,
                                             enable_thinking=False, return_assistant_tokens_mask=True)
        assert full["input_ids"][: len(prompt)] == prompt
        trained = [i for i, m in zip(full["input_ids"], full["assistant_masks"]) if m]
        assert trained[-1] == tokenizer.eos_token_id  # the model learns to stop


# ---------------------------------------------------------------------------------------
# A quick build (slow: real SFT on CPU)


def test_the_build_saves_a_qwen3_5_moe_checkpoint_that_loads_by_path_with_fused_experts_and_a_vision_tower(tiny_vl_model):
    from safetensors import safe_open
    from transformers import AutoConfig, AutoTokenizer
    from trl.trainer.utils import create_model_from_path

    config = AutoConfig.from_pretrained(tiny_vl_model)
    assert config.model_type == "qwen3_5_moe"
    model = create_model_from_path(tiny_vl_model)  # how GRPOTrainer loads a model given by path
    assert type(model).__name__ == "Qwen3_5MoeForConditionalGeneration"
    text = config.text_config
    # Loaded, the routed experts are one 3-D parameter per projection, not an nn.Linear per
    # expert: what PEFT's target_parameters must name.
    experts = model.model.language_model.layers[0].mlp.experts
    assert experts.gate_up_proj.shape == (text.num_experts, 2 * text.moe_intermediate_size, text.hidden_size)
    assert experts.down_proj.shape == (text.num_experts, text.hidden_size, text.moe_intermediate_size)
    # Saved, they are per expert, as the published Qwen3.5 checkpoints store them (transformers
    # fuses them on load and splits them again on save).
    with safe_open(str(Path(tiny_vl_model) / "model.safetensors"), "pt") as weights:
        keys = set(weights.keys())
    assert {f"model.language_model.layers.0.mlp.experts.{e}.gate_proj.weight" for e in range(text.num_experts)} <= keys
    assert any(k.startswith("model.visual.blocks.0.") for k in keys)
    assert set(text.layer_types) == {"linear_attention", "full_attention"}
    assert text.output_router_logits is False  # as checkpoints ship it, whatever the SFT set

    # AutoTokenizer loads a Qwen3.5 checkpoint's tokenizer as Qwen3_5Tokenizer, with Qwen's
    # pre-tokenizer: the built one was trained through it, so a sketch encodes the same.
    tokenizer = AutoTokenizer.from_pretrained(tiny_vl_model)
    assert type(tokenizer).__name__ == "Qwen3_5Tokenizer" and tokenizer.eos_token == EOS_TOKEN
    sketch = sft_examples(1)[0]["completion"][0]["content"]
    ids = tokenizer(sketch, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == sketch
    assert len(sketch) / len(ids) > 2  # a real BPE, not bytes

    info = json.loads((Path(tiny_vl_model) / SPEC_FILE).read_text())
    assert info["arch"] == "qwen3_5_moe" and info["build"]["vision_parameters"] > 0


def test_the_vision_tower_reads_a_picture_through_the_image_processor(tiny_vl_model):
    import torch
    from PIL import Image
    from transformers import AutoImageProcessor, AutoTokenizer
    from trl.trainer.utils import create_model_from_path

    tokenizer = AutoTokenizer.from_pretrained(tiny_vl_model)
    images = AutoImageProcessor.from_pretrained(tiny_vl_model)(images=[Image.new("RGB", (96, 64), "red")],
                                                               return_tensors="pt")
    merged = int(images["image_grid_thw"][0].prod()) // 4  # 2x2 patches merge into one token
    text = tokenizer.apply_chat_template([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}],
                                         add_generation_prompt=True, tokenize=False, enable_thinking=False)
    text = text.replace("<|image_pad|>", "<|image_pad|>" * merged)
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    # What Qwen3VLProcessor adds (it needs torchvision for its video half): 1 marks an image token.
    inputs["mm_token_type_ids"] = (inputs["input_ids"] == tokenizer.convert_tokens_to_ids("<|image_pad|>")).long()
    model = create_model_from_path(tiny_vl_model)
    with torch.no_grad():
        seen = model(**inputs, **images).logits[0, -1]
        blind = model(**inputs, pixel_values=torch.zeros_like(images["pixel_values"]),
                      image_grid_thw=images["image_grid_thw"]).logits[0, -1]
    assert seen.shape == (len(tokenizer),)
    assert not torch.allclose(seen, blind)  # the picture reaches the language model


def test_the_vl_specs_render_no_drafts_at_build_time():
    # Revision and keep examples belong to the text model (the demo painter); each is a draft
    # rendered while building, which the VL model's SFT has no use for.
    for spec in (TinyVLSpec(), QUICK_VL_SPEC):
        assert spec.sft_revisions == 0 and spec.sft_keeps == 0


@pytest.mark.slow
def test_the_build_command_builds_the_vl_arch_and_reports_its_experts_and_vision_tower(tmp_path):
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command("build_tiny_model", "--arch", "qwen3_5_moe", "--quick", "--sketches", "4",
                 "--out", str(tmp_path / "vl"), "--samples", "0", stdout=out, stderr=err)
    report = out.getvalue()
    assert "building the tiny qwen3_5_moe painter" in report
    assert "4 routed experts (2 a token) + a shared one per layer; vision tower" in report, report
    assert json.loads((tmp_path / "vl" / "config.json").read_text())["model_type"] == "qwen3_5_moe"
