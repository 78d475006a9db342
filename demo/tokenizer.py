"""The tiny painter's tokenizer: a byte-level BPE trained on the seed sketches and the prompts,
with ChatML special tokens and Qwen's chat template.

Why it is line-based: the system prompt (~3.8K chars) and the sketches (~5-7K chars) are long,
and on two CPU cores sequence length is the whole cost. The BPE may merge across spaces within
one line (no GPT-2 word split), so repeated code lines such as `  brush.endShape(true);` and the
system prompt's sentences become one token or a few; numbers, hex colours and `//` comments are
pieces of their own, so a sampled number never drags a bracket or a quote with it. Lines end
with their newline (merged with the text before it), so a prompt rendered with the generation
prompt is always a token prefix of the same prompt followed by its reply.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


def tokenizer_corpus(examples: Iterable[dict[str, Any]]) -> list[str]:
    """Every turn of every example, with its role line, as the tokenizer will see it
    between special tokens. The system prompt repeats once per example on purpose: it is
    in every training and GRPO sequence, so its merges pay for themselves."""
    texts: list[str] = []
    for example in examples:
        for message in list(example["prompt"]) + list(example["completion"]):
            texts.append(f"{message['role']}\n{message['content']}")
    return texts


_LITERAL = r"//[^\n]*\n?|#[0-9a-fA-F]{3,8}|[0-9]+(?:\.[0-9]+)?"


def _bpe(vocab_size: int):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        # One piece per line, the newline kept at the end of its line (see module doc).
        pre_tokenizers.Split(Regex(r"\n"), behavior="merged_with_previous"),
        # Numbers and hex colours stand alone, so the code around them ("const X = ",
        # '", "', ');\n') becomes shared structural tokens and a colour or number never
        # swallows a quote or a bracket (that made sampled sketches unbalanced). A `//`
        # comment is one piece, its numbers included, so a comment never turns into code.
        pre_tokenizers.Split(Regex(_LITERAL), behavior="isolated"),
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
