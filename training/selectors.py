"""Reads for runs: the list with its summary columns, a run's steps and rollouts."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from django.core.files.storage import default_storage
from django.db import connection
from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery, Sum

from training import metrics as keys
from training.checkpoints import checkpoint_step, last_checkpoint
from training.config import RunArguments
from training.models import Revision, Rollout, Run, Step
from training.trainer import ADAPTER_DIR


def run_list() -> QuerySet:
    last = Step.objects.filter(run=OuterRef("pk")).order_by("-step").values("reward_mean")[:1]
    return (
        Run.objects.select_related("pool", "created_by")
        .annotate(last_reward=Subquery(last), best_reward=Max("steps__reward_mean"))
        .order_by("-created_at")
    )


def run_steps(run: Run, *, after: int = 0) -> QuerySet:
    return Step.objects.filter(run=run, step__gt=after).order_by("step")


def latest_rollouts(run: Run, *, limit: int = 16) -> list[Rollout]:
    last_step = Rollout.objects.filter(run=run).aggregate(s=Max("step"))["s"]
    if last_step is None:
        return []
    return list(Rollout.objects.filter(run=run, step=last_step).order_by("group", "position")[:limit])


def _step_seconds(steps) -> list[float]:
    """The measured seconds of the given steps; a step without a timing (an older row) is left out."""
    return [float(m[keys.STEP_S]) for m in steps.values_list("metrics", flat=True) if m.get(keys.STEP_S) is not None]


def time_left_s(run: Run, *, recent: int = 5) -> float | None:
    """Seconds the run still needs at the pace of its last `recent` steps: None while no step
    was timed or once the run has ended (a stopped run needs no time)."""
    if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
        return None
    seconds = _step_seconds(Step.objects.filter(run=run).order_by("-step")[:recent])
    if not seconds:
        return None
    return max(0, run.max_steps - run.steps_done) * sum(seconds) / len(seconds)


def seconds_per_rollout(*, recent_steps: int = 30) -> float | None:
    """Mean seconds one rollout took over the last timed steps of any run (a step's time over
    its rollouts), for the launch form's estimate; None when no run has timed a step yet."""
    rows = Step.objects.filter(metrics__has_key=keys.STEP_S).order_by("-id").values_list(
        "metrics", "run__hyperparameters")[:recent_steps]
    per_rollout = [float(m[keys.STEP_S]) / RunArguments.from_dict(h).generation_batch_size for m, h in rows]
    return sum(per_rollout) / len(per_rollout) if per_rollout else None


# --- gallery ------------------------------------------------------------------------------

GALLERY_STEPS_PER_PAGE = 8
GALLERY_ROLLOUTS_PER_PAGE = 48
GALLERY_SORTS = {"step": "by step", "reward-desc": "best first", "reward-asc": "worst first"}
GALLERY_STATES = {"": "all", "passed": "passed", "failed": "failed gate or render", "none": "None (infrastructure)"}


@dataclass(frozen=True)
class GalleryFilter:
    """What the gallery shows; parsed from the query string, never trusted blindly."""

    state: str = ""
    violation: str = ""
    reward_min: float | None = None
    reward_max: float | None = None
    sort: str = "step"
    step: int | None = None  # by step: the first step on the page
    page: int = 1  # best/worst first: the page number
    errors: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, query) -> GalleryFilter:
        errors: list[str] = []

        def number(name: str, kind=float):
            raw = (query.get(name) or "").strip()
            if not raw:
                return None
            try:
                return kind(raw)
            except ValueError:
                errors.append(f"{name.replace('_', ' ')} must be a number, not {raw[:20]!r}")
                return None

        state = query.get("state", "")
        if state not in GALLERY_STATES:
            errors.append(f"unknown state {state[:20]!r}")
            state = ""
        sort = query.get("sort", "step")
        if sort not in GALLERY_SORTS:
            errors.append(f"unknown sort {sort[:20]!r}")
            sort = "step"
        low, high = number("reward_min"), number("reward_max")
        if low is not None and high is not None and low > high:
            errors.append("the reward range is empty (min is above max)")
        step, page = number("step", int), number("page", int)
        return cls(
            state=state, violation=(query.get("violation") or "").strip()[:40], reward_min=low, reward_max=high,
            sort=sort, step=max(1, step) if step else None, page=max(1, page or 1), errors=tuple(errors),
        )

    def query(self, **changes) -> str:
        """The query string of this filter with some fields changed (for links that work without JS)."""
        values = {
            "state": self.state, "violation": self.violation, "reward_min": self.reward_min,
            "reward_max": self.reward_max, "sort": self.sort, "step": self.step, "page": self.page,
        } | changes
        kept = {key: value for key, value in values.items() if value not in (None, "")}
        if kept.get("sort") == "step":  # the default sort pages by step, the others by page number
            kept.pop("sort")
            kept.pop("page", None)
        else:
            kept.pop("step", None)
            if kept.get("page") == 1:
                kept.pop("page")
        return urlencode(kept)


def _violation_q(code: str) -> Q:
    if connection.vendor == "postgresql":
        return Q(violations__contains=[code])  # jsonb @> uses the column as stored
    return Q(violations__icontains=f'"{code}"')  # SQLite stores JSON as text


