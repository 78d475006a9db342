"""Reads for runs: the list with its summary columns, a run's steps and rollouts."""
from __future__ import annotations

import difflib
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from django.core.files.storage import default_storage
from django.db import connection
from django.db.models import Count, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum

from training import metrics as keys
from training.arguments import RunArguments
from training.failures import failure_label
from training.models import Revision, Rollout, RolloutTurn, Run, SftDataset, Step
from training.trainer.checkpoints import checkpoint_step, last_checkpoint


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
    rows = Step.objects.filter(metrics__has_key=keys.STEP_S, run__kind=Run.Kind.GRPO).order_by("-id").values_list(
        "metrics", "run__hyperparameters")[:recent_steps]  # an SFT run's steps train on examples, not rollouts
    per_rollout = [float(m[keys.STEP_S]) / RunArguments.from_dict(h).generation_batch_size for m, h in rows]
    return sum(per_rollout) / len(per_rollout) if per_rollout else None


@dataclass(frozen=True)
class GenerationSpeed:
    """How fast a backend generated for a model on a box: the median over its runs there of each
    run's median tokens/s (its steps after the first, which warms up and compiles)."""

    host: str
    base_model: str
    backend: str
    tokens_per_s: float
    runs: tuple[int, ...]  # newest first


def generation_speeds(*, host: str | None = None, base_model: str | None = None,
                      recent_runs: int = 30) -> list[GenerationSpeed]:
    """The last GRPO runs' measured generation (`ours/tokens_per_s`), by box, model and backend,
    fastest first within a box and model: what the launch form shows and `auto` picks from."""
    runs = Run.objects.filter(kind=Run.Kind.GRPO, steps__metrics__has_key=keys.TOKENS_PER_S).exclude(trainer="")
    if base_model is not None:
        runs = runs.filter(base_model=base_model)
    if host is not None:
        runs = runs.filter(trainer__startswith=f"{host}:")
    found = list(runs.distinct().order_by("-id").values_list("id", "trainer", "base_model", "hyperparameters")
                 [:recent_runs])
    rates: dict[int, list[tuple[int, float]]] = {}
    for run_id, step, metrics in Step.objects.filter(run_id__in=[row[0] for row in found],
                                                     metrics__has_key=keys.TOKENS_PER_S).values_list(
            "run_id", "step", "metrics"):
        if metrics.get(keys.TOKENS_PER_S) is not None:
            rates.setdefault(run_id, []).append((step, float(metrics[keys.TOKENS_PER_S])))
    grouped: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for run_id, trainer, model, hyperparameters in found:
        steps = sorted(rates.get(run_id, []))
        later = [rate for _, rate in (steps[1:] or steps)]
        if later:
            backend = (hyperparameters or {}).get("generation", "")
            grouped.setdefault((trainer.rsplit(":", 1)[0], model, backend), []).append((run_id, statistics.median(later)))
    speeds = [GenerationSpeed(host=h, base_model=m, backend=b, tokens_per_s=statistics.median(r for _, r in per_run),
                              runs=tuple(run_id for run_id, _ in per_run))
              for (h, m, b), per_run in grouped.items()]
    return sorted(speeds, key=lambda s: (s.host, s.base_model, -s.tokens_per_s))


def measured_generation(*, host: str, base_model: str) -> dict[str, float]:
    """backend -> tokens/s measured on `host` for `base_model` (auto's evidence)."""
    return {s.backend: s.tokens_per_s for s in generation_speeds(host=host, base_model=base_model)}


# --- gallery ------------------------------------------------------------------------------

GALLERY_STEPS_PER_PAGE = 8
GALLERY_ROLLOUTS_PER_PAGE = 48
GALLERY_SORTS = {"step": "by step", "reward-desc": "best first", "reward-asc": "worst first",
                 "gain-desc": "most improved first"}
GALLERY_STATES = {"": "all", "passed": "passed", "failed": "failed gate or render", "none": "None (infrastructure)"}
# Runs with revision turns: how a rollout's last turn compares with its first (their own
# painting rewards, not the combined reward).
GALLERY_CHAINS = {"": "any", "improved": "improved on turn 1", "worse": "got worse than turn 1",
                  "same": "no change", "fixed": "fixed a gate failure", "kept": "ended with KEEP"}
CHAIN_ONLY_SORTS = frozenset({"gain-desc"})


