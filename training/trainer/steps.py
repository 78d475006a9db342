"""Training one delivery of a run in this process: the run kind's trainer (training/trainer/grpo.py
or training/trainer/sft.py) trained from a checkpoint, its adapter saved and evaluated on the
held-out split, and how it ended (`Outcome`). The train task's own process runs it, or each of
the processes accelerate launch started (training/trainer/launching.py)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from django.db import close_old_connections

from paintapp.lib.db import outlasting_restarts
from training.arguments import RunArguments
from training.models import Run
from training.trainer import together
from training.trainer.grpo import build_trainer
from training.trainer.pausing import WorkersMissing, checkpoint_now
from training.trainer.sft import build_sft_trainer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """How a run's training ended in its process(es): `trained` (every step, or `stopped` on
    request), `paused` at `steps` for a queue without workers (training/trainer/pausing.py), or
    `superseded` (resumed in another task meanwhile). Crosses from the training processes to
    the train task as JSON (training/trainer/launching.py)."""

    ended: str
    steps: int = 0
    stopped: bool = False
    missing_step: int = 0
    missing_queue: str = ""


def train_steps(run: Run, args: RunArguments, task_id: str, *, checkpoint: Path | None, processes: int = 1) -> Outcome:
    """Train the run from `checkpoint` in this process: the train task's own, or each of the
    processes accelerate launch started (training/trainer/launching.py), which all run this together."""
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(max(1, args.torch_threads))
    build = build_sft_trainer if run.is_sft else build_trainer
    trainer = build(run, args, task_id, processes=processes)
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except WorkersMissing as missing:
        return Outcome("paused", steps=checkpoint_now(trainer), missing_step=missing.step, missing_queue=missing.queue)
    if not together.main_decides(lambda: run.is_trained_by(task_id)):
        return Outcome("superseded")
    trainer.save_model(str(run.adapter_dir))
    stopped = together.main_decides(lambda: bool(outlasting_restarts(
        lambda: Run.objects.filter(id=run.id).values_list("stop_requested", flat=True).first(),
        what="reading the run's stop flag")))
    if not stopped and together.is_main():
        _evaluate(run, trainer)
    return Outcome("trained", steps=trainer.state.global_step, stopped=stopped)


def _evaluate(run: Run, trainer) -> None:
    """Held-out evaluation of the adapter (an SFT run's base model too, with the adapter off, so
    its page compares them); its failure is recorded, never the run's."""
    from training.trainer.evaluation import evaluate_trained

    try:
        trainer.model.eval()
        evaluate_trained(run, trainer.model, trainer.processing_class)
    except Exception as exc:  # noqa: BLE001
        log.exception("evaluation of run %s failed", run.id)
        close_old_connections()
        Run.objects.filter(id=run.id).update(eval_result={"error": f"{type(exc).__name__}: {exc}"})
