"""The GRPO reward function: gate in-process, render and score on the workers, store, combine.

TRL calls `PaintingReward` once per generation batch with every completion. It never raises
(a raising reward function kills `train()`): anything that goes wrong with infrastructure
becomes a None reward for the rollouts it touched, and is counted.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from statistics import fmean, pstdev
from typing import Any

from celery import group

from curation.selectors import group_references
from paintapp.env.painting import paint_reply
from paintapp.env.reward import Recipe, combine
from training.config import RunArguments
from training.models import Rollout, Run

log = logging.getLogger(__name__)
LOW_REWARD = 0.3


@dataclass
class StepRecord:
    """What one reward call measured; the callback adds it to the step's metrics."""

    step: int
    rollouts: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    started_at: float = 0.0


def completion_text(completion: Any) -> str:
    """TRL gives conversational completions as [{"role": "assistant", "content": ...}]."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(part.get("content", "") for part in completion if isinstance(part, dict))
    return str(completion)


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return next((m.get("content", "") for m in reversed(prompt) if m.get("role") == "user"), "")
    return str(prompt)


def render_seed(run_seed: int, step: int, index: int) -> int:
    """The seed of the render of completion `index` (in the whole batch) at `step`: the editor
    re-renders a rollout with the very seed the trainer used."""
    return run_seed + step * 1000 + index


def reward_parts(
    recipe: Recipe, *, code: str, gate_passed: bool, render: dict | None, score: dict | None, failure: str = ""
) -> tuple[float | None, dict, str]:
    """One rollout's (reward, parts, failure) from its gate, render and score results.

    `render` and `score` are what `render_sketch` and `score_painting` return; `failure` an
    infrastructure failure already met (then the reward is None). Shared by the trainer and
    the editor's revisions, so an edited sketch is rewarded exactly like a rollout.
    """
    length = recipe.length_part(code)
    if failure:
        parts = {"gate": 1.0 if gate_passed else 0.0, "length": length, "judge": None, "quality": None,
                 "unavailable": [failure]}
        return None, parts, failure
    if not gate_passed or (render is not None and not render.get("passed")):
        breakdown = combine(recipe, False, length, None, None)
    else:
        judge = (score or {}).get("judge") or {}
        breakdown = combine(
            recipe, True, length, judge.get("score"), (score or {}).get("quality"),
            reasons=(score or {}).get("reasons", {}),
        )
        if breakdown.reward is None:
            failure = "; ".join(breakdown.unavailable)
    parts = breakdown.to_dict()
    parts.pop("reward", None)
    return breakdown.reward, parts, failure


def _get(result, timeout: float) -> Any:
    # Waiting on subtasks from inside the trainer task is intended here: they run on other
    # queues (render, score), so they cannot deadlock the train worker.
    return result.get(timeout=max(0.1, timeout), disable_sync_subtasks=False, propagate=True)


class PaintingReward:
    """One reward per completion: 0 on a failed gate, None on infrastructure failure."""

    __name__ = "painting"  # TRL names the reward column after the function

    def __init__(self, run: Run):
        self.run = run
        self.recipe = Recipe.from_dict(run.recipe)
        self.args = RunArguments.from_dict(run.hyperparameters)
        self.last: StepRecord | None = None
        self.step_started_at: float = time.monotonic()

    # TRL calls this; keep the signature permissive (it passes dataset columns and helpers).
    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        state = kwargs.get("trainer_state")
        step = (state.global_step if state is not None else 0) + 1
        try:
            rewards, record = self._reward(step, prompts, completions, kwargs.get("subject"))
        except Exception as exc:  # noqa: BLE001 - never kill train(); every rollout is None instead
            log.exception("reward function failed at step %s", step)
            rewards = [None] * len(completions)
            record = StepRecord(step=step, rollouts=len(completions), metrics={"ours/none_count": float(len(completions))})
            record.metrics["ours/reward_error"] = 1.0
            self._store_failure(step, prompts, completions, kwargs.get("subject"), f"reward function error: {exc}")
        self.last = record
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for name, value in record.metrics.items():
                log_metric(name, value)
        return rewards

    # ------------------------------------------------------------------------------------
    def _reward(self, step, prompts, completions, subjects) -> tuple[list[float | None], StepRecord]:
        t_start = time.monotonic()
        generation_s = max(0.0, t_start - self.step_started_at)
        G = self.args.num_generations
        n = len(completions)
        replies = [completion_text(c) for c in completions]
        subjects = list(subjects) if subjects is not None else [prompt_text(p) for p in prompts]

        # 1. Static gate, in-process (milliseconds each).
        gated = [paint_reply(r, renderer=None) for r in replies]

        # 2. Renders of the sketches that passed, in parallel on the render queue.
        from training.tasks import render_sketch, score_painting

        to_render = [i for i, p in enumerate(gated) if p.gate.passed]
        renders: dict[int, dict] = {}
        failures: dict[int, str] = {}
        t_render = time.monotonic()
        if to_render:
            job = group(
                render_sketch.s(gated[i].code, seed=render_seed(self.run.seed, step, i), size=self.args.render_size)
                for i in to_render
            ).apply_async()
            deadline = time.monotonic() + self.args.render_deadline_s
            for i, result in zip(to_render, job.results):
                try:
                    renders[i] = _get(result, deadline - time.monotonic())
                except Exception as exc:  # noqa: BLE001 - timeout, dead worker, RenderUnavailable
                    failures[i] = f"render: {type(exc).__name__}: {exc}"[:500]
        render_s = time.monotonic() - t_render

        # 3. Scoring of the rendered paintings that passed, against the group's shared references.
        group_refs: dict[int, list[int]] = {}
        for g in range(max(1, n // G)):
            if self.recipe.w_judge > 0 and self.recipe.references_per_group:
                members = group_references(self.run.pool, count=self.recipe.references_per_group, key=(self.run.seed, step, g))
                group_refs[g] = [m.reference_id for m in members]
            else:
                group_refs[g] = []
        to_score = [i for i, r in renders.items() if r.get("passed") and r.get("png_path")]
        scores: dict[int, dict] = {}
        t_score = time.monotonic()
        if to_score:
            job = group(
                score_painting.s(
                    renders[i]["png_path"], prompt=subjects[i], recipe=self.recipe.to_dict(),
                    reference_ids=group_refs.get(i // G, []), pool_id=self.run.pool_id,
                )
                for i in to_score
            ).apply_async()
            deadline = time.monotonic() + self.args.score_deadline_s
            for i, result in zip(to_score, job.results):
                try:
                    scores[i] = _get(result, deadline - time.monotonic())
                except Exception as exc:  # noqa: BLE001
                    failures[i] = f"score: {type(exc).__name__}: {exc}"[:500]
        score_s = time.monotonic() - t_score

        # 4. Combine and store every rollout before returning.
        rewards: list[float | None] = []
        rows = []
        for i in range(n):
            painting, render, score = gated[i], renders.get(i), scores.get(i)
            code = painting.code or ""
            violations = list(painting.gate.codes)
            if render is not None:
                violations = sorted(set(violations) | set(render.get("violations", [])))
            passed = painting.gate.passed and render is not None and bool(render.get("passed"))
            reward, parts, failure = reward_parts(
                self.recipe, code=code, gate_passed=painting.gate.passed, render=render, score=score,
                failure=failures.get(i, ""),
            )
            rewards.append(reward)
            rows.append(Rollout(
                run=self.run, step=step, group=i // G, position=i % G, subject=subjects[i][:120],
                prompt=prompt_text(prompts[i]), reply=replies[i], code=code,
                png=(render or {}).get("png_path") or "", passed=passed, violations=violations,
                reward=reward, parts=parts, judge_detail=(score or {}).get("judge") or {},
                reference_ids=group_refs.get(i // G, []),
                paint_fraction=(render or {}).get("paint_fraction"), errors=(render or {}).get("errors", []),
                stats=painting.gate.stats, timings={**(render or {}).get("timings", {}), "render_ms": (render or {}).get("elapsed_ms")},
                failure=failure,
            ))
        Rollout.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["run", "step", "group", "position"],
            update_fields=["reply", "code", "png", "passed", "violations", "reward", "parts", "judge_detail",
                           "reference_ids", "paint_fraction", "errors", "stats", "timings", "failure", "subject", "prompt"],
        )
        record = StepRecord(step=step, rollouts=n, started_at=t_start)
        record.metrics = self._metrics(rows, rewards, generation_s, render_s, score_s, time.monotonic() - t_start)
        return rewards, record

    def _metrics(self, rows, rewards, generation_s, render_s, score_s, reward_s) -> dict[str, float]:
        n = len(rows)
        valid = [r for r in rewards if r is not None]
        violations = Counter(code for row in rows for code in row.violations)
        fractions = [row.paint_fraction for row in rows if row.paint_fraction is not None]
        metrics = {
            "ours/gate_pass_rate": sum(1 for row in rows if row.passed) / n if n else 0.0,
            "ours/none_count": float(sum(1 for r in rewards if r is None)),
            "ours/low_count": float(sum(1 for r in valid if r < LOW_REWARD)),
            "ours/paint_fraction": fmean(fractions) if fractions else 0.0,
            "ours/generation_s": generation_s,
            "ours/render_s": render_s,
            "ours/score_s": score_s,
            "ours/reward_s": reward_s,
            "ours/diversity": self._diversity(rows),
        }
        for part in ("judge", "quality", "length"):
            values = [row.parts.get(part) for row in rows if row.passed and row.parts.get(part) is not None]
            if values:
                metrics[f"ours/{part}"] = fmean(values)
        if valid:
            metrics["ours/reward_valid_std"] = pstdev(valid)
        for code, count in violations.items():
            metrics[f"violations/{code}"] = float(count)
        return metrics

    def _diversity(self, rows) -> float:
        """Mean pairwise feature distance of the group's paintings (style collapse shows as a fall)."""
        from django.core.files.storage import default_storage

        from paintapp.env.features import cached_image_features, mean_pairwise_distance

        features = []
        for row in rows:
            if row.png:
                try:
                    with default_storage.open(row.png, "rb") as fh:
                        features.append(cached_image_features(fh.read()))
                except OSError:
                    continue
        return mean_pairwise_distance(features)

    def _store_failure(self, step, prompts, completions, subjects, message: str) -> None:
        G = self.args.num_generations
        subjects = list(subjects) if subjects is not None else [prompt_text(p) for p in prompts]
        rows = [
            Rollout(
                run=self.run, step=step, group=i // G, position=i % G, subject=subjects[i][:120],
                prompt=prompt_text(prompts[i]), reply=completion_text(c), reward=None, failure=message[:2000],
            )
            for i, c in enumerate(completions)
        ]
        try:
            Rollout.objects.bulk_create(rows, ignore_conflicts=True)
        except Exception:  # noqa: BLE001 - the database may be what failed
            log.exception("could not store the failed rollouts of step %s", step)
