"""Generation `auto` resolved on the box that trains: a run launched where no GPU train worker
answered takes the fastest backend measured here for its model (training/trainer/backends.py's
`auto_candidates`, from training/generation_speeds.py), and keeps it in its stored arguments."""
from __future__ import annotations

import importlib.util
import logging
import socket
from dataclasses import replace

from django.db import DatabaseError

from training.arguments import RunArguments
from training.generation_speeds import measured_generation
from training.models import Run
from training.trainer import together
from training.trainer.backends import auto_candidates

log = logging.getLogger(__name__)


def resolved_generation(run: Run, args: RunArguments) -> RunArguments:
    """A run still at `auto` (launched where no GPU train worker answered) takes its backend here,
    on the box that trains it (training/trainer/backends.py auto_candidates), and keeps it: the run's
    stored arguments name what it generated with, which is what later launches on this box compare."""
    if args.generation != "auto":
        return args

    def choose() -> tuple[str, str]:
        import torch

        cuda = torch.cuda.is_available()
        try:
            measured = measured_generation(host=socket.gethostname(), base_model=run.base_model) if cuda else {}
        except DatabaseError:  # the measurements are evidence, not a need: decide without them
            log.warning("run %s: the measured generation speeds cannot be read", run.id, exc_info=True)
            measured = {}
        backend, why = auto_candidates(cuda=cuda, vllm=importlib.util.find_spec("vllm") is not None,
                                       measured=measured)[0]
        try:
            stored = Run.objects.filter(id=run.id).values_list("hyperparameters", flat=True).first()
            Run.objects.filter(id=run.id).update(hyperparameters={**(stored or run.hyperparameters), "generation": backend})
        except DatabaseError:  # the run trains all the same; its page then still says auto
            log.warning("run %s: could not record generation %s", run.id, backend, exc_info=True)
        return backend, why

    backend, why = together.main_decides(choose)
    log.info("run %s: generation auto -> %s (%s)", run.id, backend, why)
    run.hyperparameters = {**run.hyperparameters, "generation": backend}
    return replace(args, generation=backend)