def gallery_rollouts(run: Run, flt: GalleryFilter) -> QuerySet:
    rollouts = Rollout.objects.filter(run=run).defer("reply", "prompt", "judge_detail", "errors")
    if flt.state == "passed":
        rollouts = rollouts.filter(passed=True, reward__isnull=False)
    elif flt.state == "failed":
        rollouts = rollouts.filter(passed=False, reward__isnull=False)
    elif flt.state == "none":
        rollouts = rollouts.filter(reward__isnull=True)
    if flt.violation:
        rollouts = rollouts.filter(_violation_q(flt.violation))
    if flt.reward_min is not None:
        rollouts = rollouts.filter(reward__gte=flt.reward_min)
    if flt.reward_max is not None:
        rollouts = rollouts.filter(reward__lte=flt.reward_max)
    return rollouts


@dataclass
class GalleryStepRow:
    step: int
    rollouts: list[Rollout]
    metrics: dict


@dataclass
class GalleryPage:
    steps_done: int
    rows: list[GalleryStepRow] = field(default_factory=list)  # sort "step"
    rollouts: list[Rollout] = field(default_factory=list)  # sort by reward
    matching: int = 0
    first_step: int = 1
    last_step: int = 0
    previous_query: str | None = None
    next_query: str | None = None
    page: int = 1
    pages: int = 1
    violation_codes: list[str] = field(default_factory=list)


def run_violation_codes(run: Run) -> list[str]:
    """Every violation code the run's steps counted (from the step metrics: no rollout scan)."""
    codes: set[str] = set()
    for metrics in Step.objects.filter(run=run).values_list("metrics", flat=True):
        codes.update(key.split("/", 1)[1] for key in metrics if key.startswith("violations/"))
    return sorted(codes)


def gallery_page(run: Run, flt: GalleryFilter) -> GalleryPage:
    last = Step.objects.filter(run=run).aggregate(s=Max("step"))["s"] or 0
    last = max(last, Rollout.objects.filter(run=run).aggregate(s=Max("step"))["s"] or 0)
    page = GalleryPage(steps_done=last, violation_codes=run_violation_codes(run))
    rollouts = gallery_rollouts(run, flt)
    if flt.sort == "step":
        per = GALLERY_STEPS_PER_PAGE
        # Without a chosen step, show the newest steps: that is what a live run is about. A
        # page always holds a full window, so a step near the end starts the last window.
        first = max(1, min(flt.step or last, last - per + 1))
        page.first_step, page.last_step = first, min(last, first + per - 1)
        window = list(rollouts.filter(step__gte=page.first_step, step__lte=page.last_step).order_by("step", "group", "position"))
        metrics = dict(Step.objects.filter(run=run, step__gte=page.first_step, step__lte=page.last_step).values_list("step", "metrics"))
        by_step: dict[int, list[Rollout]] = {}
        for rollout in window:
            by_step.setdefault(rollout.step, []).append(rollout)
        page.rows = [GalleryStepRow(step=s, rollouts=by_step.get(s, []), metrics=metrics.get(s, {}))
                     for s in range(page.last_step, page.first_step - 1, -1)]
        page.matching = len(window)
        if page.first_step > 1:
            page.previous_query = flt.query(step=max(1, page.first_step - per))
        if page.last_step < last:
            page.next_query = flt.query(step=page.last_step + 1)
        return page
    per = GALLERY_ROLLOUTS_PER_PAGE
    order = ("-reward", "step", "position") if flt.sort == "reward-desc" else ("reward", "step", "position")
    rollouts = rollouts.filter(reward__isnull=False)  # None is not a reward: it cannot rank
    page.matching = rollouts.count()
    page.pages = max(1, -(-page.matching // per))
    page.page = min(flt.page, page.pages)
    start = (page.page - 1) * per
    page.rollouts = list(rollouts.order_by(*order)[start:start + per])
    if page.page > 1:
        page.previous_query = flt.query(page=page.page - 1)
    if page.page < page.pages:
        page.next_query = flt.query(page=page.page + 1)
    return page


# --- comparing runs -----------------------------------------------------------------------

MAX_COMPARED_RUNS = 7


def runs_to_compare(run: Run, raw_ids: list[str]) -> list[Run]:
    """The other runs chosen for overlay (unknown or malformed ids are ignored)."""
    ids = [int(x) for x in raw_ids if x.isdigit() and int(x) != run.id][:MAX_COMPARED_RUNS]
    found = {r.id: r for r in Run.objects.filter(id__in=ids).select_related("pool")}
    return [found[i] for i in ids if i in found]


def compare_choices(run: Run, *, selected: list[Run], limit: int = 30) -> list[tuple[Run, bool]]:
    """Runs worth overlaying: those on the same pool first, then the newest, with their state."""
    chosen = {r.id for r in selected}
    others = list(
        Run.objects.exclude(id=run.id).filter(steps_done__gt=0).select_related("pool").order_by("-created_at")[:limit]
    )
    others.sort(key=lambda r: (r.pool_id != run.pool_id, -r.created_at.timestamp()))
    return [(r, r.id in chosen) for r in others]


# --- deletion -----------------------------------------------------------------------------

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
        has_adapter=present and (output / ADAPTER_DIR).is_dir(),
        revisions=sum(n for _, n in by), revisions_by=by,
    )
