"""The pipeline core: send renders and scores to the workers, get handles back, collect them.

Both ways of waiting go through here, so they share one deadline and revoke policy:

- `paint_batch` (the trainer, evaluation, `paint score`) sends a whole stage with `submit` and
  blocks in `collect` until every task is back or the stage's deadline passes;
- the rollout editor sends one task with `submit`, returns to the page at once, and `poll`s it
  on each of the page's requests; Cancel and a deadline passed end it with `give_up`.

The policy: a task carries an expiry (`wait_s`) so a worker that takes it later discards it;
what is not back by the deadline is revoked and, if started, terminated (a render keeps its
pool process busy until its own timeout, a minute by default, so left running it would take the
next step's worker); a result that still comes back after that is late — counted, never used.
kombu's SQLAlchemy transport (the embedded mode) cannot broadcast a revoke: there the expiry
alone keeps unstarted tasks from running, and a started one runs to its end.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from celery import group, states
from celery.exceptions import TimeoutError as ResultTimeout
from celery.result import AsyncResult
from django.conf import settings

from paintapp.lib.workers import broker_broadcasts
from paintenv.reward import Recipe
from painting.tasks import render_sketch, score_painting

log = logging.getLogger(__name__)

STAGE_TASKS = {"render": render_sketch, "score": score_painting}
# Sending rides out a broker restart (seconds) instead of failing the whole stage after
# Celery's default 0.6 s of retries: up to ~30 s, before the stage's deadline starts.
SEND_RETRY_POLICY = {"max_retries": 30, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
# States in which a task will not change any more.
FINISHED = frozenset({states.SUCCESS, states.FAILURE, states.REVOKED})
UNKNOWN = "UNKNOWN"  # the result backend did not answer
POLL_S = 0.05
CANCEL_CHECK_S = 0.25  # how often a cancellable wait looks at its cancel flag


@dataclass(frozen=True)
class Handle:
    """One task sent to a worker: enough to poll, collect or give it up later, in any process."""

    task_id: str
    stage: str  # "render" or "score" (or the editor's "write", sent to the train worker)

    @property
    def result(self) -> AsyncResult:
        return AsyncResult(self.task_id, app=render_sketch.app)


@dataclass(frozen=True)
class Polled:
    """Where a task stands: its Celery state (or UNKNOWN) and, once finished, its value — the
    task's return value on SUCCESS, the exception otherwise."""

    state: str
    value: Any = None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


class LateResult(TimeoutError):
    """A task's result that came back after its stage's deadline: counted, never used."""


class GivenUp(TimeoutError):
    """A task that was not back by its stage's deadline: revoked (terminated if started)."""


def score_queue(recipe: Recipe) -> str:
    """Where `recipe`'s paintings are scored: with PAINTAPP_GPU_SCORE_QUEUE set (a GPU box),
    a recipe that weights HPSv3 is scored on that queue, whose workers run one process per GPU,
    so HPSv3 (~17 GB) is loaded once per GPU rather than once per score process; everything
    else on `score`."""
    gpu_queue = settings.GPU_SCORE_QUEUE
    if gpu_queue and recipe.quality == "hpsv3" and recipe.w_quality > 0:
        return gpu_queue
    return score_painting.app.conf.task_routes[score_painting.name]["queue"]


def submit(stage: str, calls: Sequence[dict], *, wait_s: float | None, task_ids: Sequence[str] | None = None,
           retry_policy: dict | None = None, **options: Any) -> list[Handle]:
    """Send one task of `stage` per call (keyword arguments), all at once; a worker that takes
    one after `wait_s` discards it. `options` are Celery's (time limits, ...); score tasks go to
    their recipe's queue (`score_queue`). Raises what the broker raises when it cannot be
    reached after the retries."""
    task = STAGE_TASKS[stage]
    if stage == "score" and calls and "queue" not in options:
        options["queue"] = score_queue(Recipe.from_dict(calls[0]["recipe"]))
    expires = wait_s if wait_s is not None and math.isfinite(wait_s) else None
    signatures = [task.s(**call) for call in calls]
    if task_ids is not None:
        signatures = [signature.set(task_id=task_id) for signature, task_id in zip(signatures, task_ids)]
    sent = group(signatures).apply_async(expires=expires, retry=True,
                                         retry_policy=retry_policy or SEND_RETRY_POLICY, **options)
    return [Handle(result.id, stage) for result in sent.results]


