"""Reads for deleting and resuming a run: everything deleting it removes (rows, paintings no
other run uses, exports, its folder), and what resuming it redoes (steps after the last
complete checkpoint, and whose revisions go with them)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.core.files.storage import default_storage
from django.db.models import Count, QuerySet, Sum

from training.models import Revision, Rollout, Run
from training.trainer.checkpoints import checkpoint_step, last_checkpoint

CHECKPOINT_DIR = re.compile(r"checkpoint-\d+")


@dataclass(frozen=True)
class RunDeletion:
    """Everything deleting a run removes, as its confirmation lists it."""

    steps: int
    rollouts: int
    paintings: tuple[str, ...]  # storage names no other run's rollout or revision uses
    paintings_bytes: int
    shared_paintings: int  # also used by another run: kept
    exports: int
    exports_bytes: int
    output_dir: str
    output_bytes: int  # checkpoints, adapter and whatever else the trainer wrote
    checkpoints: int
    has_adapter: bool
    revisions: int
    revisions_by: tuple[tuple[str, int], ...]  # (curator, revisions), most first


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def _stored_bytes(names: set[str]) -> int:
    total = 0
    for name in names:
        try:
            total += default_storage.size(name)
        except OSError:  # already gone: nothing to free
            continue
    return total


def _revisions_by(revisions: QuerySet) -> tuple[tuple[str, int], ...]:
    """(curator, revisions) of `revisions`, most first."""
    by = revisions.values("created_by__username").annotate(n=Count("id")).order_by("-n", "created_by__username")
    return tuple((row["created_by__username"] or "a deleted account", row["n"]) for row in by)


@dataclass(frozen=True)
class ResumeRedo:
    """What resuming a run redoes: the steps after its last complete checkpoint, whose rows
    (and the curators' revisions of their rollouts) the resumed trainer replaces."""

    checkpoint_step: int  # 0: no complete checkpoint, the run starts over
    revisions_by: tuple[tuple[str, int], ...]

    @property
    def revisions(self) -> int:
        return sum(n for _, n in self.revisions_by)


def resume_redo(run: Run) -> ResumeRedo:
    checkpoint = last_checkpoint(run.output_dir) if run.output_dir else None
    step = checkpoint_step(checkpoint) if checkpoint else 0
    return ResumeRedo(checkpoint_step=step or 0,
                      revisions_by=_revisions_by(Revision.objects.filter(rollout__run=run, rollout__step__gt=step or 0)))


def run_deletion(run: Run) -> RunDeletion:
    revisions = Revision.objects.filter(rollout__run=run)
    used = set(Rollout.objects.filter(run=run).exclude(png="").values_list("png", flat=True))
    used |= set(revisions.exclude(png="").values_list("png", flat=True))
    # Paintings are content-addressed: a duplicated run (same seed, same sketches) shares them.
    shared = set(Rollout.objects.filter(png__in=used).exclude(run=run).values_list("png", flat=True))
    shared |= set(Revision.objects.filter(png__in=used).exclude(rollout__run=run).values_list("png", flat=True))
    own = used - shared
    by = _revisions_by(revisions)
    exports = run.exports.aggregate(n=Count("id"), size=Sum("size_bytes"))
    output = Path(run.output_dir) if run.output_dir else None
    present = output is not None and output.is_dir()
    return RunDeletion(
        steps=run.steps.count(), rollouts=run.rollouts.count(),
        paintings=tuple(sorted(own)), paintings_bytes=_stored_bytes(own), shared_paintings=len(shared),
        exports=exports["n"], exports_bytes=exports["size"] or 0,
        output_dir=str(output or ""), output_bytes=_folder_bytes(output) if present else 0,
        checkpoints=sum(1 for p in output.iterdir() if p.is_dir() and CHECKPOINT_DIR.fullmatch(p.name)) if present else 0,
        has_adapter=present and run.adapter_dir.is_dir(),
        revisions=sum(n for _, n in by), revisions_by=by,
    )
