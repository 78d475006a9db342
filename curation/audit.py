"""Judge audit: re-judge the same pairs twice and in both orders.

Reports self-agreement (same pair, same order, judged twice: same verdict), order bias
(share of pairs whose verdict follows the position rather than the painting) and accuracy
against the pool's held-out tiers (eval split, pairs of different tiers) — for a consensus
pool those are the consensus's — and against each curator who graded those references:
on the audited pairs that curator graded differently, the share the judge orders their way
(people_agreement), with a Wilson interval and a flag when it rests on few pairs.

`manage.py audit_judge` runs one in place (judge_audit_run); the pool page asks a score
worker for one (judge_audit_request, then the task calls judge_audit_execute), and the page
polls the row for its progress.
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from curation.errors import CurationError
from curation.models import AuditStatus, JudgeAudit, Pool, Tier
from curation.selectors import agreement_input
from paintapp.celery import app as celery_app
from paintenv.intervals import FEW_PAIRS, wilson_interval
from painting.judging import judge_for
from painting.selectors import recipe_get

logger = logging.getLogger(__name__)

TIER_RANK = {Tier.LOVE: 2, Tier.OKAY: 1, Tier.REJECT: 0}
MAX_PAIRS = 500  # each pair is three judge calls: a VLM judge takes seconds per call
PROGRESS_INTERVAL_S = 0.5  # at most this often a progress write to the database
TASK_NAME = "curation.tasks.run_judge_audit"
NO_PAIRS = "the pool's eval split has no pair of different tiers to audit"

Progress = Callable[[int, int], None]


def _png(member) -> bytes:
    with default_storage.open(member.reference.image, "rb") as fh:
        return fh.read()


def _verdict(value) -> float | None:
    if isinstance(value, tuple):
        value = value[0]
    return None if value is None else float(value)


def _share(agree: int, n: int, **extra) -> dict:
    interval = wilson_interval(agree, n)
    return {
        **extra, "pairs": n, "agree": agree, "accuracy": agree / n if n else None,
        "low": interval[0] if interval else None, "high": interval[1] if interval else None,
        "few": n < FEW_PAIRS, "reason": "" if n else "no audited pair this curator graded with two different tiers",
    }


def people_agreement(rows: list[dict], grades: dict[str, dict[int, str]]) -> list[dict]:
    """Per curator, on the judged audit rows whose two references they graded with different
    tiers: how often the judge prefers the one they rank higher (a mean verdict of exactly
    0.5 prefers neither, so it counts against). Curators with no such pair are kept, n=0."""
    out = []
    for name, tiers in sorted(grades.items()):
        agree = n = 0
        for row in rows:
            if None in (row["first"], row["swapped"]):
                continue
            a, b = tiers.get(row["better"]), tiers.get(row["worse"])
            if a is None or b is None or a == b:
                continue
            prefers_better = (row["first"] + row["swapped"]) / 2
            n += 1
            agree += prefers_better > 0.5 if TIER_RANK[a] > TIER_RANK[b] else prefers_better < 0.5
        out.append(_share(agree, n, curator=name))
    return out


def audit_pairs(pool: Pool, *, pairs: int, seed: int = 0) -> list[tuple]:
    """Eval-split pairs of different tiers (better first), drawn reproducibly."""
    members = list(pool.members.filter(split="eval").select_related("reference"))
    candidates = [(a, b) for a in members for b in members if TIER_RANK[a.tier] > TIER_RANK[b.tier]]
    random.Random(seed).shuffle(candidates)
    return candidates[:pairs]


def audit_results(
    pool: Pool, *, judge, pairs: int, seed: int = 0, prompt: str = "a flower", progress: Progress | None = None,
) -> dict:
    """Judge each pair twice with the better one first and once with it second."""
    chosen = audit_pairs(pool, pairs=pairs, seed=seed)
    rows = []
    agree = flips = correct = judged = failed = 0
    for n, (better, worse) in enumerate(chosen, 1):
        a, b = _png(better), _png(worse)
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
    eval_refs = {ref for row in rows for ref in (row["better"], row["worse"])}
    live = agreement_input(pool=pool).grades  # their current grades, which may differ from the frozen tiers
    return {
        "pairs": len(chosen),
        "judged": judged,
        "failed": failed,
        "self_agreement": agree / judged if judged else None,
        "order_bias": flips / judged if judged else None,
        "accuracy": correct / judged if judged else None,
        "pool_tiers": _share(correct, judged, consensus=pool.is_consensus),
        "people": people_agreement(
            rows, {name: tiers for name, tiers in live.items() if eval_refs & tiers.keys()},
        ),
        "rows": rows,
    }


def judge_audit_run(
    *, pool: Pool, judge, judge_label: str, recipe_name: str, pairs: int = 20, seed: int = 0,
    prompt: str = "a flower", created_by=None, progress: Progress | None = None,
) -> JudgeAudit:
    """Audit in this process (the command line) and keep the report."""
    results = audit_results(pool, judge=judge, pairs=pairs, seed=seed, prompt=prompt, progress=progress)
    return JudgeAudit.objects.create(
        pool=pool, recipe_name=recipe_name, judge=judge_label, pairs=results["pairs"], seed=seed, results=results,
        status=AuditStatus.DONE, done=results["pairs"], total=results["pairs"], created_by=created_by,
        finished_at=timezone.now(),
    )


def _set(audit: JudgeAudit, **fields) -> None:
    """Update the row without loading it (a worker and the web both write it)."""
    JudgeAudit.objects.filter(pk=audit.pk).update(updated_at=timezone.now(), **fields)


def judge_audit_request(
    *, pool: Pool, recipe_name: str, pairs: int = 20, seed: int = 0, created_by=None
) -> JudgeAudit:
    """The pool's audit being run, or a new one queued for a score worker once the row commits."""
    if not 1 <= pairs <= MAX_PAIRS:
        raise CurationError(f"audit between 1 and {MAX_PAIRS} pairs")
    recipe_get(recipe_name)  # an unknown recipe is refused here, not on the worker
    active = pool.judge_audits.filter(status__in=(AuditStatus.QUEUED, AuditStatus.RUNNING)).first()
    if active is not None and not active.is_stalled:
        return active
    if active is not None:
        _set(active, status=AuditStatus.FAILED, finished_at=timezone.now(),
             error="the worker running it stopped reporting progress")
    audit = JudgeAudit.objects.create(
        pool=pool, recipe_name=recipe_name, pairs=pairs, seed=seed, created_by=created_by, status=AuditStatus.QUEUED,
    )
    transaction.on_commit(lambda: _queue(audit))
    return audit


