"""TrainerCallbacks: TRL's metrics plus ours -> one Step row per step; the stop flag; sealed checkpoints;
where the run's tracking lives."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from django.utils import timezone
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from paintapp.lib.db import outlasting_restarts
from training import metrics as keys
from training.models import Run, Step
from training.trainer import checkpoint_store, together, tracking
from training.trainer.checkpoints import seal
from training.trainer.rewarding import PaintingReward

log = logging.getLogger(__name__)


def _clean(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None  # NaN/inf -> None


class RunCallback(TrainerCallback):
    """A Step row per logged step, the run's steps done, and its stop flag. `reward`: a GRPO run's
    reward function, whose step figures join TRL's; None for an SFT run (TRL's figures alone)."""

    def __init__(self, run_id: int, reward: PaintingReward | None, task_id: str):
        self.run_id = run_id
        self.reward = reward
        self.task_id = task_id
        self.step_started = time.monotonic()

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            outlasting_restarts(lambda: Run.objects.filter(id=self.run_id, status=Run.Status.QUEUED).update(
                status=Run.Status.RUNNING, started_at=timezone.now()
            ), what="marking the run running")

    def on_step_begin(self, args, state, control, **kwargs):
        self.step_started = time.monotonic()
        if self.reward is not None:
            self.reward.step_started_at = self.step_started

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "train_runtime" in logs:
            return  # the end-of-training summary is not a step
        step = state.global_step
        metrics = {k: _clean(v) for k, v in logs.items()}
        record = self.reward.last if self.reward is not None else None
        if self.reward is None:
            metrics[keys.STEP_S] = time.monotonic() - self.step_started
        elif record is not None and record.step == step:
            for key, value in record.metrics.items():
                metrics.setdefault(key, _clean(value))
            step_time = metrics.get("step_time") or (time.monotonic() - self.step_started)
            spent = sum(metrics.get(k) or 0.0 for k in (keys.GENERATION_S, keys.RENDER_S, keys.SCORE_S))
            reward_s, generation_s = metrics.get(keys.REWARD_S) or 0.0, metrics.get(keys.GENERATION_S) or 0.0
            metrics[keys.UPDATE_S] = max(0.0, step_time - reward_s - generation_s)
            metrics[keys.STEP_S] = step_time
            metrics[keys.OTHER_S] = max(0.0, step_time - spent - metrics[keys.UPDATE_S])

        def write() -> None:
            Step.objects.update_or_create(
                run_id=self.run_id, step=step,
                defaults={"metrics": metrics, "reward_mean": metrics.get(keys.REWARD),
                          "reward_std": metrics.get(keys.REWARD_STD)},
            )
            Run.objects.filter(id=self.run_id).update(steps_done=step)

        outlasting_restarts(write, what=f"writing step {step}")

    def on_step_end(self, args, state, control, **kwargs):
        # Every process of a multi-process run must stop at the same step: the main one reads the flag for all.
        task_id, stop_requested = together.main_decides(lambda: outlasting_restarts(
            lambda: Run.objects.filter(id=self.run_id).values_list("task_id", "stop_requested").first(),
            what="reading the stop flag",
        ) or ("", False))
        if task_id != self.task_id:
            # Resumed in another task (this trainer had been reaped as lost) or deleted: the
            # run's files and rows are no longer this trainer's to write.
            log.warning("run %s is no longer task %s's: ending without a checkpoint", self.run_id, self.task_id)
            control.should_training_stop = True
            control.should_save = False
        elif stop_requested:
            log.info("run %s: stop requested, ending after step %s", self.run_id, state.global_step)
            control.should_training_stop = True
            control.should_save = True  # a checkpoint to resume from


class CheckpointCallback(TrainerCallback):
    """Seals each checkpoint once the Trainer has written all of it (training/trainer/checkpoints.py)
    and records its step on the run, which the run page shows and Resume starts from."""

    def __init__(self, run_id: int):
        self.run_id = run_id

    def on_save(self, args, state, control, **kwargs):
        together.wait_for_all()  # each process writes its own RNG state into the checkpoint
        if not state.is_world_process_zero:
            return
        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        seal(folder, state.global_step)
        try:
            checkpoint_store.upload(self.run_id, folder)
        except Exception:  # noqa: BLE001 - the sealed local checkpoint stands; the next save tries again
            log.exception("run %s: could not store checkpoint-%s in object storage", self.run_id, state.global_step)
        outlasting_restarts(lambda: Run.objects.filter(id=self.run_id).update(checkpoint_step=state.global_step),
                            what="recording the checkpoint's step")


class TrackingCallback(TrainerCallback):
    """Opens the run's W&B run in its folder before TRL's WandbCallback would open one of its
    own, and records where the tracking lives once the trackers are set up."""

    def __init__(self, run: Run, report_to: str):
        self.run = run
        self.backends = tracking.backends(report_to)

    def on_init_end(self, args, state, control, **kwargs):
        if "wandb" in self.backends and state.is_world_process_zero:
            import wandb

            if wandb.run is not None:  # left open by a run of this worker that failed
                wandb.finish()
            # A stable id: a resumed run (another delivery, another process) goes on in the same W&B run.
            wandb.init(project=tracking.TRACKING_PROJECT, name=tracking.tracking_name(self.run), dir=self.run.output_dir,
                       id=f"paintapp-{self.run.id}-{int(self.run.created_at.timestamp())}", resume="allow")

    def on_step_end(self, args, state, control, **kwargs):
        # The step's rollouts are stored (the reward function wrote them before the update).
        if state.is_world_process_zero and self.backends:
            tracking.log_best_painting(self.run, state.global_step, self.backends)

    def on_train_begin(self, args, state, control, **kwargs):
        # After TRL's integration callbacks (they come first in the list), so the trackers are open.
        if state.is_world_process_zero and self.backends:
            places = [tracking.trackio_place(self.run) if b == "trackio" else tracking.wandb_place() for b in self.backends]
            Path(self.run.output_dir).mkdir(parents=True, exist_ok=True)
            (Path(self.run.output_dir) / tracking.TRACKING_FILE).write_text(json.dumps(places, indent=1))

    def on_train_end(self, args, state, control, **kwargs):
        if "wandb" in self.backends and state.is_world_process_zero:
            import wandb

            wandb.finish()  # TRL's WandbCallback leaves it open: the worker's next run would log into it