@dataclass(frozen=True)
class GalleryFilter:
    """What the gallery shows; parsed from the query string, never trusted blindly."""

    state: str = ""
    violation: str = ""
    chain: str = ""
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
        chain = query.get("chain", "")
        if chain not in GALLERY_CHAINS:
            errors.append(f"unknown chain filter {chain[:20]!r}")
            chain = ""
        sort = query.get("sort", "step")
        if sort not in GALLERY_SORTS:
            errors.append(f"unknown sort {sort[:20]!r}")
            sort = "step"
        low, high = number("reward_min"), number("reward_max")
        if low is not None and high is not None and low > high:
            errors.append("the reward range is empty (min is above max)")
        step, page = number("step", int), number("page", int)
        return cls(
            state=state, violation=(query.get("violation") or "").strip()[:40], chain=chain,
            reward_min=low, reward_max=high,
            sort=sort, step=max(1, step) if step else None, page=max(1, page or 1), errors=tuple(errors),
        )

    def query(self, **changes) -> str:
        """The query string of this filter with some fields changed (for links that work without JS)."""
        values = {
            "state": self.state, "violation": self.violation, "chain": self.chain, "reward_min": self.reward_min,
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


def _turn_value(field_name: str, turn) -> Subquery:
    return Subquery(RolloutTurn.objects.filter(rollout=OuterRef("pk"), turn=turn).values(field_name)[:1])


def with_turn_rewards(rollouts: QuerySet) -> QuerySet:
    """Annotate first_reward, final_reward (the first and last turns' own painting rewards),
    first_passed and gain = final - first: None for single-turn rollouts (no chain rows)."""
    return rollouts.annotate(
        first_reward=_turn_value("reward", 1), final_reward=_turn_value("reward", OuterRef("turns")),
        first_passed=_turn_value("passed", 1),
    ).annotate(gain=F("final_reward") - F("first_reward"))


# Only what a card draws of each turn.
_CARD_TURNS = Prefetch("chain", queryset=RolloutTurn.objects.only(
    "id", "rollout_id", "turn", "png", "passed", "violations", "reward", "failure", "kept"))


def gallery_rollouts(run: Run, flt: GalleryFilter) -> QuerySet:
    rollouts = Rollout.objects.filter(run=run).defer("reply", "prompt", "judge_detail", "errors")
    if flt.chain or flt.sort in CHAIN_ONLY_SORTS:
        rollouts = with_turn_rewards(rollouts.filter(turns__gt=1))
    if flt.chain == "improved":
        rollouts = rollouts.filter(gain__gt=0)
    elif flt.chain == "worse":
        rollouts = rollouts.filter(gain__lt=0)
    elif flt.chain == "same":
        rollouts = rollouts.filter(gain=0)
    elif flt.chain == "fixed":
        rollouts = rollouts.filter(first_passed=False, passed=True)
    elif flt.chain == "kept":
        rollouts = rollouts.filter(chain__kept=True)
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
        window = list(rollouts.filter(step__gte=page.first_step, step__lte=page.last_step)
                      .order_by("step", "group", "position").prefetch_related(_CARD_TURNS))
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
    if flt.sort == "gain-desc":
        order = ("-gain", "-reward", "step", "position")
        rollouts = rollouts.filter(gain__isnull=False)  # a None turn reward has no gain
    else:
        order = ("-reward", "step", "position") if flt.sort == "reward-desc" else ("reward", "step", "position")
    rollouts = rollouts.filter(reward__isnull=False)  # None is not a reward: it cannot rank
    page.matching = rollouts.count()
    page.pages = max(1, -(-page.matching // per))
    page.page = min(flt.page, page.pages)
    start = (page.page - 1) * per
    page.rollouts = list(rollouts.order_by(*order).prefetch_related(_CARD_TURNS)[start:start + per])
    if page.page > 1:
        page.previous_query = flt.query(page=page.page - 1)
    if page.page < page.pages:
        page.next_query = flt.query(page=page.page + 1)
    return page


# --- a rollout's chain (revision turns) ---------------------------------------------------

@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "ctx" or "hunk" (an @@ line: where the lines below are)
    text: str


@dataclass(frozen=True)
class CodeDiff:
    """The unified line diff from one turn's code to the next's."""

    lines: tuple[DiffLine, ...]
    added: int
    removed: int


def code_diff(before: str, after: str, *, context: int = 3) -> CodeDiff:
    lines: list[DiffLine] = []
    for text in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context):
        if text.startswith(("---", "+++")) and not lines:
            continue  # the two file headers; a removed line starting "--" comes after a hunk header
        kind = {"@": "hunk", "+": "add", "-": "del"}.get(text[:1], "ctx")
        lines.append(DiffLine(kind, text))
    return CodeDiff(tuple(lines), sum(1 for x in lines if x.kind == "add"), sum(1 for x in lines if x.kind == "del"))


@dataclass(frozen=True)
class ChainTurn:
    turn: RolloutTurn
    diff: CodeDiff | None  # from the turn before; None on turn 1
    delta: float | None  # this turn's reward minus the turn before's; None on turn 1 or with a None
    failure: str  # "Gate failed", "Render failed"...: why a turn has no passing painting; "" when it has

    @property
    def parts(self) -> list[tuple[str, float]]:
        """(part, value) of the reward parts this turn has, in the charts' order."""
        parts = self.turn.parts if isinstance(self.turn.parts, dict) else {}
        return [(name, parts[name]) for name in keys.PART if isinstance(parts.get(name), (int, float))]


@dataclass(frozen=True)
class RolloutChain:
    """A multi-turn rollout's turns in order, and how its reward was made from them."""

    turns: tuple[ChainTurn, ...]
    weight: float  # the run's revision_gain_weight
    first: float | None  # turn 1's own painting reward
    final: float | None  # the last turn's
    reward: float | None  # the rollout's stored (combined) reward

    @property
    def gain(self) -> float | None:
        return None if self.first is None or self.final is None else self.final - self.first


def rollout_chain(rollout: Rollout) -> RolloutChain | None:
    """The chain of a multi-turn rollout; None for a single-turn one (it has no chain rows)."""
    turns = list(rollout.chain.order_by("turn")) if rollout.turns > 1 else []
    if not turns:
        return None
    shown: list[ChainTurn] = []
    for before, turn in zip([None, *turns], turns):
        delta = None
        if before is not None and before.reward is not None and turn.reward is not None:
            delta = turn.reward - before.reward
        failure = failure_label(turn.violations) if not turn.passed and turn.reward is not None else ""
        shown.append(ChainTurn(turn, code_diff(before.code, turn.code) if before else None, delta, failure))
    weight = rollout.run.arguments.revision_gain_weight
    return RolloutChain(tuple(shown), weight=weight, first=turns[0].reward, final=turns[-1].reward,
                        reward=rollout.reward)


# --- comparing runs -----------------------------------------------------------------------

MAX_COMPARED_RUNS = 7


def runs_to_compare(run: Run, raw_ids: list[str]) -> list[Run]:
    """The other runs chosen for overlay (unknown or malformed ids are ignored)."""
    ids = [int(x) for x in raw_ids if x.isdigit() and int(x) != run.id][:MAX_COMPARED_RUNS]
    found = {r.id: r for r in Run.objects.filter(id__in=ids).select_related("pool")}
    return [found[i] for i in ids if i in found]


def compare_choices(run: Run, *, selected: list[Run], limit: int = 30) -> list[tuple[Run, bool]]:
    """Runs worth overlaying: the SFT run this one continues and the GRPO runs that continue it,
    then those on the same pool, then the newest, with their state."""
    chosen = {r.id for r in selected}
    linked = set(linked_runs(run))
    others = list(
        Run.objects.exclude(id=run.id).filter(Q(steps_done__gt=0) | Q(id__in=linked)).select_related("pool")
        .order_by("-created_at")[:limit]
    )
    others.sort(key=lambda r: (r.id not in linked, r.pool_id != run.pool_id, -r.created_at.timestamp()))
    return [(r, r.id in chosen) for r in others]


def linked_runs(run: Run) -> list[int]:
    """The ids of the runs a warm start links to this one: its SFT run, the GRPO runs continuing it."""
    return [*([run.init_run_id] if run.init_run_id else []),
            *Run.objects.filter(init_run=run).order_by("id").values_list("id", flat=True)]


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
        has_adapter=present and run.adapter_dir.is_dir(),
        revisions=sum(n for _, n in by), revisions_by=by,
    )


def sft_dataset_get(label: str) -> SftDataset:
    """`name` (latest version) or `name:VERSION` / `name:vVERSION`; SftDataset.DoesNotExist, or
    ValueError for a version that is not a number."""
    name, _, version = label.partition(":")
    datasets = SftDataset.objects.filter(name=name)
    found = datasets.filter(version=int(version.lstrip("v"))).first() if version else datasets.order_by("-version").first()
    if found is None:
        raise SftDataset.DoesNotExist(f"no SFT dataset {label!r}")
    return found


def sft_datasets():
    """Every frozen SFT dataset, newest first, with its pool and run count."""
    return SftDataset.objects.select_related("pool", "created_by").annotate(run_count=Count("runs")).order_by(
        "-created_at")


@dataclass(frozen=True)
class LadderRow:
    """One model of a warm start's held-out figures: the base, after SFT, after GRPO from it."""

    label: str
    run: Run | None  # None: the base model, evaluated by the SFT run with its adapter off
    figures: dict | None  # an eval_result (mean_reward, gate_pass_rate, render_rate, samples...); None: not yet
    current: bool = False


def warm_start_ladder(run: Run) -> list[LadderRow]:
    """An SFT run and the GRPO runs that continue it, with its base model, on the same held-out
    evaluation; [] for a run that is neither."""
    sft = run if run.is_sft else run.init_run
    if sft is None:
        return []
    result = sft.eval_result if sft.eval_result and not sft.eval_result.get("error") else None
    rows = [LadderRow(f"Base model {sft.base_model}", None, result.get("base") if result else None),
            LadderRow(f"After SFT: #{sft.id} {sft.name}", sft, result, current=sft.id == run.id)]
    for grpo in sft.continued_by.order_by("id"):
        figures = grpo.eval_result if grpo.eval_result and not grpo.eval_result.get("error") else None
        rows.append(LadderRow(f"GRPO from it: #{grpo.id} {grpo.name}", grpo, figures, current=grpo.id == run.id))
    return rows
