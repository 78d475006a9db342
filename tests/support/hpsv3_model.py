"""A Qwen2-VL base and random HPSv3 weights for it, of any shape, built with no download: the
tests' tiny one (tests/support/tiny_vlm.py) and the GPU bench's Qwen2-VL-7B-shaped one
(bench/gpu/), so the HPSv3 scorer (paintenv/quality/hpsv3.py) loads either as it loads the
published checkpoint. Imports only what the scorer itself needs (a GPU box has no more)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from paintenv.quality.hpsv3 import REWARD_TOKEN, build_reward_head, published_key

CHATML_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN2_VL_TOKENS = (*CHATML_TOKENS, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
QWEN2_VL_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"


def chat_template(image_placeholder: str) -> str:
    """ChatML as Qwen writes it, with a default system turn and each image's placeholder
    where the image stands among the text parts."""
    return (
        "{%- for message in messages -%}"
        "{%- if loop.first and message['role'] != 'system' -%}"
        "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' -}}"
        "{%- endif -%}"
        "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
        "{%- if message['content'] is string -%}{{- message['content'] -}}"
        "{%- else -%}{%- for part in message['content'] -%}"
        f"{{%- if part['type'] == 'image' -%}}{{{{- '{image_placeholder}' -}}}}"
        "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
        "{{- '<|im_end|>\\n' -}}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
    )


def build_tokenizer(special_tokens: tuple[str, ...], image_placeholder: str, corpus: list[str]):
    """A byte-level BPE trained on `corpus` (the prompts the model will read), with ChatML's
    special tokens, the model's image tokens and a chat template placing `image_placeholder`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024, min_frequency=2, show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in special_tokens],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=list(special_tokens[1:]), model_max_length=4096,
        clean_up_tokenization_spaces=False, chat_template=chat_template(image_placeholder),
    )


def build_hpsv3(base_dir: Path, checkpoint: Path, *, tokenizer, text: dict[str, Any], vision: dict[str, Any],
                seed: int = 0, device: str = "cpu", dtype: str = "float32") -> None:
    """A Qwen2-VL base of the given text and vision shapes (config, `tokenizer`, image processor)
    and random HPSv3 weights for it, saved as the published checkpoint is: <|Reward|> added,
    embeddings resized to the tokenizer, the reward head, one flat 4.45-layout state dict (the
    body bf16, the head fp32). `device` and `dtype`: where and how the weights are made (a 7B
    shape on a GPU in bfloat16 takes seconds where a CPU takes minutes; the tests' tiny one is
    made in float32, as its recorded scores were)."""
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in QWEN2_VL_TOKENS}
    text = {**text, "vocab_size": len(tokenizer), "bos_token_id": None, "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id}
    # The three M-RoPE sections (time, height, width) share the head's frequencies: a quarter,
    # three eighths, three eighths of its half (16 of head_dim 32: 4, 6, 6; 64 of 128: 16, 24, 24).
    half = text["hidden_size"] // text["num_attention_heads"] // 2
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0,
                               "mrope_section": [half // 4, half * 3 // 8, half - half // 4 - half * 3 // 8]}
    config = Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    config.save_pretrained(base_dir)
    tokenizer.save_pretrained(base_dir)
    Qwen2VLImageProcessorPil().save_pretrained(base_dir)

    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2VLForConditionalGeneration._from_config(config, dtype=getattr(torch, dtype))
    tokenizer = copy.deepcopy(tokenizer)  # the saved base keeps the tokenizer without the reward token
    tokenizer.add_special_tokens({"additional_special_tokens": [REWARD_TOKEN]})
    model.resize_token_embeddings(len(tokenizer))
    head = build_reward_head(config.text_config.hidden_size)
    state = {published_key(k): v.to(torch.bfloat16).cpu() for k, v in model.state_dict().items()}
    del model
    state |= {f"rm_head.{k}": v.float() for k, v in head.state_dict().items()}
    save_file({k: v.contiguous() for k, v in state.items()}, str(checkpoint))
