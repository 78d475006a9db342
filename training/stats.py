"""Run statistics in the shape of the published results: the "thirds" table.

The published reference system reported each run as "mean group reward, first → last
third" and "rollouts under 0.3 fell from 99 to 16". `thirds()` computes those numbers (plus
the middle third and an ordinary-least-squares trend) from two plain lists, so the same code
serves the database (`run_thirds`) and an exported folder (`thirds_from_export`): the table
on the run page can be recomputed by anyone holding the export.

Rules:
- A step counts when it has a mean reward; steps whose mean is None (every rollout was an
  infrastructure failure) are skipped and do not take a place in any third.
- With n counted steps, the first and the last third hold floor(n / 3) steps each and the
  middle third holds the rest (n = 110 → 36 / 38 / 36). First and last are what the published
  results compare, so they cover equal numbers of steps; any remainder goes to the middle.
- With fewer than 3 counted steps there are no thirds and no trend: every number is None and
  `reason` says why.
- A third's mean is the mean of its steps' mean rewards (each step weighs the same).
- The trend is the OLS slope of step mean reward on the step number (reward per step), its
  standard error (n - 2 degrees of freedom) and t = slope / SE. t is None when the residuals
  are zero to floating-point precision (a flat or perfectly straight series), where it would be
  0/0 or infinite.
- Low rollouts are rollouts whose reward is below LOW_REWARD (0.3); None rewards are not
  rollouts that scored, so they never count. The thirds cut the step numbers into ranges:
  the first third is every step up to its last counted step, the last third every step from
  its first counted step on, so a step without a mean (or without a Step row) still lands in
  exactly one third.
"""
from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import fmean

from django.db.models import Count

from training.metrics import LOW_REWARD
from training.models import Rollout, Run, Step

# A residual sum of squares below this share of the total is rounding noise (R² = 1 to
# double precision), not scatter around the line.
_RESIDUAL_NOISE = 1e-20
MIN_STEPS = 3


@dataclass(frozen=True)
class Thirds:
    """The published results table for one run.

    With fewer than 3 counted steps every number is None and `reason` says why; otherwise
    `reason` is "" and only `t_stat` can be None (see `t_stat_reason`)."""

    n_steps: int  # steps with a mean reward
    first_mean: float | None = None
    middle_mean: float | None = None
    last_mean: float | None = None
    first_steps: tuple[int, int] | None = None  # (first step, last step) of the third
    middle_steps: tuple[int, int] | None = None  # None when the middle third is empty (never for n >= 3)
    last_steps: tuple[int, int] | None = None
    slope: float | None = None  # mean reward per step (OLS)
    slope_se: float | None = None
    t_stat: float | None = None
    first_low: int | None = None  # rollouts with reward < LOW_REWARD in the first third
    middle_low: int | None = None
    last_low: int | None = None
    low_threshold: float = LOW_REWARD
    reason: str = ""  # why there are no thirds (fewer than 3 steps); "" when there are
    t_stat_reason: str = ""  # why t is None although the thirds exist; "" otherwise

    @property
    def change(self) -> float | None:
        """Last third's mean minus the first third's."""
        if self.first_mean is None or self.last_mean is None:
            return None
        return self.last_mean - self.first_mean

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("first_steps", "middle_steps", "last_steps"):
            data[key] = list(data[key]) if data[key] is not None else None
        data["change"] = self.change
        return data


def format_number(value: float | None, spec: str = ".3f", missing: str = "–") -> str:
    """A thirds number for people (the dataset card, the export command), dash when missing."""
    return missing if value is None else format(value, spec)


def _split(n: int) -> tuple[slice, slice, slice]:
    size = n // 3
    return slice(0, size), slice(size, n - size), slice(n - size, n)


