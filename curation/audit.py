"""Judge audit: re-judge the same pairs twice and in both orders.

Reports self-agreement (same pair, same order, judged twice: same verdict), order bias
(share of pairs whose verdict follows the position rather than the painting) and accuracy
against the curator's held-out grades (eval split, pairs of different tiers).
"""
from __future__ import annotations

import random
from collections.abc import Callable

from django.core.files.storage import default_storage

from curation.models import JudgeAudit, Pool, Tier

TIER_RANK = {Tier.LOVE: 2, Tier.OKAY: 1, Tier.REJECT: 0}


def _png(member) -> bytes:
    with default_storage.open(member.reference.image, "rb") as fh:
        return fh.read()


def _verdict(value) -> float | None:
    if isinstance(value, tuple):
        value = value[0]
    return None if value is None else float(value)


def audit_pairs(pool: Pool, *, pairs: int, seed: int = 0) -> list[tuple]:
    """Eval-split pairs of different tiers (better first), drawn reproducibly."""
    members = list(pool.members.filter(split="eval").select_related("reference"))
    candidates = [(a, b) for a in members for b in members if TIER_RANK[a.tier] > TIER_RANK[b.tier]]
    random.Random(seed).shuffle(candidates)
    return candidates[:pairs]


def judge_audit_run(
    *, pool: Pool, judge, judge_label: str, recipe_name: str, pairs: int = 20, seed: int = 0,
    prompt: str = "a flower", created_by=None, progress: Callable[[int, int], None] | None = None,
) -> JudgeAudit:
    chosen = audit_pairs(pool, pairs=pairs, seed=seed)
    rows = []
    agree = flips = correct = judged = failed = 0
    for n, (better, worse) in enumerate(chosen, 1):
        a, b = _png(better), _png(worse)
        # Twice with the better one first, once with it second.
        first = _verdict(judge.compare(a, b, prompt=prompt, candidate_first=True))
        again = _verdict(judge.compare(a, b, prompt=prompt, candidate_first=True))
        swapped = _verdict(judge.compare(a, b, prompt=prompt, candidate_first=False))
        if None in (first, again, swapped):
            failed += 1
        else:
            judged += 1
            agree += (first >= 0.5) == (again >= 0.5)
            flips += (first >= 0.5) != (swapped >= 0.5)
            correct += ((first + swapped) / 2) > 0.5
        rows.append({
            "better": better.reference_id, "worse": worse.reference_id, "tiers": [better.tier, worse.tier],
            "first": first, "again": again, "swapped": swapped,
        })
        if progress:
            progress(n, len(chosen))
    results = {
        "pairs": len(chosen),
        "judged": judged,
        "failed": failed,
        "self_agreement": agree / judged if judged else None,
        "order_bias": flips / judged if judged else None,
        "accuracy": correct / judged if judged else None,
        "rows": rows,
    }
    return JudgeAudit.objects.create(
        pool=pool, recipe_name=recipe_name, judge=judge_label, pairs=len(chosen), results=results, created_by=created_by
    )
