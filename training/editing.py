"""The rollout editor: lint as you type, revisions (render, score, collect), compare, promote.

The web process never waits on a worker. `revision_render` and `revision_score` queue a
task and return; `revision_sync`, called by the page's one-second poll, collects a finished
result with `AsyncResult.ready()` and otherwise checks deadlines, so a missing or dead
worker shows as a clear failure on the revision — never as a reward of 0. A sketch that
loops forever is the render worker's problem (its watchdog kills the browser): here it is a
`render_timeout` verdict like any other, worth 0 as it would be in training.

A revision is rewarded exactly like a rollout: same recipe, references, render seed and
size as the original, combined by `training.rewarding.reward_parts`.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.result import AsyncResult
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from curation.images import ImageRejected, normalise_image
from curation.models import PoolMember, Provenance, Reference
from curation.services import reference_create
from paintapp.celery import app as celery_app
from paintapp.env.gate import MAX_SOURCE_CHARS, gate_source
from paintapp.env.reward import Recipe
from training.config import RunArguments
from training.models import Revision, Rollout
from training.rewarding import render_seed, reward_parts

# How long a queued render or score may wait for a worker to take it. Editor tasks share the
# queues with training, so a few groups of renders may be ahead of them.
WORKER_WAIT_S = 120.0
# After a worker took a task, how long past its hard time limit we wait before calling it lost.
LOST_TASK_GRACE_S = 30.0
PARTS = ("gate", "length", "judge", "quality")


class EditorError(ValueError):
    """A request the editor refuses, with a message for the page and the HTTP status to send."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


# --- the code -------------------------------------------------------------------------------


def code_clean(code: Any) -> str:
    """The code to gate or render, or EditorError for empty or oversized input.

    Form posts turn line breaks into CRLF; the editor and the gate's line:col count LF.
    """
    if not isinstance(code, str) or not code.strip():
        raise EditorError("The code is empty: there is nothing to render.")
    code = code.replace("\r\n", "\n")
    if len(code) > MAX_SOURCE_CHARS:
        raise EditorError(
            f"The code is {len(code):,} characters; the gate analyses at most {MAX_SOURCE_CHARS:,}.", status=413
        )
    return code


def lint_diagnostics(code: str) -> dict:
    """The static gate's verdict as editor diagnostics (line and column 1-based, in characters)."""
    verdict = gate_source(code)
    return {
        "passed": verdict.passed,
        "diagnostics": [
            {"source": "gate", "code": v.code, "message": v.message, "line": v.line, "col": v.col, "severity": "error"}
            for v in verdict.violations
        ],
        "gate_ms": verdict.stats.get("gate_ms"),
    }


def render_diagnostics(errors: list[dict]) -> list[dict]:
    """Runtime errors of a render (with the sketch's line:col when the page knew it)."""
    return [
        {"source": "render", "code": "render_error", "message": e.get("message", ""), "line": e.get("line"),
         "col": e.get("col"), "severity": "error"}
        for e in errors or []
    ]


# --- what a rollout was judged with ---------------------------------------------------------


def rollout_recipe(rollout: Rollout) -> Recipe:
    return Recipe.from_dict(rollout.run.recipe)


def rollout_render_settings(rollout: Rollout) -> dict:
    """The seed and size the trainer rendered this rollout with."""
    args = RunArguments.from_dict(rollout.run.hyperparameters)
    index = rollout.group * args.num_generations + rollout.position
    return {"seed": render_seed(rollout.run.seed, rollout.step, index), "size": args.render_size}


# --- revisions: writes ----------------------------------------------------------------------


def _enqueue(revision_id: int, field: str, task, args: list, kwargs: dict, task_id: str, wait_s: float) -> None:
    """Send the task (after the revision row is committed); a broker that is down fails the
    revision at once with the reason, instead of leaving it waiting."""
    try:
        task.apply_async(
            args=args, kwargs=kwargs, task_id=task_id, expires=wait_s,
            retry=True, retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5},
        )
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds of connection errors
        Revision.objects.filter(id=revision_id, **{field: task_id}).update(
            status=Revision.Status.FAILED, finished_at=timezone.now(),
            error=f"Could not queue the task: the broker did not answer ({type(exc).__name__}: {exc})"[:2000],
        )


