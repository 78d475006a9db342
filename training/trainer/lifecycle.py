"""A run's trainer lifecycle: which delivery of its task may train, the trainer's heartbeat,
the reaper that marks a run whose trainer went silent, and training one delivery around the
TRL script (training/trainer/grpo.py): from which checkpoint, in how many processes, and how
the run's end (finished, stopped, paused, failed) is written.

- Each delivery of `run_training` is counted in Run.attempts; only the run's current task
  (Run.task_id) may train, and past `TRAIN_MAX_ATTEMPTS` the run fails instead of loading the
  model again (a pool child killed on every load is requeued at once, without end).
- While a trainer works on a run, a daemon thread writes Run.heartbeat_at every
  `TRAINER_HEARTBEAT_S` on its own database connection.
- `runs_reap` (Celery beat -> `training.tasks.reap_runs` on a score worker) marks a running run
  whose heartbeat is older than `TRAINER_STALE_S` interrupted, keeping its last complete
  checkpoint, so a dead worker or machine never leaves a run `running` forever.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import Case, CharField, F, TextField, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from paintapp.lib.db import outlasting_restarts
from training.arguments import RunArguments, batch_layout
from training.models import Rollout, Run, Step
from training.trainer import checkpoint_store
from training.trainer.checkpoints import checkpoint_step, discard_incomplete, last_checkpoint
from training.trainer.launching import ProcessesFailed, train_in_processes
from training.trainer.pausing import WorkersMissing, run_pause
from training.trainer.steps import Outcome, train_steps
from training.trainer.tracking import leave_out_unchosen_trackers

log = logging.getLogger(__name__)

# States in which a delivery of the run's own task trains (INTERRUPTED: the broker handed back
# the task of a trainer that was reaped, and no one has resumed the run since).
TRAINABLE = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.STOPPING, Run.Status.INTERRUPTED)


@dataclass(frozen=True)
class Delivery:
    """What one delivery of a run's train task does: train (from a checkpoint when `resume`), or
    nothing, with the run's status as the task's result."""

    train: bool
    resume: bool = False
    status: str = ""


def resume_point(run: Run) -> str:
    return f"step {run.checkpoint_step}" if run.checkpoint_step else "the start (no complete checkpoint yet)"


def run_delivery_begin(*, run_id: int, task_id: str, resume: bool, now: datetime) -> Delivery:
    """Count this delivery of the run's train task and decide whether it trains."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id).first()
        if run is None:
            return Delivery(train=False, status="deleted")
        if run.task_id != task_id:
            # An old message, redelivered after the run was resumed in a newer task.
            log.warning("run %s: task %s is not the run's current task %s; ignored", run_id, task_id, run.task_id)
            return Delivery(train=False, status="superseded")
        if run.status not in TRAINABLE:
            return Delivery(train=False, status=run.status)  # a duplicate of a task that already ended
        redelivered = run.status != Run.Status.QUEUED
        attempts = run.attempts + 1
        if attempts > settings.TRAIN_MAX_ATTEMPTS:
            lost = attempts - 1
            Run.objects.filter(id=run.id).update(
                status=Run.Status.FAILED, finished_at=now, attempts=attempts,
                error=(f"The trainer was lost {lost} times while training this run (each time its worker "
                       "process died or was killed, e.g. out of memory while loading the model), so it was not "
                       f"started again. Fix the cause, then Resume: it continues from {resume_point(run)}."),
            )
            return Delivery(train=False, status=Run.Status.FAILED)
        if redelivered and run.stop_requested:
            # The trainer was lost while stopping: the stop is done; the run keeps its last checkpoint.
            Run.objects.filter(id=run.id).update(status=Run.Status.STOPPED, finished_at=now, attempts=attempts)
            return Delivery(train=False, status=Run.Status.STOPPED)
        Run.objects.filter(id=run.id).update(
            status=Run.Status.RUNNING, attempts=attempts, heartbeat_at=now, started_at=run.started_at or now,
            trainer=f"{socket.gethostname()}:{os.getpid()}",
        )
    return Delivery(train=True, resume=resume or redelivered)


