"""Reads for runs: the list with its summary columns, a run's steps and rollouts."""
from __future__ import annotations

from django.db.models import Max, OuterRef, QuerySet, Subquery

from training.models import Rollout, Run, Step


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