def revision_render(
    *, rollout: Rollout, code: str, created_by: AbstractBaseUser | None, wait_s: float = WORKER_WAIT_S
) -> Revision:
    """Save `code` as a new revision of `rollout` and queue its render (gate + sandboxed render
    on the `render` queue, with the rollout's seed and size). Returns at once."""
    from training.tasks import render_sketch

    code = code_clean(code)
    task_id = str(uuid.uuid4())
    render_args = rollout_render_settings(rollout)
    with transaction.atomic():
        revision = Revision.objects.create(
            rollout=rollout, code=code, status=Revision.Status.RENDERING, created_by=created_by,
            render_task_id=task_id, stage_started_at=timezone.now(), wait_s=wait_s,
        )
        # Rendered even when the gate fails (the reward stays 0): the author sees what it draws.
        kwargs = {**render_args, "render_failed_gate": True}
        transaction.on_commit(
            lambda: _enqueue(revision.id, "render_task_id", render_sketch, [code], kwargs, task_id, wait_s)
        )
    revision.refresh_from_db()
    return revision


def revision_score(*, revision: Revision, wait_s: float = WORKER_WAIT_S) -> Revision:
    """Queue the judge and quality scoring of a rendered revision against the original's
    references, with the run's recipe and pool. Again after a failed score, too."""
    from training.tasks import score_painting

    rollout = revision.rollout
    with transaction.atomic():
        locked = Revision.objects.select_for_update().get(pk=revision.pk)
        can_score = locked.status == Revision.Status.RENDERED or (
            locked.status == Revision.Status.FAILED and locked.passed and locked.png
        )
        if not can_score:
            raise EditorError(_why_not_scorable(locked), status=409)
        task_id = str(uuid.uuid4())
        locked.status = Revision.Status.SCORING
        locked.score_task_id = task_id
        locked.stage_started_at = timezone.now()
        locked.wait_s = wait_s
        locked.error = ""
        locked.finished_at = None
        locked.save(update_fields=["status", "score_task_id", "stage_started_at", "wait_s", "error", "finished_at"])
        kwargs = {
            "prompt": rollout.subject, "recipe": rollout_recipe(rollout).to_dict(),
            "reference_ids": list(rollout.reference_ids), "pool_id": rollout.run.pool_id,
        }
        png = locked.png
        transaction.on_commit(
            lambda: _enqueue(locked.id, "score_task_id", score_painting, [png], kwargs, task_id, wait_s)
        )
    revision.refresh_from_db()
    return revision


def _why_not_scorable(revision: Revision) -> str:
    if revision.status == Revision.Status.RENDERING:
        return "This revision is still rendering; score it once its painting is there."
    if revision.status == Revision.Status.SCORING:
        return "This revision is already being scored."
    if revision.status == Revision.Status.DONE and revision.passed:
        return "This revision is already scored."
    if not revision.png:
        return "This revision has no painting to score (its render failed)."
    return "Only a painting that passed the gate and the render can be scored; this one is worth 0."


def revision_sync(*, revision: Revision) -> Revision:
    """Collect the result of the revision's pending task if it is finished, or fail the revision
    if no worker answered in time. Never blocks. Sets `revision.task_state` (a Celery state, or
    "" when nothing is pending) for the page's progress line."""
    revision.task_state = ""
    if not revision.is_pending:
        return revision
    rendering = revision.status == Revision.Status.RENDERING
    task_id = revision.render_task_id if rendering else revision.score_task_id
    result = AsyncResult(task_id, app=celery_app)
    try:
        state = result.state
        outcome = result.result if state in ("SUCCESS", "FAILURE", "REVOKED") else None
    except Exception as exc:  # noqa: BLE001 - the result backend is unreachable
        state, outcome = "UNKNOWN", exc
    revision.task_state = state

    elapsed = (timezone.now() - revision.stage_started_at).total_seconds() if revision.stage_started_at else 0.0
    what = "render" if rendering else "score"
    limit_s = settings.RENDER_TIME_LIMIT_S if rendering else settings.SCORE_TIME_LIMIT_S
    if state == "SUCCESS" and isinstance(outcome, dict):
        return _finish(revision, rendering, outcome=outcome)
    if state in ("FAILURE", "REVOKED"):
        if state == "REVOKED" or "expired" in str(outcome).lower():
            return _finish(revision, rendering, error=_no_worker(what, revision.wait_s))
        return _finish(revision, rendering, error=f"The {what} worker failed: {type(outcome).__name__}: {outcome}")
    if state == "UNKNOWN" and elapsed > revision.wait_s:
        return _finish(revision, rendering, error=f"The result backend did not answer: {type(outcome).__name__}: {outcome}")
    if state == "PENDING" and elapsed > revision.wait_s:
        return _finish(revision, rendering, error=_no_worker(what, revision.wait_s))
    if state not in ("PENDING", "UNKNOWN") and elapsed > revision.wait_s + limit_s + LOST_TASK_GRACE_S:
        return _finish(
            revision, rendering,
            error=f"A {what} worker took this {what} but gave no result within {elapsed:.0f} s; it may have died.",
        )
    return revision


