"""The train worker's side of "Ask the model to revise": load the run's base model with its
latest adapter and sample one reply to the revision-turn chat, as the trainer samples.

Runs in the revise task (training/tasks.py) on the `train` queue, where the GPU and the
model files are; torch, transformers and PEFT load here, never in the web process.
"""
from __future__ import annotations

import logging
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded

from training.editor.services import revision_not_written, revision_written
from training.models import Revision, Run
from training.stored_turns import revision_chat
from training.trainer.checkpoints import last_checkpoint
from training.trainer.feedback_images import painting_encoder

log = logging.getLogger(__name__)

ADAPTER_CONFIG = "adapter_config.json"


def latest_adapter(run: Run) -> Path | None:
    """The adapter the run's model is sampled with: its final one (saved when training ended)
    unless it is training again; else its newest complete checkpoint; None where neither
    exists (the base model alone)."""
    if not run.output_dir:
        return None
    final = run.adapter_dir
    if not run.is_active and (final / ADAPTER_CONFIG).is_file():
        return final
    checkpoint = last_checkpoint(run.output_dir)
    if checkpoint is not None and (checkpoint / ADAPTER_CONFIG).is_file():
        return checkpoint
    return final if (final / ADAPTER_CONFIG).is_file() else None


def revision_write(*, revision_id: int) -> Revision:
    """Write the reply of a `writing` revision with the run's model and hand it on (it then
    renders); a model that does not load or generate fails the revision with the reason. A
    revision cancelled before this started is left alone."""
    revision = Revision.objects.select_related("rollout__run", "parent").get(pk=revision_id)
    if revision.status != Revision.Status.WRITING:
        return revision
    rollout = revision.rollout
    run = rollout.run
    adapter = latest_adapter(run)
    try:
        import torch

        from training.trainer.evaluation import sample_chats
        from training.trainer.model_loading import load_adapted_model

        args = run.arguments
        if not torch.cuda.is_available():
            torch.set_num_threads(max(1, args.torch_threads))
        model, processing_class = load_adapted_model(run.base_model, adapter)
        paintings = painting_encoder(run.base_model, processing_class)  # a VL model sees the painting, as in training
        chat = revision_chat(rollout.subject, revision.parent or rollout, show_painting=paintings is not None)
        reply = sample_chats(model, processing_class, [chat], args=args, paintings=paintings)[0]
    except SoftTimeLimitExceeded:
        raise  # the poll says it ran past its time limit
    except Exception as exc:  # noqa: BLE001 - any failure to load or generate is the revision's reason
        log.exception("revision %s: the model could not write", revision_id)
        with_what = f"{run.base_model} with {adapter}" if adapter else run.base_model
        return revision_not_written(
            revision=revision, error=f"The model ({with_what}) could not write a revision: {type(exc).__name__}: {exc}")
    return revision_written(revision=revision, reply=reply, adapter=str(adapter or ""))
