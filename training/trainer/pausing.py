"""A run that pauses because the render or score workers it needs are gone.

The reward function (training/trainer/rewarding.py) raises `WorkersMissing` when a step's rollouts
were all lost to infrastructure twice and a queue they need still has no worker. TRL calls
the reward function before the step's backward pass and optimizer step, so the exception ends
`trainer.train()` with the model, optimizer and scheduler exactly as the last finished step
left them. `checkpoint_now` then writes a checkpoint of that step and `run_pause` marks the run `waiting`;
Resume (by hand, or `runs_resume_waiting` once the workers answer) redoes the lost step from
it: no step is skipped and none is taken on the lost rollouts.
"""
from __future__ import annotations

import logging
from pathlib import Path

from django.db import close_old_connections
from django.utils import timezone

from paintapp.lib.workers import missing_worker_message
from training.models import Run
from training.trainer import together
from training.trainer.checkpoints import is_complete

log = logging.getLogger(__name__)


class WorkersMissing(Exception):
    """A step lost to infrastructure twice, with no worker on `queue`: pause the run."""

    def __init__(self, *, step: int, queue: str):
        self.step, self.queue = step, queue
        super().__init__(missing_worker_message(queue))


def checkpoint_now(trainer) -> int:
    """Write the checkpoint of the trainer's last finished step (unless it has one); its step.

    `Trainer._save_checkpoint` is private, but it is the only code that writes what
    `train(resume_from_checkpoint=...)` reads back (weights, optimizer, scheduler, RNG and
    trainer state; TRL's override adds its model card); `save_model`, the public one, writes
    the weights alone. `on_save` then tells the callbacks, as the Trainer does after it.
    Step 0 needs none: a resumed run without a checkpoint starts from the base model.
    """
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    step = trainer.state.global_step
    folder = Path(trainer.args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{step}"
    # Sealed by training.trainer.checkpoints' callback on on_save; every process saves its part, or none does.
    if together.main_decides(lambda: bool(step) and not is_complete(folder)):
        trainer._save_checkpoint(trainer.model_wrapped, trial=None)
        trainer.control = trainer.callback_handler.on_save(trainer.args, trainer.state, trainer.control)
    return step


def run_pause(*, run_id: int, task_id: str, step: int, missing: WorkersMissing) -> str:
    """Mark the run, checkpointed at `step` (checkpoint_now), waiting for `missing.queue` (or
    stopped, when the curator asked it to stop meanwhile); the status it got. A trainer whose
    run was resumed in another task meanwhile writes nothing to the run."""
    close_old_connections()  # the wait for workers may have outlived the database connection
    stopping = Run.objects.filter(id=run_id, stop_requested=True).exists()
    status = Run.Status.STOPPED if stopping else Run.Status.WAITING
    log.warning("run %s: step %s lost to infrastructure twice (%s): %s at step %s",
                run_id, missing.step, missing, status, step)
    Run.objects.filter(id=run_id, task_id=task_id).update(
        status=status, steps_done=step, checkpoint_step=step or None,
        waiting_for="" if stopping else str(missing), finished_at=timezone.now() if stopping else None,
    )
    return status
