"""Writes of the rollout editor: lint, revisions (render, score, collect), the model's
revisions, promote.

The web process never waits on a worker. `revision_render` and `revision_score` send a task
through the pipeline core (`painting.fanout`, which `paint_batch` sends and collects with too)
and return; `revision_sync`, called by the page's one-second poll, collects a finished result
with `fanout.poll` and otherwise checks deadlines, so a missing or dead worker shows as a
clear failure on the revision — never as a reward of 0.

Someone waits for an editor render, so it has a short deadline (EDITOR_RENDER_DEADLINE_S,
as the task's soft time limit): a render still running then is stopped, and the revision is
`deadline` with no reward — training gives a sketch RENDER_TIMEOUT_S, so the editor cannot
say what it would have scored. When the worker's own watchdog is quicker, its
`render_timeout` is a verdict like any other, worth 0 as in training. `revision_cancel`
revokes the task at once; the revision is `cancelled`, again with no reward.

A revision is rewarded exactly like a rollout: same recipe, references, render seed and
size as the original, combined by the painting pipeline's `reward_of`.

"Ask the model to revise" (`revision_ask_model`) makes a revision that is first `writing`:
the train worker (the one with the model; training/editor/model_revision.py) samples the
run's latest adapter on the chat the trainer gives at turn 2 and stores the reply
(`revision_written`), which then renders like any edit. The poll fails it when no train
worker takes it within its wait (one that is training a run takes nothing else).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from curation.images import ImageRejected, normalise_image
from curation.models import Provenance, Reference
from curation.services import reference_create
from paintapp.celery import app as celery_app
from paintenv.extraction import is_keep_reply, reply_text
from paintenv.gate import MAX_SOURCE_CHARS, gate_reply, gate_source
from paintenv.paint import UNRENDERABLE
from paintenv.sandbox import BLANK_CANVAS
from painting import fanout
from painting.pipeline import length_tokens, reward_of
from painting.results import RenderResult, ScoreResult
from training.editor.selectors import rollout_recipe, rollout_render_settings
from training.failures import failure_stage
from training.models import Revision, Rollout
from training.stored_turns import revision_chat

# How long a queued render or score may wait for a worker to take it. Editor tasks share the
# queues with training, so a few groups of renders may be ahead of them.
WORKER_WAIT_S = 120.0
# After a worker took a task, how long past its hard time limit we wait before calling it lost.
LOST_TASK_GRACE_S = 30.0
# An editor render's hard time limit is its deadline plus this: the soft limit should end it
# first (the renderer kills its browser), the hard one kills the worker process if not.
HARD_LIMIT_GRACE_S = 15.0
# How a stopped render task fails: the soft limit, or the hard one.
TIME_LIMIT_ERRORS = ("SoftTimeLimitExceeded", "TimeLimitExceeded")
# How long the train worker may take to load the run's model and write one revision (the
# revise task's soft time limit; its hard one is HARD_LIMIT_GRACE_S later).
MODEL_WRITE_LIMIT_S = 600.0
# Sending: a broker that does not answer within about a second fails the revision at once.
EDITOR_SEND_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5}
# The task "Ask the model to revise" queues (routed to `train` in paintapp/celery.py).
REVISE_TASK = "training.tasks.revise_with_model"


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


# --- revisions ------------------------------------------------------------------------------


def _enqueue(revision_id: int, field: str, task_id: str, send: Callable[[], object]) -> None:
    """Send the task (after the revision row is committed); a broker that is down fails the
    revision at once with the reason, instead of leaving it waiting."""
    try:
        send()
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds of connection errors
        Revision.objects.filter(id=revision_id, **{field: task_id}).update(
            status=Revision.Status.FAILED, finished_at=timezone.now(),
            error=f"Could not queue the task: the broker did not answer ({type(exc).__name__}: {exc})"[:2000],
        )


def revision_render(
    *, rollout: Rollout, code: str, created_by: AbstractBaseUser | None, wait_s: float = WORKER_WAIT_S
) -> Revision:
    """Save `code` as a new revision of `rollout` and queue its render (gate + sandboxed render
    on the `render` queue, with the rollout's seed and size, stopped at the editor's
    deadline). Returns at once."""
    code = code_clean(code)
    with transaction.atomic():
        revision = Revision(rollout=rollout, code=code, created_by=created_by)
        _render_start(revision, wait_s=wait_s)
    revision.refresh_from_db()
    return revision


def _render_start(revision: Revision, *, wait_s: float) -> None:
    """Save `revision` as rendering its code and queue the render once that is committed (in
    the caller's transaction)."""
    task_id = str(uuid.uuid4())
    deadline_s = settings.EDITOR_RENDER_DEADLINE_S
    limits = {"soft_time_limit": deadline_s, "time_limit": deadline_s + HARD_LIMIT_GRACE_S}
    revision.status = Revision.Status.RENDERING
    revision.render_task_id = task_id
    revision.stage_started_at = timezone.now()
    revision.wait_s = wait_s
    revision.save()
    # Rendered even when the gate fails (the reward stays 0): the author sees what it draws; a
    # painting that passes is rendered twice, since its reward stands beside the rollout's.
    kwargs = {**rollout_render_settings(revision.rollout), "render_failed_gate": True, "check_determinism": True}
    call = {"code": revision.code, **kwargs}
    revision_id = revision.id
    transaction.on_commit(lambda: _enqueue(revision_id, "render_task_id", task_id, lambda: fanout.submit(
        "render", [call], wait_s=wait_s, task_ids=[task_id], retry_policy=EDITOR_SEND_RETRY, **limits)))


# --- the model's revisions ------------------------------------------------------------------


def revision_ask_model(
    *, rollout: Rollout, source: Revision | None = None, requested_by: AbstractBaseUser | None,
    wait_s: float = WORKER_WAIT_S,
) -> Revision:
    """Ask the run's model to revise the rollout (or its revision `source`): a new revision,
    `writing`, whose chat is the one the trainer gives at turn 2 (the prompt, the sketch's
    reply, the feedback on how it came out), sent to the train worker, which samples the
    run's latest adapter and then renders the sketch like a curator's edit. Returns at once."""
    if rollout.run.trained_elsewhere:
        raise EditorError("This run was trained elsewhere: the studio has no model of it to ask. Edit the code "
                          "yourself, or ask the trainer's owner.", status=409)
    if source is not None and source.is_pending:
        raise EditorError(f"Revision {source.id} is still {source.get_status_display().lower()}: ask the model "
                          "once it has come out, so it can be told how.", status=409)
    feedback = revision_chat(rollout.subject, source or rollout)[-1]["content"]
    task_id = str(uuid.uuid4())
    limits = {"soft_time_limit": MODEL_WRITE_LIMIT_S, "time_limit": MODEL_WRITE_LIMIT_S + HARD_LIMIT_GRACE_S}
    with transaction.atomic():
        revision = Revision.objects.create(
            rollout=rollout, parent=source, author=Revision.Author.MODEL, feedback=feedback,
            status=Revision.Status.WRITING, created_by=requested_by, write_task_id=task_id,
            stage_started_at=timezone.now(), wait_s=wait_s,
        )
        task = celery_app.signature(REVISE_TASK, args=[revision.id])
        transaction.on_commit(lambda: _enqueue(revision.id, "write_task_id", task_id, lambda: task.apply_async(
            task_id=task_id, expires=wait_s, retry=True, retry_policy=EDITOR_SEND_RETRY, **limits)))
    revision.refresh_from_db()
    return revision


def revision_written(*, revision: Revision, reply: str, adapter: str) -> Revision:
    """Store the model's reply to a writing revision and go on as with a curator's edit: its
    sketch renders; a reply with no renderable sketch (none, or cut off) is done at once, worth
    0 as in training. A KEEP reply (the model would not change it) takes the code it was shown
    and paints it again. A revision cancelled or failed meanwhile is left as it is."""
    with transaction.atomic():
        locked = Revision.objects.select_for_update().select_related("rollout__run").get(pk=revision.pk)
        if locked.status != Revision.Status.WRITING:
            return locked
        reply = reply_text(reply)
        if is_keep_reply(reply):  # the model would not change it: the sketch it was shown, painted again
            code = (locked.parent or locked.rollout).code
            verdict = gate_source(code)
        else:
            code, verdict = gate_reply(reply)
        locked.reply, locked.code, locked.adapter = reply, code or "", adapter
        if code is not None and not set(verdict.codes) & UNRENDERABLE:
            _render_start(locked, wait_s=locked.wait_s)
            return locked
        locked.violations, locked.passed = verdict.codes, False
        locked.reward, locked.parts, _ = reward_of(
            rollout_recipe(locked.rollout), code=locked.code, gate_passed=False, render=None, score=None)
        locked.status = Revision.Status.DONE
        locked.finished_at = timezone.now()
        locked.save()
    return locked


def revision_not_written(*, revision: Revision, error: str) -> Revision:
    """The model could not write a revision (its model would not load, generation failed):
    `failed`, with the reason, unless it was cancelled meanwhile."""
    return _finish(revision, Revision.Status.WRITING, error=error)


def revision_score(*, revision: Revision, wait_s: float = WORKER_WAIT_S) -> Revision:
    """Queue the judge and quality scoring of a rendered revision against the original's
    references, with the run's recipe and pool. Again after a failed score, too."""
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
        call = {"png_path": locked.png, **kwargs}
        transaction.on_commit(lambda: _enqueue(locked.id, "score_task_id", task_id, lambda: fanout.submit(
            "score", [call], wait_s=wait_s, task_ids=[task_id], retry_policy=EDITOR_SEND_RETRY)))
    revision.refresh_from_db()
    return revision


def _why_not_scorable(revision: Revision) -> str:
    if revision.status == Revision.Status.WRITING:
        return "The model is still writing this revision; score it once its painting is there."
    if revision.status == Revision.Status.RENDERING:
        return "This revision is still rendering; score it once its painting is there."
    if revision.status == Revision.Status.SCORING:
        return "This revision is already being scored."
    if revision.status == Revision.Status.DONE and revision.passed:
        return "This revision is already scored."
    if not revision.png:
        return "This revision has no painting to score (its render failed)."
    return "Only a painting that passed the gate and the render can be scored; this one is worth 0."


def revision_sync(*, revision: Revision, now: datetime | None = None) -> Revision:
    """Collect the result of the revision's pending task if it is finished, or fail the revision
    if no worker answered in time. Never blocks. Sets `revision.task_state` (a Celery state, or
    "" when nothing is pending) for the page's progress line. `now` is the clock (tests pass one)."""
    revision.task_state = ""
    if not revision.is_pending:
        return revision
    stage = revision.status
    what, field = {
        Revision.Status.WRITING: ("write", "write_task_id"),
        Revision.Status.RENDERING: ("render", "render_task_id"),
        Revision.Status.SCORING: ("score", "score_task_id"),
    }[stage]
    polled = fanout.poll(fanout.Handle(getattr(revision, field), what))
    state, outcome = polled.state, polled.value
    revision.task_state = state

    now = now or timezone.now()
    elapsed = (now - revision.stage_started_at).total_seconds() if revision.stage_started_at else 0.0
    limit_s = {"write": MODEL_WRITE_LIMIT_S + HARD_LIMIT_GRACE_S, "score": settings.SCORE_TIME_LIMIT_S,
               "render": settings.EDITOR_RENDER_DEADLINE_S + HARD_LIMIT_GRACE_S}[what]
    if state == "SUCCESS" and what == "write":  # the train worker stored the reply and moved it on
        written = Revision.objects.select_related("created_by").get(pk=revision.pk)
        written.rollout = revision.rollout
        return revision_sync(revision=written, now=now) if written.is_pending else _settled(written)
    if state == "SUCCESS" and isinstance(outcome, dict):
        return _finish(revision, stage, outcome=outcome)
    if state == "FAILURE" and type(outcome).__name__ in TIME_LIMIT_ERRORS:
        if what == "write":
            return _finish(revision, stage, error=f"The model was still writing after {MODEL_WRITE_LIMIT_S:.0f} s, "
                                                  "so it was stopped: no revision, no reward.")
        if what == "render":
            return _finish(revision, stage, error=_past_deadline(), status=Revision.Status.DEADLINE)
    if state in ("FAILURE", "REVOKED"):
        if state == "REVOKED" or "expired" in str(outcome).lower():
            return _finish(revision, stage, error=_no_worker(what, revision.wait_s))
        worker = "train" if what == "write" else what
        return _finish(revision, stage, error=f"The {worker} worker failed: {type(outcome).__name__}: {outcome}")
    if state == "UNKNOWN" and elapsed > revision.wait_s:
        return _finish(revision, stage, error=f"The result backend did not answer: {type(outcome).__name__}: {outcome}")
    if state == "PENDING" and elapsed > revision.wait_s:
        return _finish(revision, stage, error=_no_worker(what, revision.wait_s))
    if state not in ("PENDING", "UNKNOWN") and elapsed > revision.wait_s + limit_s + LOST_TASK_GRACE_S:
        worker = "train" if what == "write" else what
        return _finish(
            revision, stage,
            error=f"A {worker} worker took this {what} but gave no result within {elapsed:.0f} s; it may have died.",
        )
    return revision


def _settled(revision: Revision) -> Revision:
    revision.task_state = ""
    return revision


def _no_worker(what: str, wait_s: float) -> str:
    if what == "write":
        return (
            f"No train worker took this request within {wait_s:.0f} s, so the model wrote nothing (no reward, "
            "not a 0). The train worker runs one task at a time: while a run trains there, ask again after it; "
            "if none is running, start one with `make worker-train`. The System page lists live workers."
        )
    command = "make worker-render" if what == "render" else "make worker-score"
    return (
        f"No {what} worker took this {what} within {wait_s:.0f} s, so there is no reward (not a 0). "
        f"Is one running? Start one with `{command}`; the System page lists live workers."
    )


def _past_deadline() -> str:
    deadline_s = settings.EDITOR_RENDER_DEADLINE_S
    return (
        f"The render was still running after {deadline_s:g} s, the editor's deadline, so it was stopped; "
        f"an endless loop is the usual cause. Training gives a sketch {settings.RENDER_TIMEOUT_S} s, so this "
        "is no verdict: no reward (not a 0)."
    )


def _finish(revision: Revision, expected: str, *, outcome: dict | None = None, error: str = "",
            status: str = Revision.Status.FAILED) -> Revision:
    """Store a finished task's outcome once, even when two polls race to collect it (or a
    Cancel, or the train worker's own result, got there first)."""
    with transaction.atomic():
        locked = Revision.objects.select_for_update().get(pk=revision.pk)
        if locked.status != expected:
            locked.task_state = ""
            return locked
        if error:
            locked.status = status
            locked.error = error[:2000]
            locked.finished_at = timezone.now()
        elif expected == Revision.Status.RENDERING:
            _apply_render(locked, outcome)
        else:
            _apply_score(locked, outcome)
        locked.save()
    locked.task_state = ""
    return locked


def _apply_render(revision: Revision, render: RenderResult) -> None:
    render = dict(render)
    revision.png = render.pop("png_path", None) or ""
    render.pop("png", None)
    revision.render = render
    revision.violations = list(render.get("violations", []))
    revision.passed = bool(render.get("passed"))
    recipe = rollout_recipe(revision.rollout)
    if revision.passed:
        # Gate and length are known now; judge and quality come with Score.
        revision.parts = {"gate": 1.0, "length": recipe.length_part(length_tokens(revision.code, render))}
        revision.status = Revision.Status.RENDERED
        return
    gate_passed = bool((render.get("gate") or {}).get("passed"))
    reward, parts, _ = reward_of(recipe, code=revision.code, gate_passed=gate_passed, render=render, score=None)
    revision.reward, revision.parts = reward, parts
    revision.status = Revision.Status.DONE
    revision.finished_at = timezone.now()


def _apply_score(revision: Revision, score: ScoreResult) -> None:
    reward, parts, failure = reward_of(
        rollout_recipe(revision.rollout), code=revision.code, gate_passed=True, render=revision.render, score=score,
    )
    revision.reward, revision.parts = reward, parts
    revision.judge_detail = score.get("judge") or {}
    revision.error = f"No reward (not a 0): {failure}" if reward is None else ""
    revision.status = Revision.Status.DONE
    revision.finished_at = timezone.now()


def revision_cancel(*, revision: Revision, cancelled_by: AbstractBaseUser | None, now: datetime | None = None) -> Revision:
    """Stop a revision that is being written, rendered or scored: its task is revoked (a worker running it
    is told to terminate it) and the revision is `cancelled`, with no reward. A result that
    arrives later is never collected."""
    with transaction.atomic():
        locked = Revision.objects.select_for_update().get(pk=revision.pk)
        if not locked.is_pending:
            raise EditorError(f"Revision {locked.id} is not being written, rendered or scored any more: "
                              "nothing to cancel.", status=409)
        task_id, stage, doing = {
            Revision.Status.WRITING: (locked.write_task_id, "write", "writing"),
            Revision.Status.RENDERING: (locked.render_task_id, "render", "rendering"),
            Revision.Status.SCORING: (locked.score_task_id, "score", "scoring"),
        }[locked.status]
        now = now or timezone.now()
        elapsed = (now - locked.stage_started_at).total_seconds() if locked.stage_started_at else 0.0
        who = cancelled_by.get_username() if cancelled_by else "someone"
        note = f"Cancelled by {who} after {elapsed:.0f} s of {doing}"
        try:
            fanout.revoke([fanout.Handle(task_id, stage)])
            note += "; the worker was told to stop it. No reward (not a 0)."
        except Exception as exc:  # noqa: BLE001 - kombu raises many kinds of connection errors
            note += (f"; the broker did not answer ({type(exc).__name__}), so the task runs out on its own and "
                     "its result is ignored. No reward (not a 0).")
        locked.status = Revision.Status.CANCELLED
        locked.error = note
        locked.finished_at = now
        locked.save(update_fields=["status", "error", "finished_at"])
    locked.task_state = ""
    return locked


# --- promote --------------------------------------------------------------------------------


def promotion_refusal(rollout: Rollout) -> str:
    """Why the rollout's painting cannot become a reference, or "" when it can: a curator's
    grade is for a painting that passed the gate and the render."""
    if not rollout.png:
        return "This rollout has no painting to promote."
    if BLANK_CANVAS in rollout.violations:
        return "This painting is blank (blank_canvas): there is nothing in it to grade, so it cannot be promoted."
    if not rollout.passed:
        codes = ", ".join(rollout.violations) or "no verdict"
        return (f"This painting failed the {failure_stage(rollout.violations)} ({codes}): only a painting that "
                "passed the gate and the render can be promoted.")
    return ""


def rollout_promote(*, rollout: Rollout, created_by: AbstractBaseUser | None) -> tuple[Reference, bool]:
    """Put the rollout's painting, with its sketch, into the reference library for a curator
    to grade. Content-addressed: promoting the same painting again returns the existing
    reference and False."""
    refusal = promotion_refusal(rollout)
    if refusal:
        raise EditorError(refusal, status=409)
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
