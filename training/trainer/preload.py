"""The trainer's libraries, imported once by a train worker before its pool forks a process
per run.

A worker that consumes `train` runs each task in a new pool process (paintapp/celery.py), and
each one imported torch, transformers, PEFT, TRL and datasets for itself: ~4.5 CPU s on the
2-core development machine, where a tiny test run's whole training takes under one. Imported in
the worker's main process, they come to every forked child already loaded (copy-on-write).

Only with a CPU build of torch. On a CUDA build the same imports bring vLLM and the GPU
libraries, and a CUDA driver initialised before a fork cannot be used in the child; no GPU was
at hand to show that none of these imports initialises it, so there each run's process imports
them itself, as before. Importing torch alone initialises no driver.
"""
from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Iterable

log = logging.getLogger(__name__)

# What a run's process imports lazily (training/trainer/grpo.py, sft.py, steps.py): the studio's
# trainer modules, which bring torch, transformers, PEFT, TRL and datasets with them. Not the
# trackers (a run loads only those it reports to) nor the remote environment's client.
TRAINER_MODULES = (
    "torch",
    "datasets",
    "peft",
    "trl",
    "training.trainer.callbacks",
    "training.trainer.generation",
    "training.trainer.rewarding",
    "training.trainer.warm_start",
    "training.trainer.revision_trainer",
    "training.trainer.evaluation",
    "paintenv.features",  # a step's diversity metric (scipy), imported when its step is recorded
)

# Pools whose processes are forked from the worker's main process; `solo` and `threads` run
# tasks in it, where importing early would only delay the worker's readiness.
FORKING_POOLS = ("prefork",)


def forks_train_processes(*, queues: Iterable[str], pool: object) -> bool:
    """Whether this worker runs `train` tasks in processes forked from its main one."""
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    forking = any(kind in str(name) for kind in FORKING_POOLS)
    return forking and "train" in set(queues)


def cpu_only_torch() -> bool:
    import torch  # no driver is initialised by the import

    return torch.version.cuda is None and getattr(torch.version, "hip", None) is None


def preload_trainer(modules: Iterable[str] = TRAINER_MODULES) -> float | None:
    """Import `modules` (with a CPU build of torch); the seconds it took, or None if skipped.
    A module that fails to import leaves the worker starting as before: each run's process then
    imports it again and the run records the traceback, where the studio shows it."""
    try:
        if not cpu_only_torch():
            log.info("trainer libraries not preloaded: torch is a GPU build (each run's process imports them)")
            return None
        started = time.perf_counter()
        for name in modules:
            importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - a broken install is the run's failure to report, not the worker's
        log.warning("trainer libraries not preloaded (each run's process imports them): %r", exc)
        return None
    seconds = time.perf_counter() - started
    log.info("trainer libraries preloaded in %.1f s; each run's process starts with them", seconds)
    return seconds