def _no_worker(what: str, wait_s: float) -> str:
    command = "make worker-render" if what == "render" else "make worker-score"
    return (
        f"No {what} worker took this {what} within {wait_s:.0f} s, so there is no reward (not a 0). "
        f"Is one running? Start one with `{command}`; the System page lists live workers."
    )


def _finish(revision: Revision, rendering: bool, *, outcome: dict | None = None, error: str = "") -> Revision:
    """Store a finished task's outcome once, even when two polls race to collect it."""
    with transaction.atomic():
        locked = Revision.objects.select_for_update().get(pk=revision.pk)
        expected = Revision.Status.RENDERING if rendering else Revision.Status.SCORING
        if locked.status != expected:
            locked.task_state = ""
            return locked
        if error:
            locked.status = Revision.Status.FAILED
            locked.error = error[:2000]
            locked.finished_at = timezone.now()
        elif rendering:
            _apply_render(locked, outcome)
        else:
            _apply_score(locked, outcome)
        locked.save()
    locked.task_state = ""
    return locked


def _apply_render(revision: Revision, render: dict) -> None:
    render = dict(render)
    revision.png = render.pop("png_path", None) or ""
    render.pop("png", None)
    revision.render = render
    revision.violations = list(render.get("violations", []))
    revision.passed = bool(render.get("passed"))
    recipe = rollout_recipe(revision.rollout)
    if revision.passed:
        # Gate and length are known now; judge and quality come with Score.
        revision.parts = {"gate": 1.0, "length": recipe.length_part(revision.code)}
        revision.status = Revision.Status.RENDERED
        return
    gate_passed = bool((render.get("gate") or {}).get("passed"))
    reward, parts, _ = reward_parts(recipe, code=revision.code, gate_passed=gate_passed, render=render, score=None)
    revision.reward, revision.parts = reward, parts
    revision.status = Revision.Status.DONE
    revision.finished_at = timezone.now()


def _apply_score(revision: Revision, score: dict) -> None:
    reward, parts, failure = reward_parts(
        rollout_recipe(revision.rollout), code=revision.code, gate_passed=True, render=revision.render, score=score,
    )
    revision.reward, revision.parts = reward, parts
    revision.judge_detail = score.get("judge") or {}
    revision.error = f"No reward (not a 0): {failure}" if reward is None else ""
    revision.status = Revision.Status.DONE
    revision.finished_at = timezone.now()


# --- promote --------------------------------------------------------------------------------


def rollout_promote(*, rollout: Rollout, created_by: AbstractBaseUser | None) -> tuple[Reference, bool]:
    """Put the rollout's painting, with its sketch, into the reference library for a curator
    to grade. Content-addressed: promoting the same painting again returns the existing
    reference and False."""
    if not rollout.png:
        raise EditorError("This rollout has no painting to promote.", status=409)
    run = rollout.run
    label = f"run-{run.id}-step-{rollout.step}-group-{rollout.group}-position-{rollout.position}.png"
    try:
        with default_storage.open(rollout.png, "rb") as fh:
            image = normalise_image(fh.read(), name=label)
    except (OSError, ImageRejected) as exc:
        raise EditorError(f"The painting cannot become a reference: {exc}", status=409) from exc
    return reference_create(
        png=image.png, width=image.width, height=image.height, provenance=Provenance.ROLLOUT,
        source=rollout.code, seed=rollout_render_settings(rollout)["seed"], subject=rollout.subject,
        original_name=label,
        metadata={
            "rollout_id": rollout.id, "run_id": run.id, "run_name": run.name, "step": rollout.step,
            "group": rollout.group, "position": rollout.position, "recipe": run.recipe_name,
            "reward": rollout.reward, "base_model": run.base_model,
        },
        created_by=created_by,
    )


# --- reads for the rollout page -------------------------------------------------------------


def promoted_reference(rollout: Rollout) -> Reference | None:
    return Reference.objects.filter(provenance=Provenance.ROLLOUT, metadata__rollout_id=rollout.id).first()


