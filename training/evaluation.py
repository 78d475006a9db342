"""Held-out evaluation: sample K sketches per subject and score them against the eval split.

The eval split of the run's pool is never a reward reference during training, so this
result compares runs on references none of them was trained toward.
"""
from __future__ import annotations

import time
from statistics import fmean

from django.utils import timezone

from curation.models import Tier
from paintapp.env.extraction import reply_text
from paintapp.env.prompts import build_messages, make_subject
from paintapp.env.reward import Recipe
from painting.pipeline import PaintJob, paint_batch, render_seed
from training.config import RunArguments
from training.model_loading import text_tokenizer
from training.models import Run


def eval_references(run: Run, count: int) -> list[int]:
    ids: list[int] = []
    for tier in (Tier.LOVE, Tier.OKAY):
        ids += list(
            run.pool.members.filter(split="eval", tier=tier).order_by("reference__sha256")
            .values_list("reference_id", flat=True)[: max(1, count // 2)]
        )
    return ids


def sample_replies(model, processing_class, subjects: list[str], *, n: int, args: RunArguments) -> dict[str, list[str]]:
    """`n` replies per subject, sampled as the trainer samples (see `sample_chats`)."""
    jobs = [subject for subject in subjects for _ in range(n)]
    replies: dict[str, list[str]] = {subject: [] for subject in subjects}
    sampled = sample_chats(model, processing_class, [build_messages(make_subject(s)) for s in jobs], args=args)
    for subject, reply in zip(jobs, sampled):
        replies[subject].append(reply)
    return replies


def sample_chats(model, processing_class, chats: list[list[dict]], *, args: RunArguments) -> list[str]:
    """One reply to each chat, sampled as the trainer samples (the run's temperature, top-p,
    top-k and completion length, no thinking). `processing_class` is a tokenizer or a VL
    model's processor (the chats are text: its tokenizer does the work). All chats are
    generated together, left-padded, at most G sequences a batch: the trainer generates G at
    once on the same device, so a batch of G fits where training did."""
    import torch

    tokenizer = text_tokenizer(processing_class)
    prompts = [tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False, enable_thinking=False)
               for chat in chats]
    replies: list[str] = []
    batch_size = max(1, args.num_generations)
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start:start + batch_size]
        inputs = tokenizer(batch, return_tensors="pt", padding=True, padding_side="left",
                           add_special_tokens=False).to(model.device)
        with torch.no_grad():
            out = model.generate(
                **inputs, do_sample=True, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                max_new_tokens=args.max_completion_length,
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
            )
        replies += [reply_text(tokenizer.decode(row, skip_special_tokens=True)) for row in out[:, inputs["input_ids"].shape[1]:]]
    return replies


# Evaluation renders as step 0 of the run's seeding rule: no training step has that number.
EVAL_STEP = 0


def evaluate_run(run: Run, model, processing_class, *, deadline_s: float = 600.0) -> dict:
    """Score K samples per subject against the eval split; store and return the result."""
    args = RunArguments.from_dict(run.hyperparameters)
    n = max(1, args.eval_samples_per_subject)
    replies = sample_replies(model, processing_class, list(run.subjects), n=n, args=args)
    return evaluate_replies(run, replies, deadline_s=deadline_s)


def evaluate_replies(run: Run, replies: dict[str, list[str]], *, deadline_s: float = 600.0) -> dict:
    """Judge each subject's sampled replies through the painting pipeline; store the result.

    A sample whose render or scoring failed for infrastructure reasons has reward None: the
    means leave it out and `none` says how many were left out; `late` counts those of them
    whose result came back after its stage's deadline (not used)."""
    args = RunArguments.from_dict(run.hyperparameters)
    recipe = Recipe.from_dict(run.recipe)
    references = tuple(eval_references(run, recipe.references_per_group)) if recipe.w_judge > 0 else ()
    started = time.monotonic()
    per_subject: dict[str, dict] = {}
    index = 0
    for subject, sampled in replies.items():
        jobs = []
        for reply in sampled:
            jobs.append(PaintJob(reply=reply, prompt=subject, seed=render_seed(run.seed, EVAL_STEP, index),
                                 reference_ids=references))
            index += 1
        batch = paint_batch(jobs, recipe=recipe, pool_id=run.pool_id, size=args.render_size,
                            render_deadline_s=deadline_s, score_deadline_s=deadline_s)
        rewards = batch.rewards
        valid = [r for r in rewards if r is not None]
        per_subject[subject] = {
            "samples": len(sampled),
            "gate_pass_rate": sum(1 for p in batch.paintings if p.gate_passed) / max(1, len(sampled)),
            "rendered": sum(1 for p in batch.paintings if p.passed),
            "mean_reward": fmean(valid) if valid else None,
            "none": batch.none_count,
            "late": batch.late_count,
            "failures": [p.failure for p in batch.paintings if p.failure],
            "rewards": rewards,
        }
    all_rewards = [r for s in per_subject.values() for r in s["rewards"] if r is not None]
    result = {
        "mean_reward": fmean(all_rewards) if all_rewards else None,
        "none": sum(s["none"] for s in per_subject.values()),
        "late": sum(s["late"] for s in per_subject.values()),
        "samples": sum(s["samples"] for s in per_subject.values()),
        "references": list(references),
        "per_subject": per_subject,
        "seconds": round(time.monotonic() - started, 1),
        "at": timezone.now().isoformat(),
    }
    Run.objects.filter(id=run.id).update(eval_result=result)
    return result
