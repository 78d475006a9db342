"""Reads for a run's gallery: its filters from the query string, and a page of rollouts, by step
or ranked by reward or gain."""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db import connection
from django.db.models import F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery

from training.models import Rollout, RolloutTurn, Run, Step

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
