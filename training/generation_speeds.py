"""How fast each generation backend generated for a model on a box, from the runs' step metrics:
what the launch form shows and generation `auto` picks from on the train worker (a read below
the trainer, which uses it)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from training import metrics as keys
from training.models import Run, Step


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
