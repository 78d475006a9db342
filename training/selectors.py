"""Reads for the run pages: the run list with its summary columns, a run's steps, rollouts and
time left, the runs worth comparing with it, a warm start's ladder, and the launch form's pre-fill.

What the other pages read is beside it: gallery_selectors.py, chain_selectors.py,
deletion_selectors.py, sft_selectors.py; generation_speeds.py what the launch form and the
trainer's `auto` read of the measured generation."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Max, OuterRef, Q, QuerySet, Subquery

from painting.selectors import recipe_name_matching
from training import metrics as keys
from training.arguments import CONTINUED_LORA, RunArguments
from training.models import Rollout, Run, SftDataset, Step


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


def launch_initial(query) -> dict:
    """The launch form's pre-fill from its query string: "duplicate as new run" (`from`: every
    argument of that run), "Train with GRPO from this run" (`init_run`: an SFT run, whose LoRA
    the GRPO run continues) or "Train SFT on this dataset" (`sft_dataset`); {} for none.
    Run.DoesNotExist / SftDataset.DoesNotExist for an id that names nothing."""
    source_id = query.get("from")
    if source_id:
        source = Run.objects.get(pk=source_id)
        recipe = recipe_name_matching(source.recipe) or source.recipe_name  # its recipe, not a preset renamed since
        # Read through RunArguments: a run stored before a key was replaced fills its successor.
        return {**source.arguments.to_dict(), "pool": source.pool_id, "recipe": recipe,
                "base_model": source.base_model, "subjects": source.subjects, "seed": source.seed,
                "name": f"{source.name} (copy)", "kind": source.kind, "sft_dataset": source.sft_dataset_id,
                "init_run": source.init_run_id}
    if query.get("init_run", "").isdigit():
        sft = Run.objects.get(pk=query["init_run"], kind=Run.Kind.SFT)
        sft_args = sft.arguments
        return {"kind": Run.Kind.GRPO, "init_run": sft.id, "pool": sft.pool_id, "base_model": sft.base_model,
                "recipe": recipe_name_matching(sft.recipe) or sft.recipe_name, "subjects": sft.subjects,
                "seed": sft.seed, "name": f"GRPO from #{sft.id} {sft.name}"[:120],
                **{key: getattr(sft_args, key) for key in CONTINUED_LORA}}
    if query.get("sft_dataset", "").isdigit():
        dataset = SftDataset.objects.get(pk=query["sft_dataset"])
        return {"kind": Run.Kind.SFT, "sft_dataset": dataset.id, "pool": dataset.pool_id}
    return {}
