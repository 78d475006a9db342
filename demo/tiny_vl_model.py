"""The tiny Qwen3.5-MoE painter: a vision-language model of the class the published runs
trained (Qwen3.5-35B-A3B), built here at a few hundred thousand parameters, on CPU, with no
download, so the training stack's VL path runs in tests exactly as it runs on a GPU box.

    tokenizer  byte-level BPE trained on the seed sketches with Qwen3.5's own pre-tokenizer
               (a real checkpoint's tokenizer loads as `Qwen3_5Tokenizer`, which rebuilds its
               pre-tokenizer from Qwen's regex whatever tokenizer.json says: the text model's
               line-based BPE would tokenize differently once loaded), plus the vision and
               thinking tokens
    template   ChatML with image/video parts and `enable_thinking` (see VL_CHAT_TEMPLATE)
    model      Qwen3_5MoeForConditionalGeneration: a vision tower, Gated DeltaNet and full
               attention layers, routed experts stored as 3-D fused parameters
               (`mlp.experts.gate_up_proj`, `mlp.experts.down_proj`) beside a shared expert
    processor  Qwen3VLProcessor (image processor + tokenizer + video processor), saved as a
               real checkpoint saves it; the video processor needs torchvision, so a
               machine without it saves the image processor and the tokenizer only
    warm start the text model's SFT (demo.tiny_model.sft_warm_start) on the VL class
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.tiny_model import (
    Architecture,
    Progress,
    TinyModelSpec,
    build_tiny_model,
    count_parameters,
    sampling_config,
)
from demo.tokenizer import EOS_TOKEN, IM_START, PAD_TOKEN

__all__ = [
    "ARCH",
    "VISION_TOKENS",
    "VL_CHAT_TEMPLATE",
    "TinyVLSpec",
    "QUICK_VL_SPEC",
    "build_vl_tokenizer",
    "build_vl_model",
    "build_image_processor",
    "build_processor",
    "save_processing",
    "QWEN3_5_MOE",
    "build_tiny_vl_model",
]

ARCH = "qwen3_5_moe"
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
THINK_TOKENS = ("<think>", "</think>")  # plain added tokens, as in Qwen3.5: they decode with the reply

# ChatML as Qwen3.5 writes it: a message's content is a string or a list of parts (text,
# image, video), each picture a <|vision_start|><|image_pad|><|vision_end|> run that the
# processor widens to the image's patch count. Thinking: the generation prompt opens a
# <think> block, or with enable_thinking=false closes an empty one, as the assistant turns
# are written, so a prompt without thinking is a token prefix of prompt + reply. The
# assistant turn sits inside {% generation %} for TRL's assistant-only loss.
VL_CHAT_TEMPLATE = (
    "{%- macro render(content) -%}"
    "{%- if content is string -%}{{- content -}}"
    "{%- else -%}{%- for part in content -%}"
    "{%- if part['type'] == 'image' or 'image' in part or 'image_url' in part -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'video' or 'video' in part -%}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif 'text' in part -%}{{- part['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}"
    "{%- if message.get('reasoning_content') -%}"
    "{{- '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' -}}"
    "{%- else -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}"
    "{{- render(message['content']) + '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- render(message['content']) + '<|im_end|>' + '\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n' -}}"
    "{%- else -%}{{- '<think>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)


@dataclass
class TinyVLSpec(TinyModelSpec):
    """The text model's spec (shared fields keep their meaning; `intermediate_size` is the
    shared expert's) plus the MoE and vision shapes. Defaults: the demo-sized VL model."""

    vocab_size: int = 8192
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 4
    full_attention_interval: int = 4  # layers 1-3 Gated DeltaNet, layer 4 full attention, as Qwen3.5
    linear_num_key_heads: int = 2
    linear_num_value_heads: int = 4
    linear_key_head_dim: int = 32
    linear_value_head_dim: int = 32
    num_experts: int = 8
    num_experts_per_tok: int = 2
    moe_intermediate_size: int = 128
    vision_depth: int = 2
    vision_hidden_size: int = 64
    vision_intermediate_size: int = 128
    vision_num_heads: int = 2
    vision_patch_size: int = 16
    vision_position_embeddings: int = 256  # a 16x16 grid, interpolated for other sizes
    image_max_pixels: int = 256 * 256  # the processor shrinks larger pictures to this
    # An example is ~4x the text model's tokens (below): 100 sketches x 2 epochs is about half
    # the text demo's SFT tokens (200 x 8). Enough to show the class trains; the text model
    # stays the demo painter.
    sft_sketches: int = 100
    # The text model is the demo painter; revision and keep examples are its (each is a draft
    # rendered at build time: 32 keeps cost ~100 s of Chromium on 2 cores).
    sft_revisions: int = 0
    sft_keeps: int = 0
    sft_epochs: float = 2.0
    # Qwen's pre-tokenizer splits every digit and most punctuation: a seed sketch is ~2.4K
    # tokens here (~2.7 characters a token) against ~560 with the text model's line BPE.
    sft_max_length: int = 4096


# The tests' model: one layer of each attention kind, four experts, a one-block vision tower.
QUICK_VL_SPEC = TinyVLSpec(
    vocab_size=4096, hidden_size=64, intermediate_size=64, num_hidden_layers=2, full_attention_interval=2,
    num_attention_heads=2, num_key_value_heads=1, head_dim=32,
    linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    vision_depth=1, vision_hidden_size=32, vision_intermediate_size=64, vision_num_heads=2,
    vision_position_embeddings=64, image_max_pixels=128 * 128,
    sft_sketches=12, sft_epochs=1.0, sft_learning_rate=3e-3, sft_batch_size=4,
)