def _trend(points: list[tuple[int, float]]) -> tuple[float, float, float | None]:
    """(slope, standard error, t) of y on x by ordinary least squares; needs 3+ points."""
    n = len(points)
    x_mean = fmean(x for x, _ in points)
    y_mean = fmean(y for _, y in points)
    # Centred sums: no cancellation between large step numbers and small rewards.
    sxx = math.fsum((x - x_mean) ** 2 for x, _ in points)
    sxy = math.fsum((x - x_mean) * (y - y_mean) for x, y in points)
    syy = math.fsum((y - y_mean) ** 2 for _, y in points)
    slope = sxy / sxx
    residual = math.fsum((y - y_mean - slope * (x - x_mean)) ** 2 for x, y in points)
    if residual <= _RESIDUAL_NOISE * syy or residual == 0.0:
        return slope, 0.0, None
    se = math.sqrt(residual / (n - 2) / sxx)
    return slope, se, slope / se


def thirds(step_means: list[tuple[int, float | None]], low_counts: list[tuple[int, int]]) -> Thirds:
    """The thirds table from (step, mean reward) pairs and (step, rollouts below 0.3) pairs.

    Both lists may come in any order; a step listed twice in `step_means` is an error, and
    `low_counts` may list a step more than once (its counts add up).
    """
    points = sorted((int(step), float(mean)) for step, mean in step_means if mean is not None)
    steps = [step for step, _ in points]
    if len(set(steps)) != len(steps):
        raise ValueError("a step is listed twice in step_means")
    n = len(points)
    if n < MIN_STEPS:
        reason = (
            "no step has a mean reward yet" if n == 0
            else f"only {n} step{'s' * (n != 1)} with a mean reward; thirds and a trend need at least {MIN_STEPS}"
        )
        return Thirds(n_steps=n, reason=reason)

    first, middle, last = (points[part] for part in _split(n))
    first_end, last_start = first[-1][0], last[0][0]
    low = {"first": 0, "middle": 0, "last": 0}
    for step, count in low_counts:
        third = "first" if step <= first_end else "last" if step >= last_start else "middle"
        low[third] += int(count)
    slope, se, t = _trend(points)
    return Thirds(
        n_steps=n,
        first_mean=fmean(y for _, y in first),
        middle_mean=fmean(y for _, y in middle),
        last_mean=fmean(y for _, y in last),
        first_steps=(first[0][0], first[-1][0]),
        middle_steps=(middle[0][0], middle[-1][0]),
        last_steps=(last[0][0], last[-1][0]),
        slope=slope, slope_se=se, t_stat=t,
        first_low=low["first"], middle_low=low["middle"], last_low=low["last"],
        t_stat_reason="" if t is not None else "the step means lie on a straight line, so t is undefined",
    )


def run_thirds(run: Run) -> Thirds:
    """The thirds of a run from its Step rows and one grouped count of its low rollouts."""
    step_means = list(Step.objects.filter(run=run).order_by("step").values_list("step", "reward_mean"))
    low_counts = list(
        Rollout.objects.filter(run=run, reward__lt=LOW_REWARD)
        .values("step").annotate(low=Count("id")).order_by("step").values_list("step", "low")
    )
    return thirds(step_means, low_counts)


def thirds_from_export(folder: Path) -> Thirds:
    """The same table recomputed from an export folder: steps.csv and data/*.parquet only."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    folder = Path(folder)
    with open(folder / "steps.csv", newline="", encoding="utf-8") as handle:
        step_means = [
            (int(row["step"]), float(row["reward_mean"]) if row["reward_mean"] != "" else None)
            for row in csv.DictReader(handle)
        ]
    low_counts: list[tuple[int, int]] = []
    for shard in sorted((folder / "data").glob("train-*.parquet")):
        table = pq.read_table(shard, columns=["step", "reward"])
        low = table.filter(pc.less(table["reward"], LOW_REWARD))  # null rewards drop out here
        counted = low.group_by("step").aggregate([("reward", "count")])
        low_counts.extend(zip(counted["step"].to_pylist(), counted["reward_count"].to_pylist()))
    return thirds(step_means, low_counts)
