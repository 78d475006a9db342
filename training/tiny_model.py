"""The embedded tiny painter: a Qwen3-architecture model of a few million parameters that
the project builds itself, on CPU, with no download.

    tokenizer  byte-level BPE trained on the seed sketches and the prompts (ChatML)
    model      Qwen3ForCausalLM from a small Qwen3Config, tied embeddings
    warm start TRL SFTTrainer on (system + user -> fenced sketch + <|im_end|>) pairs
    saved      like any HF checkpoint, plus `paintapp.json` (spec and build figures)

The GRPO trainer loads the result by path (`GRPOTrainer(model=<dir>)`), exactly as it
would load a real checkpoint, so every test of the training stack runs on it.

Why the tokenizer is line-based: the system prompt (~3.8K chars) and the sketches (~5K
chars) are long, and on two CPU cores sequence length is the whole cost. The BPE may
merge across spaces within one line (no GPT-2 word split), so repeated code lines such as
`  brush.endShape(true);` and the system prompt's sentences become a few tokens each.
Lines end with their newline (the newline is merged with the text before it), so a
prompt rendered with the generation prompt is always a token prefix of the same prompt
followed by its reply.
"""
from __future__ import annotations

import contextlib
import json
import math
import random
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

__all__ = [
    "CHAT_TEMPLATE",
    "EOS_TOKEN",
    "PAD_TOKEN",
    "IM_START",
    "SPEC_FILE",
    "TinyModelSpec",
    "QUICK_SPEC",
    "Progress",
    "sft_examples",
    "tokenizer_corpus",
    "build_tokenizer",
    "build_model",
    "count_parameters",
    "sft_warm_start",
    "build_tiny_model",
    "sample_pass_rate",
    "read_model_info",
    "record_evaluation",
]

IM_START = "<|im_start|>"
EOS_TOKEN = "<|im_end|>"  # ends every turn, so generation stops at the end of the reply
PAD_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (PAD_TOKEN, IM_START, EOS_TOKEN)
SPEC_FILE = "paintapp.json"

# ChatML, as Qwen writes it. The assistant turn (content and its <|im_end|>) sits inside
# {% generation %} so TRL's assistant-only loss trains the model to stop. Unknown kwargs
# (enable_thinking, tools, ...) are simply unused variables to Jinja.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}{{- message['content'] + '<|im_end|>' -}}{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- message['content'] + '<|im_end|>' + '\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

# (stage, done, total, figures): stages are "data", "tokenizer", "model", "sft", "save".
Progress = Callable[[str, int, int, dict[str, Any]], None]


@dataclass
class TinyModelSpec:
    """Architecture and warm-start recipe. The defaults are the demo model; tests use
    QUICK_SPEC."""

    vocab_size: int = 4096
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 8192
    rope_theta: float = 10_000.0
    sft_sketches: int = 200
    sft_epochs: float = 3.0
    sft_learning_rate: float = 3e-3
    sft_max_length: int = 2048  # prompt + reply tokens; longer examples are left out, never cut
    sft_batch_size: int = 4
    sft_warmup_ratio: float = 0.05
    seed: int = 0
    torch_threads: int | None = 1  # FIELD-NOTES: 2 threads on the shared 2-core box is slower

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TinyModelSpec:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


# The test model: same shape of everything, a fraction of the work.
QUICK_SPEC = TinyModelSpec(
    vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=1, head_dim=32,
    sft_sketches=12, sft_epochs=1.0, sft_learning_rate=3e-3, sft_batch_size=4,
)


# ---------------------------------------------------------------------------------------
# Data


def sft_examples(count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """Conversational prompt/completion rows for TRL from the seed generator's good
    sketches: prompt = [system, user], completion = [assistant: the fenced sketch]."""
    from paintapp.env.seedgen import sft_pairs

    return [
        {"prompt": prompt, "completion": [{"role": "assistant", "content": reply}]}
        for prompt, reply in sft_pairs(count, seed=seed)
    ]


def tokenizer_corpus(examples: Iterable[dict[str, Any]]) -> list[str]:
    """Every turn of every example, with its role line, as the tokenizer will see it
    between special tokens. The system prompt repeats once per example on purpose: it is
    in every training and GRPO sequence, so its merges pay for themselves."""
    texts: list[str] = []
    for example in examples:
        for message in list(example["prompt"]) + list(example["completion"]):
            texts.append(f"{message['role']}\n{message['content']}")
    return texts


# ---------------------------------------------------------------------------------------
# Tokenizer


def _bpe(vocab_size: int):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        # One piece per line, the newline kept at the end of its line (see module doc).
        pre_tokenizers.Split(Regex(r"\n"), behavior="merged_with_previous"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def build_tokenizer(texts: Iterable[str], *, vocab_size: int = 4096, max_length: int = 8192):
    """A byte-level BPE (`tokenizers`) trained on `texts`, wrapped as a
    PreTrainedTokenizerFast with ChatML special tokens and chat template.

    eos = <|im_end|> (ends a turn), pad = <|endoftext|>; no bos, as in Qwen.
    """
    from tokenizers import AddedToken, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = _bpe(vocab_size)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # any byte stays encodable
        show_progress=False,
        max_token_length=64,  # whole short lines, not whole paragraphs
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=max_length,
        clean_up_tokenization_spaces=False,
    )
    fast.padding_side = "left"  # batched generation pads prompts on the left
    return fast
