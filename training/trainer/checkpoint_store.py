"""Copies of a run's sealed checkpoints in the studio's object storage (PAINTAPP_STORAGE=s3), so
a run resumes on another machine than the one that trained it (a replaced GPU box).

The trainer writes checkpoints to its own disk (the run's output folder), as transformers does;
after sealing one (training/trainer/checkpoints.py) the callback uploads its files, the seal last,
under `checkpoints/run-<id>/checkpoint-N/`, and keeps the newest KEEP there. A resume on a
machine without a complete local checkpoint downloads the newest one whose seal is stored, the
seal last, and resumes from it only if it is complete (every sealed file at its sealed size).
With local storage (MEDIA_ROOT, shared or not) the output folder is already there: nothing is
copied.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.core.files.base import File
from django.core.files.storage import default_storage

from training.trainer.checkpoints import SEAL, checkpoint_step, is_complete, last_checkpoint

log = logging.getLogger(__name__)
KEEP = 3  # as the trainer's save_total_limit


def copies_checkpoints() -> bool:
    return settings.STORAGE != "local"


def folder(run_id: int) -> str:
    return f"checkpoints/run-{run_id}"


def upload(run_id: int, checkpoint: Path) -> None:
    """Store a sealed checkpoint's files (the seal last, so a stored seal means stored files)
    and drop the stored ones beyond the newest KEEP."""
    if not copies_checkpoints():
        return
    prefix = f"{folder(run_id)}/{checkpoint.name}"
    files = sorted(p for p in checkpoint.rglob("*") if p.is_file() and p.name != SEAL)
    for path in [*files, checkpoint / SEAL]:
        name = f"{prefix}/{path.relative_to(checkpoint).as_posix()}"
        with open(path, "rb") as fh:
            default_storage.save(name, File(fh))
    for old in stored_steps(run_id)[:-KEEP]:
        _delete(f"{folder(run_id)}/checkpoint-{old}")
    log.info("run %s: checkpoint %s stored (%s files)", run_id, checkpoint.name, len(files) + 1)


def stored_steps(run_id: int) -> list[int]:
    """The steps of the run's stored checkpoints, oldest first."""
    try:
        names, _files = default_storage.listdir(folder(run_id))
    except (FileNotFoundError, OSError):
        return []
    return sorted(step for name in names if (step := checkpoint_step(Path(name))) is not None)


def restore(run_id: int, output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint, from the output folder, else downloaded from storage;
    None when neither has one."""
    local = last_checkpoint(output_dir)
    if local is not None or not copies_checkpoints():
        return local
    for step in reversed(stored_steps(run_id)):
        prefix = f"{folder(run_id)}/checkpoint-{step}"
        if not default_storage.exists(f"{prefix}/{SEAL}"):
            continue  # an upload cut short: its seal never arrived
        target = Path(output_dir) / f"checkpoint-{step}"
        if target.exists():
            shutil.rmtree(target)
        names = [n for n in _walk(prefix) if n != SEAL]
        for name in [*names, SEAL]:
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            with default_storage.open(f"{prefix}/{name}", "rb") as source, open(destination, "wb") as fh:
                shutil.copyfileobj(source, fh)
        if is_complete(target):
            log.info("run %s: checkpoint-%s restored from storage", run_id, step)
            return target
        shutil.rmtree(target, ignore_errors=True)
    return None


def _walk(prefix: str, below: str = "") -> list[str]:
    directories, files = default_storage.listdir(f"{prefix}/{below}".rstrip("/"))
    found = [f"{below}{name}" for name in files]
    for directory in directories:
        found += _walk(prefix, f"{below}{directory}/")
    return found


def _delete(prefix: str) -> None:
    for name in _walk(prefix):
        default_storage.delete(f"{prefix}/{name}")
