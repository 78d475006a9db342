"""Models of a preset's shape with random weights, made on the box: a lent GPU machine has no Hub.

Speed and memory depend on the shapes, not on what the weights learned, so a Qwen3-4B-shaped
policy and a Qwen2-VL-7B-shaped HPSv3 stand in for the real ones. The policy's tokenizer is a
word-level one with the preset's whole vocabulary (the studio's prompt words, ChatML's tokens,
fillers), so the embedding, the LM head and the sampled ids are the real model's sizes, and the
studio's prompt is about as many tokens as in Qwen's tokenizer (~1 a word or mark).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.support.hpsv3_model import (
    CHATML_TOKENS,
    QWEN2_VL_PLACEHOLDER,
    QWEN2_VL_TOKENS,
    build_hpsv3,
    chat_template,
)
from training.presets import QWEN3_4B_CONFIG, QWEN3_4B_PARAMETERS

# The language models the bench makes: a preset's config, or the tests' tiny one for a CPU smoke.
POLICY_SHAPES: dict[str, dict[str, Any]] = {
    "qwen3-4b": {**QWEN3_4B_CONFIG, "tie_word_embeddings": True, "parameters": QWEN3_4B_PARAMETERS},
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 4096, "tie_word_embeddings": True},
}
# HPSv3's base, Qwen2-VL-7B-Instruct's config.json sizes (its vocabulary aside: see `make_hpsv3`).
HPSV3_SHAPES: dict[str, dict[str, dict[str, Any]]] = {
    "qwen2-vl-7b": {
        "text": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
                 "num_key_value_heads": 4, "max_position_embeddings": 32768},
        "vision": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "num_heads": 16, "mlp_ratio": 4,
                   "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
    },
    "tiny": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                 "num_key_value_heads": 1, "max_position_embeddings": 4096},
        "vision": {"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2,
                   "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
    },
}
QWEN2_VL_7B_VOCABULARY = 152_064  # its embedding rows; the bench's HPSv3 has its small tokenizer's (see make_hpsv3)


def studio_prompt() -> list[dict[str, str]]:
    """The chat a GRPO step sends (system prompt with the allowed API, then the subject)."""
    from paintenv.prompts import SUBJECTS, build_messages, make_subject

    return build_messages(make_subject(SUBJECTS[0].text))


def policy_tokenizer(vocab_size: int, corpus: list[str]):
    """A word-level tokenizer of exactly `vocab_size` ids: ChatML's special tokens, every word and
    mark of `corpus`, then fillers; it decodes any id the model samples."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    splitter = pre_tokenizers.Whitespace()
    words = sorted({piece for text in corpus for piece, _ in splitter.pre_tokenize_str(text)})
    vocabulary = ["<unk>", *CHATML_TOKENS, *words]
    vocabulary += [f"w{i}" for i in range(vocab_size - len(vocabulary))]
    model = Tokenizer(models.WordLevel({token: i for i, token in enumerate(vocabulary[:vocab_size])}, unk_token="<unk>"))
    model.pre_tokenizer = splitter
    model.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in CHATML_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=model, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<|endoftext|>",
        model_max_length=65_536, clean_up_tokenization_spaces=False, chat_template=chat_template(""),
    )


def make_policy(shape_name: str, out_dir: Path, *, device: str) -> dict[str, Any]:
    """A Qwen3 causal LM of the shape with random weights (bf16 on a GPU), saved with its tokenizer."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    started = time.perf_counter()
    shape = {k: v for k, v in POLICY_SHAPES[shape_name].items() if k != "parameters"}
    messages = studio_prompt()
    tokenizer = policy_tokenizer(shape["vocab_size"], [m["content"] for m in messages])
    config = Qwen3Config(**shape, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, max_position_embeddings=40_960,
                         rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0})
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM._from_config(config, dtype=dtype)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    made_s = time.perf_counter() - started
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    prompt_ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(prompt_ids, dict) or hasattr(prompt_ids, "input_ids"):
        prompt_ids = prompt_ids["input_ids"]
    return {"parameters": sum(p.numel() for p in model.parameters()), "prompt_tokens": len(prompt_ids),
            "config": {k: v for k, v in shape.items() if k != "tie_word_embeddings"},
            "made_s": round(made_s, 1), "saved_s": round(time.perf_counter() - started - made_s, 1),
            "bytes": sum(f.stat().st_size for f in Path(out_dir).glob("*.safetensors"))}


def make_hpsv3(shape_name: str, out_dir: Path, *, device: str) -> tuple[Path, Path]:
    """A Qwen2-VL base of the shape and random HPSv3 weights for it: (base folder, checkpoint).

    Its tokenizer is a small BPE trained on HPSv3's own prompt, so its embedding has ~1K rows
    where Qwen2-VL-7B's has 152,064: 1.0 GiB less in bf16, which the bench adds back when it
    compares the peak with the budget (the embedding is read once a painting, not per layer)."""
    from paintenv.quality.hpsv3 import hpsv3_user_text
    from tests.support.hpsv3_model import build_tokenizer

    shape = HPSV3_SHAPES[shape_name]
    corpus = [hpsv3_user_text("a peach hibiscus in loose watercolour"), "system\nYou are a helpful assistant.\n"]
    tokenizer = build_tokenizer(QWEN2_VL_TOKENS, QWEN2_VL_PLACEHOLDER, corpus)
    base, checkpoint = out_dir / "hpsv3-base", out_dir / "HPSv3.safetensors"
    build_hpsv3(base, checkpoint, tokenizer=tokenizer, text=shape["text"], vision=shape["vision"], device=device,
                dtype="bfloat16" if device.startswith("cuda") else "float32")
    return base, checkpoint