def rollout_neighbours(rollout: Rollout) -> tuple[Rollout | None, Rollout | None]:
    """The previous and next rollout of the same run, in step / group / position order."""
    same_run = Rollout.objects.filter(run_id=rollout.run_id).only("id", "step", "group", "position")
    s, g, p = rollout.step, rollout.group, rollout.position
    before = Q(step__lt=s) | Q(step=s, group__lt=g) | Q(step=s, group=g, position__lt=p)
    after = Q(step__gt=s) | Q(step=s, group__gt=g) | Q(step=s, group=g, position__gt=p)
    return (
        same_run.filter(before).order_by("-step", "-group", "-position").first(),
        same_run.filter(after).order_by("step", "group", "position").first(),
    )


@dataclass
class Side:
    """One side of a comparison: the original rollout or one of its revisions."""

    key: str  # "original" or the revision id
    label: str
    image_url: str | None
    reward: float | None
    parts: dict
    passed: bool
    violations: list
    status: str
    note: str = ""


def side_of_original(rollout: Rollout, image_url: str | None) -> Side:
    return Side(
        key="original", label=f"Original (step {rollout.step}, #{rollout.position})", image_url=image_url,
        reward=rollout.reward, parts=rollout.parts or {}, passed=rollout.passed, violations=rollout.violations,
        status="done", note=rollout.failure,
    )


def side_of_revision(revision: Revision, image_url: str | None) -> Side:
    who = revision.created_by.get_username() if revision.created_by else "someone"
    return Side(
        key=str(revision.id), label=f"Revision {revision.id} by {who}", image_url=image_url if revision.png else None,
        reward=revision.reward, parts=revision.parts or {}, passed=revision.passed, violations=revision.violations,
        status=revision.status, note=revision.error,
    )


def parts_table(recipe: Recipe, a: Side, b: Side | None) -> list[dict]:
    """Rows of part, weight, A, B and B − A (weighted contribution differences too)."""
    weights = {"gate": recipe.w_gate, "length": recipe.w_length, "judge": recipe.w_judge, "quality": recipe.w_quality}
    rows = []
    for name in PARTS:
        va = a.parts.get(name)
        vb = b.parts.get(name) if b else None
        delta = vb - va if va is not None and vb is not None else None
        rows.append({"name": name, "weight": weights[name], "a": va, "b": vb, "delta": delta,
                     "weighted_delta": None if delta is None else delta * weights[name]})
    delta = b.reward - a.reward if b and a.reward is not None and b.reward is not None else None
    rows.append({"name": "reward", "weight": None, "a": a.reward, "b": b.reward if b else None, "delta": delta,
                 "weighted_delta": delta})
    return rows


def reference_verdicts(rollout: Rollout, revision: Revision | None = None) -> list[dict]:
    """Each reference the rollout was judged against, its tier in the run's pool, and the
    verdicts of the original and of `revision`: the mean, then each presentation order with
    P(the painting is the better one) and the judge's reason."""
    references = {r.id: r for r in Reference.objects.filter(id__in=rollout.reference_ids)}
    tiers = dict(
        PoolMember.objects.filter(pool_id=rollout.run.pool_id, reference_id__in=rollout.reference_ids)
        .values_list("reference_id", "tier")
    )

    def by_reference(detail: dict) -> dict:
        return {v.get("reference_id"): v for v in (detail or {}).get("references", [])}

    def order(verdict: dict | None, candidate_first: bool) -> dict | None:
        found = [o for o in (verdict or {}).get("orders", []) if o.get("candidate_first") is candidate_first]
        return found[0] if found else None

    original = by_reference(rollout.judge_detail)
    edited = by_reference(revision.judge_detail) if revision is not None else {}
    rows = []
    for rid in rollout.reference_ids:
        mine, theirs = original.get(rid), edited.get(rid)
        rows.append({
            "id": rid, "reference": references.get(rid), "tier": tiers.get(rid, ""),
            "original_score": (mine or {}).get("score"), "revision_score": (theirs or {}).get("score"),
            "judged": mine is not None, "revision_judged": theirs is not None,
            "orders": [
                {"label": label, "original": order(mine, first), "revision": order(theirs, first)}
                for label, first in (("painting shown first", True), ("reference shown first", False))
            ],
        })
    return rows


def revision_elapsed_s(revision: Revision) -> float:
    if not revision.stage_started_at:
        return 0.0
    end = revision.finished_at or timezone.now()
    return max(0.0, (end - revision.stage_started_at) / timedelta(seconds=1))