def run_heartbeat(*, run_id: int, task_id: str, now: datetime) -> bool:
    """Record a sign of life of the run's trainer; False once the run is no longer its task's.

    A run reaped while its trainer was only cut off (its database down longer than the stale
    limit) is running again as soon as the trainer is heard from.
    """
    return bool(Run.objects.filter(id=run_id, task_id=task_id).update(
        heartbeat_at=now,
        status=Case(When(status=Run.Status.INTERRUPTED, then=Value(Run.Status.RUNNING)), default=F("status"),
                    output_field=CharField()),
        error=Case(When(status=Run.Status.INTERRUPTED, then=Value("")), default=F("error"), output_field=TextField()),
    ))


class Heartbeat:
    """`with Heartbeat(run_id, task_id):` beats from a daemon thread until the block ends.

    The thread has its own database connection (Django's are per thread). A beat that fails
    (the database is briefly down) is logged and the next one tries again on a new connection.
    """

    def __init__(self, run_id: int, task_id: str, *, interval_s: float | None = None,
                 record: Callable[..., bool] = run_heartbeat):
        self.run_id, self.task_id = run_id, task_id
        self.interval_s = settings.TRAINER_HEARTBEAT_S if interval_s is None else interval_s
        self.record = record  # the test of a failing database passes its own
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"run-{run_id}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 30)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._beat()
                self._stop.wait(self.interval_s)
        finally:
            connection.close()  # this thread's own connection

    def _beat(self) -> None:
        try:
            if not self.record(run_id=self.run_id, task_id=self.task_id, now=timezone.now()):
                log.warning("run %s is no longer task %s's: heartbeat stops", self.run_id, self.task_id)
                self._stop.set()
        except Exception as exc:  # noqa: BLE001 - a heartbeat thread that dies gets a live run reaped
            self.failures += 1
            log.warning("run %s: heartbeat not written (%s); retrying in %.0f s", self.run_id, exc, self.interval_s)
            try:
                connection.close()  # the next beat opens a new one
            except DatabaseError:
                pass


def _stale_reason(run: Run, seen: datetime, stale_s: float) -> str:
    return (f"The trainer stopped answering: no heartbeat since {seen:%Y-%m-%d %H:%M:%S} UTC (more than "
            f"{stale_s:.0f} s), so its worker or machine was probably lost. Resume continues from {resume_point(run)}.")


def runs_reap(*, now: datetime) -> list[int]:
    """Mark the runs whose trainer went silent: a running one `interrupted` with the reason, a
    stopping one `stopped` (the stop it waited for is done). Each keeps its last complete
    checkpoint. A queued run no train worker took has no trainer yet and waits. Returns their ids."""
    stale_s = float(settings.TRAINER_STALE_S)
    silent = (
        Run.objects.filter(status__in=(Run.Status.RUNNING, Run.Status.STOPPING))
        .annotate(seen=Coalesce("heartbeat_at", "started_at", "created_at"))
        .filter(seen__lt=now - timedelta(seconds=stale_s))
    )
    reaped = []
    for run in silent:
        complete = last_checkpoint(run.output_dir) if run.output_dir else None
        if complete is not None:
            run.checkpoint_step = checkpoint_step(complete)
        interrupted = run.status == Run.Status.RUNNING
        # Only if no beat arrived since it was read: a trainer heard from just now stays running.
        updated = Run.objects.filter(id=run.id, status=run.status, heartbeat_at=run.heartbeat_at).update(
            status=Run.Status.INTERRUPTED if interrupted else Run.Status.STOPPED,
            error=_stale_reason(run, run.seen, stale_s) if interrupted else "",
            checkpoint_step=run.checkpoint_step, finished_at=None if interrupted else now,
        )
        if updated:
            log.warning("run %s: no heartbeat since %s; marked %s", run.id, run.seen, "interrupted" if interrupted else "stopped")
            reaped.append(run.id)
    return reaped