def build_vl_tokenizer(texts, *, vocab_size: int, max_length: int):
    """A BPE trained on `texts` through Qwen3.5's tokenizer class (its pre-tokenizer, NFC
    normaliser and byte-level decoder), with ChatML, vision and thinking tokens."""
    from tokenizers import AddedToken
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer

    specials = [AddedToken(t, special=True, normalized=False) for t in (IM_START, EOS_TOKEN, *VISION_TOKENS)]
    tokenizer = Qwen3_5Tokenizer().train_new_from_iterator(list(texts), vocab_size, new_special_tokens=specials)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    tokenizer.add_special_tokens({"eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN})
    tokenizer.chat_template = VL_CHAT_TEMPLATE
    tokenizer.model_max_length = max_length
    tokenizer.padding_side = "left"  # batched generation pads prompts on the left
    return tokenizer


def build_image_processor(spec: TinyVLSpec):
    """Qwen's image processor (the PIL one: torchvision is not needed) at the tower's patch size."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        patch_size=spec.vision_patch_size, merge_size=2, temporal_patch_size=2,
        min_pixels=(spec.vision_patch_size * 2) ** 2, max_pixels=spec.image_max_pixels,
    )


def build_processor(spec: TinyVLSpec, tokenizer):
    """Qwen3VLProcessor, as Qwen3.5 checkpoints ship it, or None where its video processor
    cannot exist (no torchvision on this machine)."""
    from transformers.utils import is_torchvision_available

    if not is_torchvision_available():
        return None
    from transformers import Qwen3VLProcessor, Qwen3VLVideoProcessor

    video = Qwen3VLVideoProcessor(patch_size=spec.vision_patch_size, merge_size=2, temporal_patch_size=2)
    return Qwen3VLProcessor(image_processor=build_image_processor(spec), tokenizer=tokenizer,
                            video_processor=video, chat_template=VL_CHAT_TEMPLATE)


def build_vl_model(spec: TinyVLSpec, tokenizer):
    """An untrained Qwen3_5MoeForConditionalGeneration sized by `spec`."""
    import torch
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    rotary_pairs = int(spec.head_dim * 0.25) // 2  # Qwen3.5 rotates a quarter of each head
    mrope = [rotary_pairs - 2 * (rotary_pairs // 3), rotary_pairs // 3, rotary_pairs // 3]  # time, height, width
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS}
    config = Qwen3_5MoeConfig(
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": spec.hidden_size, "num_hidden_layers": spec.num_hidden_layers,
            "num_attention_heads": spec.num_attention_heads, "num_key_value_heads": spec.num_key_value_heads,
            "head_dim": spec.head_dim, "full_attention_interval": spec.full_attention_interval,
            "linear_num_key_heads": spec.linear_num_key_heads, "linear_num_value_heads": spec.linear_num_value_heads,
            "linear_key_head_dim": spec.linear_key_head_dim, "linear_value_head_dim": spec.linear_value_head_dim,
            "num_experts": spec.num_experts, "num_experts_per_tok": spec.num_experts_per_tok,
            "moe_intermediate_size": spec.moe_intermediate_size,
            "shared_expert_intermediate_size": spec.intermediate_size,
            "max_position_embeddings": spec.max_position_embeddings,
            "rope_parameters": {"rope_type": "default", "rope_theta": spec.rope_theta, "partial_rotary_factor": 0.25,
                                "mrope_section": mrope, "mrope_interleaved": True},
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "bos_token_id": None,
        },
        vision_config={
            "depth": spec.vision_depth, "hidden_size": spec.vision_hidden_size,
            "intermediate_size": spec.vision_intermediate_size, "num_heads": spec.vision_num_heads,
            "patch_size": spec.vision_patch_size, "spatial_merge_size": 2, "temporal_patch_size": 2,
            "out_hidden_size": spec.hidden_size, "num_position_embeddings": spec.vision_position_embeddings,
        },
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(spec.seed)
    model = Qwen3_5MoeForConditionalGeneration(config)
    model.generation_config = sampling_config(tokenizer)
    return model


def save_processing(out: Path, spec: TinyVLSpec, tokenizer) -> dict[str, Any]:
    """The processor's files, as a real checkpoint has them."""
    processor = build_processor(spec, tokenizer)
    if processor is not None:
        processor.save_pretrained(out)
        return {"processor": type(processor).__name__}
    tokenizer.save_pretrained(out)
    build_image_processor(spec).save_pretrained(out)
    return {"processor": "tokenizer + image processor (no torchvision here for the video processor)"}


QWEN3_5_MOE = Architecture(
    name=ARCH,
    tokenizer=lambda texts, spec: build_vl_tokenizer(texts, vocab_size=spec.vocab_size,
                                                     max_length=spec.max_position_embeddings),
    model=lambda spec, tokenizer: build_vl_model(spec, tokenizer),
    save_processing=save_processing,
    figures=lambda model: {"vision_parameters": count_parameters(model.model.visual)},
    # The trainer and the evaluation prompt without thinking: so does the SFT.
    chat_template_kwargs={"enable_thinking": False},
)


def build_tiny_vl_model(
    out_dir: str | Path, spec: TinyVLSpec | None = None, progress: Progress | None = None
) -> Path:
    """The whole build (demo.tiny_model.build_tiny_model) of the Qwen3.5-MoE class: loads
    with AutoModelForImageTextToText / AutoProcessor .from_pretrained(out_dir)."""
    return build_tiny_model(out_dir, spec or TinyVLSpec(), progress, arch=QWEN3_5_MOE)
