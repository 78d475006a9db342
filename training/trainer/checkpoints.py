"""Which of a run's checkpoints are complete, and the seal that says so.

transformers' Trainer writes `checkpoint-N/` in place (adapter, optimizer, scheduler, RNG
state, then trainer_state.json), so a trainer killed mid-write leaves a directory that looks
like a checkpoint. After a save, `CheckpointCallback.on_save` (training/trainer/callbacks.py) flushes
every file to disk and then writes a seal listing each file with its size; only a sealed
checkpoint whose files still have those sizes is ever resumed from. No Django here.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

SEAL = "complete.json"
TRAINER_STATE = "trainer_state.json"
_NAME = re.compile(r"checkpoint-(\d+)")


def checkpoint_step(path: Path) -> int | None:
    match = _NAME.fullmatch(path.name)
    return int(match.group(1)) if match else None


def _files(checkpoint: Path) -> dict[str, int]:
    return {
        str(path.relative_to(checkpoint)): path.stat().st_size
        for path in sorted(checkpoint.rglob("*")) if path.is_file() and not path.name.startswith(SEAL)
    }


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def seal(checkpoint: Path, step: int) -> None:
    """Mark a fully written checkpoint complete: its files reach the disk before the seal does,
    so even a machine that loses power mid-save leaves either a sealed checkpoint or none."""
    files = _files(checkpoint)
    for name in files:
        _fsync(checkpoint / name)
    staged = checkpoint / f"{SEAL}.tmp"
    staged.write_text(json.dumps({"step": step, "files": files}, indent=1))
    _fsync(staged)
    os.replace(staged, checkpoint / SEAL)
    _fsync(checkpoint)  # the rename itself


def is_complete(checkpoint: Path) -> bool:
    """Sealed for its own step, with a trainer state, and every sealed file at its sealed size."""
    try:
        sealed = json.loads((checkpoint / SEAL).read_text())
        files = sealed["files"]
        if sealed["step"] != checkpoint_step(checkpoint) or TRAINER_STATE not in files:
            return False
        return all((checkpoint / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _checkpoints(output_dir: str | Path) -> list[Path]:
    folder = Path(output_dir)
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and checkpoint_step(p) is not None] if folder.is_dir() else []
    return sorted(found, key=checkpoint_step)


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint under a run's output directory, or None."""
    return next((p for p in reversed(_checkpoints(output_dir)) if is_complete(p)), None)


def discard_incomplete(output_dir: str | Path) -> list[Path]:
    """Remove the checkpoints a killed save left half-written, before training goes on: the
    Trainer's rotation (save_total_limit) would otherwise count them and delete good ones."""
    removed = [p for p in _checkpoints(output_dir) if not is_complete(p)]
    for path in removed:
        log.warning("removing incomplete checkpoint %s", path)
        shutil.rmtree(path, ignore_errors=True)
    return removed
