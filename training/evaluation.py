"""Held-out evaluation: sample K sketches per subject and score them against the eval split.

The eval split of the run's pool is never a reward reference during training, so this
result compares runs on references none of them was trained toward.
"""
from __future__ import annotations

import logging
import time
from statistics import fmean

from celery import group
from django.utils import timezone

from curation.models import Tier
from paintapp.env.painting import paint_reply
from paintapp.env.prompts import build_messages, make_subject
from paintapp.env.reward import Recipe, combine
from training.config import RunArguments
from training.models import Run

log = logging.getLogger(__name__)


def eval_references(run: Run, count: int) -> list[int]:
    ids: list[int] = []
    for tier in (Tier.LOVE, Tier.OKAY):
        ids += list(
            run.pool.members.filter(split="eval", tier=tier).order_by("reference__sha256")
            .values_list("reference_id", flat=True)[: max(1, count // 2)]
        )
    return ids


def sample_replies(model, tokenizer, subject: str, *, n: int, args: RunArguments) -> list[str]:
    import torch

    messages = build_messages(make_subject(subject))
    inputs = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True, enable_thinking=False
    )
    inputs = {k: v.to(model.device) for k, v in inputs.items()}
    with torch.no_grad():
        out = model.generate(
            **inputs, do_sample=True, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
            max_new_tokens=args.max_completion_length, num_return_sequences=n,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        )
    prompt_len = inputs["input_ids"].shape[1]
    return [tokenizer.decode(seq[prompt_len:], skip_special_tokens=True) for seq in out]


def evaluate_run(run: Run, model, tokenizer, *, deadline_s: float = 600.0) -> dict:
    """Score K samples per subject against the eval split; store and return the result."""
    from training.tasks import render_sketch, score_painting

    args = RunArguments.from_dict(run.hyperparameters)
    recipe = Recipe.from_dict(run.recipe)
    references = eval_references(run, recipe.references_per_group) if recipe.w_judge > 0 else []
    started = time.monotonic()
    per_subject: dict[str, dict] = {}
    for subject in run.subjects:
        replies = sample_replies(model, tokenizer, subject, n=max(1, args.eval_samples_per_subject), args=args)
        gated = [paint_reply(r, renderer=None) for r in replies]
        passing = [i for i, p in enumerate(gated) if p.gate.passed]
        rendered: dict[int, dict] = {}
        if passing:
            job = group(render_sketch.s(gated[i].code, seed=run.seed + i, size=args.render_size) for i in passing).apply_async()
            for i, result in zip(passing, job.results):
                try:
                    rendered[i] = result.get(timeout=deadline_s, disable_sync_subtasks=False)
                except Exception as exc:  # noqa: BLE001
                    log.warning("evaluation render failed: %s", exc)
        scores: dict[int, dict] = {}
        scorable = [i for i, r in rendered.items() if r.get("passed") and r.get("png_path")]
        if scorable:
            job = group(
                score_painting.s(rendered[i]["png_path"], prompt=subject, recipe=recipe.to_dict(),
                                 reference_ids=references, pool_id=run.pool_id)
                for i in scorable
            ).apply_async()
            for i, result in zip(scorable, job.results):
                try:
                    scores[i] = result.get(timeout=deadline_s, disable_sync_subtasks=False)
                except Exception as exc:  # noqa: BLE001
                    log.warning("evaluation scoring failed: %s", exc)
        rewards = []
        for i, painting in enumerate(gated):
            passed = painting.gate.passed and bool(rendered.get(i, {}).get("passed"))
            score = scores.get(i, {})
            breakdown = combine(
                recipe, passed, recipe.length_part(painting.code or ""), (score.get("judge") or {}).get("score"),
                score.get("quality"), reasons=score.get("reasons", {}),
            )
            rewards.append(breakdown.reward)
        valid = [r for r in rewards if r is not None]
        per_subject[subject] = {
            "samples": len(replies),
            "gate_pass_rate": len(passing) / len(replies),
            "rendered": sum(1 for r in rendered.values() if r.get("passed")),
            "mean_reward": fmean(valid) if valid else None,
            "none": sum(1 for r in rewards if r is None),
            "rewards": rewards,
        }
    all_rewards = [r for s in per_subject.values() for r in s["rewards"] if r is not None]
    result = {
        "mean_reward": fmean(all_rewards) if all_rewards else None,
        "references": references,
        "per_subject": per_subject,
        "seconds": round(time.monotonic() - started, 1),
        "at": timezone.now().isoformat(),
    }
    Run.objects.filter(id=run.id).update(eval_result=result)
    return result
