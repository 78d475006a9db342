"""The sampled pass rate of a built tiny model: replies sampled with the chat template, and the
share that passes the static gate and renders."""
from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from demo.tiny_model import read_model_info
from demo.tiny_model import torch_threads as limit_torch_threads  # its own argument is `torch_threads`
from paintenv.prompts import SUBJECTS
from training.trainer.model_loading import architecture


def sample_chats(
    model, tokenizer, chats: Sequence[Sequence[dict[str, Any]]], *, temperature: float = 1.0, top_p: float = 0.95,
    top_k: int = 20, max_new_tokens: int,
) -> list[tuple[str, int, bool]]:
    """One sampled reply per chat, in one left-padded batch (the chat template with the
    generation prompt): (reply text, its tokens, whether it ended with <|im_end|>)."""
    import torch

    prompts = [tokenizer.apply_chat_template(list(c), add_generation_prompt=True, tokenize=False,
                                             enable_thinking=False) for c in chats]
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.inference_mode():
        out = model.generate(
            **enc, do_sample=True, temperature=temperature, top_p=top_p, top_k=top_k,
            max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    replies = []
    for row in out[:, enc["input_ids"].shape[1]:].tolist():
        ended = tokenizer.eos_token_id in row
        row = row[: row.index(tokenizer.eos_token_id)] if ended else row
        row = [t for t in row if t != tokenizer.pad_token_id]
        replies.append((tokenizer.decode(row, skip_special_tokens=True), len(row), ended))
    return replies


def sample_pass_rate(
    model_dir: str | Path,
    n: int = 32,
    temperature: float = 1.0,
    renderer=None,
    size: int = 256,
    *,
    top_p: float = 0.95,
    top_k: int = 20,
    max_new_tokens: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
    torch_threads: int | None = 1,
) -> dict[str, Any]:
    """Sample `n` replies (chat template + generation prompt, subjects in turn) and report
    the share that passes the static gate and, when a renderer is given, the share that
    also renders non-blank without runtime violations.

    `max_new_tokens` defaults to twice the longest SFT reply (from paintapp.json), so a
    reply is cut only when the model has lost its way.
    """
    import torch
    from transformers import AutoTokenizer

    from paintenv.paint import paint_reply
    from paintenv.prompts import build_messages

    started = time.perf_counter()
    info = read_model_info(model_dir)
    if max_new_tokens is None:
        longest = info.get("build", {}).get("sft", {}).get("completion_tokens_max") or 1024
        max_new_tokens = int(longest * 2)
    with limit_torch_threads(torch_threads):
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        tokenizer.padding_side = "left"
        model = architecture(model_dir).from_pretrained(model_dir, dtype="float32")
        model.eval()
        rng = random.Random(seed)
        subjects = [SUBJECTS[i % len(SUBJECTS)] for i in range(n)]
        rng.shuffle(subjects)
        replies: list[str] = []
        lengths: list[int] = []
        stopped: list[bool] = []
        torch.manual_seed(seed)
        for start in range(0, n, batch_size):
            chats = [build_messages(s) for s in subjects[start:start + batch_size]]
            for reply, length, ended in sample_chats(model, tokenizer, chats, temperature=temperature, top_p=top_p,
                                                     top_k=top_k, max_new_tokens=max_new_tokens):
                replies.append(reply)
                lengths.append(length)
                stopped.append(ended)
    generation_s = time.perf_counter() - started

    gate_passed = 0
    render_passed = 0
    violations: Counter[str] = Counter()
    samples = []
    render_started = time.perf_counter()
    for i, (subject, reply) in enumerate(zip(subjects, replies)):
        painting = paint_reply(reply, renderer=renderer, seed=i, size=size)
        gate_passed += painting.gate.passed
        ok = painting.passed if renderer is not None else None
        render_passed += bool(ok)
        violations.update(painting.violations)
        samples.append({"subject": subject.slug, "reply": reply, "gate": painting.gate.passed,
                        "render": ok, "violations": painting.violations,
                        "paint_fraction": painting.render.paint_fraction if painting.render else None})
    return {
        "n": n,
        "temperature": temperature,
        "gate_pass": gate_passed / n if n else 0.0,
        "render_pass": (render_passed / n if n else 0.0) if renderer is not None else None,
        "size": size,
        "stopped": sum(stopped) / n if n else 0.0,
        "completion_tokens_mean": round(statistics.mean(lengths), 1) if lengths else 0.0,
        "violations": dict(violations.most_common()),
        "generation_seconds": round(generation_s, 1),
        "render_seconds": round(time.perf_counter() - render_started, 1),
        "samples": samples,
    }