# --- training one delivery: around the TRL script (training/trainer/grpo.py) ----------------


def train_run(run_id: int, *, task_id: str, resume: bool = False, one_run_process: bool = False) -> str:
    """Train one delivery of the run's task (see training.trainer.lifecycle for which deliveries train).
    `one_run_process`: this process exits after this task (a train worker's child), so the trackers
    the run does not report to are never loaded."""
    close_old_connections()
    delivery = run_delivery_begin(run_id=run_id, task_id=task_id, resume=resume, now=timezone.now())
    if not delivery.train:
        return delivery.status
    run = Run.objects.select_related("pool").get(id=run_id)
    args = run.arguments
    if one_run_process:
        leave_out_unchosen_trackers(args.report_to)
    with Heartbeat(run.id, task_id):  # from before the model loads until the run's status is written
        return _train(run, args, task_id, resume=delivery.resume)


def _train(run: Run, args: RunArguments, task_id: str, *, resume: bool) -> str:
    # From the output folder, else (a new machine) the copy in object storage.
    checkpoint = checkpoint_store.restore(run.id, run.output_dir) if resume else None
    discard_incomplete(run.output_dir)
    done = checkpoint_step(checkpoint) if checkpoint else 0
    _forget_steps_after(run, done)
    Run.objects.filter(id=run.id).update(
        steps_done=done, resumed_from=str(checkpoint or ""), checkpoint_step=done or None, error="",
    )
    mine = Run.objects.filter(id=run.id, task_id=task_id)  # a trainer whose run was resumed elsewhere writes nothing
    try:
        processes = process_count(args)
        batch_layout(args, processes)  # num_processes=0 is only counted here
        if processes > 1 or args.accelerate_config:
            outcome = Outcome(**train_in_processes(
                run_id=run.id, task_id=task_id, checkpoint=checkpoint, processes=processes,
                config_file=args.accelerate_config,
            ))
        else:
            outcome = train_steps(run, args, task_id, checkpoint=checkpoint)
    except Exception as exc:  # noqa: BLE001 - the run records why it failed
        log.exception("run %s failed", run.id)
        error = exc.report if isinstance(exc, ProcessesFailed) else (
            f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()[-4000:]}")
        outlasting_restarts(lambda: mine.update(status=Run.Status.FAILED, finished_at=timezone.now(), error=error),
                            what="recording the run's failure")
        return Run.Status.FAILED
    return _record(run, task_id, outcome)


def process_count(args: RunArguments) -> int:
    """The processes a run trains in: num_processes, or for 0 one per visible GPU (1 without)."""
    if args.num_processes:
        return args.num_processes
    import torch

    return max(1, torch.cuda.device_count())


def _forget_steps_after(run: Run, step: int) -> None:
    """A resumed run redoes the steps after its checkpoint: their old rows would be duplicates."""
    Step.objects.filter(run=run, step__gt=step).delete()
    Rollout.objects.filter(run=run, step__gt=step).delete()


def _record(run: Run, task_id: str, outcome: Outcome) -> str:
    """Write how training ended on the run (unless it is no longer this task's); its status."""
    if outcome.ended == "superseded":
        return "superseded"
    if outcome.ended == "paused":
        missing = WorkersMissing(step=outcome.missing_step, queue=outcome.missing_queue)
        return run_pause(run_id=run.id, task_id=task_id, step=outcome.steps, missing=missing)
    mine = Run.objects.filter(id=run.id, task_id=task_id)
    status = Run.Status.STOPPED if outcome.stopped else Run.Status.FINISHED
    outlasting_restarts(lambda: mine.update(steps_done=outcome.steps, status=status, finished_at=timezone.now()),
                        what="recording the run's end")
    return status