def poll(handle: Handle) -> Polled:
    """The task's state now, without waiting."""
    result = handle.result
    try:
        state = result.state
        return Polled(state, result.result if state in FINISHED else None)
    except Exception as exc:  # noqa: BLE001 - the result backend is unreachable
        return Polled(UNKNOWN, exc)


class Cancelled(RuntimeError):
    """A task whose waiter went away (an environment client that disconnected mid-step):
    revoked like one past its deadline, and never a reward."""


def collect(handles: Sequence[Handle], *, deadline_s: float, progress: Callable[[int], None],
            settle_s: float = 2.0, cancel: threading.Event | None = None) -> list[Any]:
    """Wait for `handles` until `deadline_s` from now: each task's return value, or the
    exception it failed with (a dead worker, RenderUnavailable, a broker down), or — for those
    not back by then, which are given up — GivenUp, or LateResult when one came back anyway.
    `progress(n)` after each of the first n comes back. Once `cancel` is set, what is not back
    is given up at once, as Cancelled."""
    deadline = time.monotonic() + deadline_s
    outcomes: list[Any] = []
    pending: list[int] = []
    for index, handle in enumerate(handles):
        result = handle.result
        try:
            while True:
                remaining = deadline - time.monotonic()
                if (remaining <= 0 or (cancel is not None and cancel.is_set())) and not result.ready():
                    raise ResultTimeout()
                # Waiting on subtasks from inside a task (the trainer, evaluation) is intended:
                # they run on other queues, so they cannot deadlock the waiting worker. With a
                # `cancel` to watch, the wait is cut in slices of CANCEL_CHECK_S.
                wait = max(remaining, 0.001) if cancel is None else min(max(remaining, 0.001), CANCEL_CHECK_S)
                try:
                    outcomes.append(result.get(timeout=wait, disable_sync_subtasks=False, propagate=True))
                    break
                except ResultTimeout:
                    if cancel is None or time.monotonic() >= deadline:
                        raise
        except ResultTimeout:
            outcomes.append(None)
            pending.append(index)
        except Exception as exc:  # noqa: BLE001 - dead worker, RenderUnavailable, broker down
            outcomes.append(exc)
        progress(len(outcomes))
    if pending and cancel is not None and cancel.is_set():
        give_up([handles[i] for i in pending], settle_s=0.0)
        for index in pending:
            outcomes[index] = Cancelled("its waiter went away; revoked")
        return outcomes
    if pending:
        came_back = give_up([handles[i] for i in pending], settle_s=settle_s)
        for index, late in zip(pending, came_back):
            outcomes[index] = (LateResult if late else GivenUp)(
                f"not back by the stage's {deadline_s:g} s deadline"
                + ("; it came back later and was not used" if late else "; revoked")
            )
    return outcomes


def give_up(handles: Sequence[Handle], *, settle_s: float = 2.0) -> list[bool]:
    """Revoke the tasks of `handles`, terminating started ones, and wait up to `settle_s` for
    the terminated to end; whether each came back anyway (late). Terminating costs the worker
    pool a fresh child process and browser, and loses nothing: renders and scores are pure
    functions of their arguments, stored content-addressed."""
    if not handles:
        return []
    results = [handle.result for handle in handles]
    try:
        if broker_broadcasts():
            revoke(handles)
            settle = time.monotonic() + settle_s
            while time.monotonic() < settle and any(result.state == states.STARTED for result in results):
                time.sleep(POLL_S)
        return [result.successful() for result in results]
    except Exception:  # noqa: BLE001 - broker or backend down: the tasks still expire unseen
        log.warning("could not revoke %s tasks past their deadline", len(results), exc_info=True)
        return [False] * len(results)


def revoke(handles: Sequence[Handle]) -> None:
    """Tell the workers to drop the tasks of `handles` and terminate those running, without
    waiting; raises what the broker raises when it cannot broadcast."""
    render_sketch.app.control.revoke([handle.task_id for handle in handles], terminate=True)
