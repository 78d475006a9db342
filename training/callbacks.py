"""TrainerCallback: TRL's metrics plus ours -> one Step row per step; the stop flag; checkpoints."""
from __future__ import annotations

import logging
import time

from django.utils import timezone
from transformers import TrainerCallback

from paintapp.db import outlasting_restarts
from training import metrics as keys
from training.models import Run, Step
from training.rewarding import PaintingReward

log = logging.getLogger(__name__)


def _clean(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None  # NaN/inf -> None


class RunCallback(TrainerCallback):
    def __init__(self, run_id: int, reward: PaintingReward):
        self.run_id = run_id
        self.reward = reward
        self.step_started = time.monotonic()

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            outlasting_restarts(lambda: Run.objects.filter(id=self.run_id, status=Run.Status.QUEUED).update(
                status=Run.Status.RUNNING, started_at=timezone.now()
            ), what="marking the run running")

    def on_step_begin(self, args, state, control, **kwargs):
        self.step_started = time.monotonic()
        self.reward.step_started_at = self.step_started

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "train_runtime" in logs:
            return  # the end-of-training summary is not a step
        step = state.global_step
        metrics = {k: _clean(v) for k, v in logs.items()}
        record = self.reward.last
        if record is not None and record.step == step:
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
        if not state.is_world_process_zero:
            return
        if outlasting_restarts(lambda: Run.objects.filter(id=self.run_id, stop_requested=True).exists(),
                               what="reading the stop flag"):
            log.info("run %s: stop requested, ending after step %s", self.run_id, state.global_step)
            control.should_training_stop = True
            control.should_save = True  # a checkpoint to resume from