def _queue(audit: JudgeAudit) -> None:
    try:
        celery_app.send_task(TASK_NAME, args=[audit.pk])
    except Exception as exc:  # noqa: BLE001 - the broker is down: say so on the page, never wait forever
        logger.warning("could not queue judge audit %s", audit.pk, exc_info=True)
        _set(audit, status=AuditStatus.FAILED, finished_at=timezone.now(),
             error=f"the audit could not be queued (is the broker running?): {exc}")


def judge_audit_execute(*, audit: JudgeAudit) -> JudgeAudit:
    """Run a queued audit with progress on its row (a score worker calls this). A failure ends
    as a failed row with its reason; an audit already done (a redelivered task) is left alone."""
    audit.refresh_from_db()
    if audit.status == AuditStatus.DONE:
        return audit
    _set(audit, status=AuditStatus.RUNNING, done=0, total=None, error="")
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        if done == total or time.monotonic() - last_write >= PROGRESS_INTERVAL_S:
            last_write = time.monotonic()
            _set(audit, done=done, total=total)

    try:
        if not audit_pairs(audit.pool, pairs=1):  # before the judge loads: a taste judge needs two tiers
            raise CurationError(NO_PAIRS)
        recipe = recipe_get(audit.recipe_name)
        judge = judge_for(recipe, audit.pool_id)
        results = audit_results(audit.pool, judge=judge, pairs=audit.pairs, seed=audit.seed, progress=progress)
    except Exception as exc:  # noqa: BLE001 - every failure ends on the page, not in a log alone
        if not isinstance(exc, CurationError):
            logger.exception("judge audit %s failed", audit.pk)
        _set(audit, status=AuditStatus.FAILED, error=str(exc) or type(exc).__name__, finished_at=timezone.now())
    else:
        _set(audit, status=AuditStatus.DONE, judge=recipe.judge, pairs=results["pairs"], results=results,
             done=results["pairs"], total=results["pairs"], finished_at=timezone.now())
    audit.refresh_from_db()
    return audit
