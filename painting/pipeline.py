"""One pipeline from sketch to reward: gate -> render fan-out -> score fan-out -> combine.

The trainer's reward, evaluation, seeding the reference pool, `paint score` and the rollout
editor all judge a sketch here, so they agree on everything that decides a reward:

- **Seeding.** A render's seed is `render_seed(run_seed, step, index)`; evaluation renders as
  step 0, which no training step is.
- **Deadlines.** Each stage (render, score) has one deadline for the whole batch; what is not
  back by then is an infrastructure failure of that sketch.
- **None.** Any infrastructure failure (timeout, dead worker, unreachable Chromium, a judge
  or scorer that is down) makes that sketch's reward None with the reason — never a made-up
  0. A sketch that fails the gate or the render is worth 0: that is a verdict, not a failure.
- **Combining.** `reward_of` applies the recipe's weights through `paintapp.env.reward.combine`.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from celery import group

from paintapp.env.painting import UNRENDERABLE, Painting, paint_reply
from paintapp.env.renderer import Renderer
from paintapp.env.reward import Recipe, combine
from painting import services
from painting.tasks import render_sketch, score_painting

Progress = Callable[[str, int, int], None]  # (stage, done, total)

# Rendering alone (seeding the reference pool): the reward is the verdict, nothing is scored.
RENDER_ONLY = Recipe("render-only", w_gate=1.0, w_length=0.0, w_judge=0.0, w_quality=0.0)


def render_seed(run_seed: int, step: int, index: int) -> int:
    """The render seed of sketch `index` (in the whole batch) at `step`, so the editor can
    re-render a rollout with the very seed the trainer used."""
    return run_seed + step * 1000 + index


@dataclass(frozen=True)
class PaintJob:
    """One sketch to judge: a model's reply (or a bare sketch), what it was asked to paint,
    its render seed and the references its group is judged against. `png` skips the render
    (a painting that exists already); then `reply` may be None (no sketch: length part 0)."""

    reply: str | None
    prompt: str
    seed: int = 0
    reference_ids: tuple[int, ...] = ()
    png: bytes | None = None


@dataclass
class Painted:
    """A job's outcome: the static verdict, the render and score results, and the reward."""

    job: PaintJob
    painting: Painting | None  # None when the job gave a painting without a sketch
    render: dict | None = None  # what render_sketch returns; None when not rendered
    score: dict | None = None  # what score_painting returns; None when not scored
    reward: float | None = None
    parts: dict = field(default_factory=dict)
    failure: str = ""  # the infrastructure failure that made the reward None

    @property
    def code(self) -> str:
        return (self.painting.code if self.painting else None) or ""

    @property
    def gate_passed(self) -> bool:
        return self.painting is None or self.painting.gate.passed

    @property
    def passed(self) -> bool:
        return self.gate_passed and self.render is not None and bool(self.render.get("passed"))

    @property
    def violations(self) -> list[str]:
        codes = set(self.painting.gate.codes) if self.painting else set()
        codes.update((self.render or {}).get("violations", []))
        return sorted(codes)


@dataclass
class Batch:
    paintings: list[Painted]
    render_s: float = 0.0
    score_s: float = 0.0

    @property
    def rewards(self) -> list[float | None]:
        return [p.reward for p in self.paintings]

    @property
    def none_count(self) -> int:
        return sum(1 for p in self.paintings if p.reward is None)


def reward_of(
    recipe: Recipe, *, code: str, gate_passed: bool, render: dict | None, score: dict | None, failure: str = ""
) -> tuple[float | None, dict, str]:
    """(reward, parts, failure) from a sketch's gate, render and score results.

    `render` and `score` are what `render_sketch` and `score_painting` return; `failure` an
    infrastructure failure already met (then the reward is None and the reason is kept).
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


class Executor(Protocol):
    """Where renders and scores run. Each returns one result or exception per call, in order."""

    def render(self, calls: list[dict], *, deadline_s: float, progress: Callable[[int], None]) -> list[Any]: ...

    def score(self, calls: list[dict], *, deadline_s: float, progress: Callable[[int], None]) -> list[Any]: ...


# Sending a stage rides out a broker restart (seconds) instead of failing the whole step
# after Celery's default 0.6 s of retries: up to ~30 s, before the stage's deadline starts.
SEND_RETRY_POLICY = {"max_retries": 30, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}


class Workers:
    """Renders on the `render` queue and scores on the `score` queue, all of a stage at once."""

    def render(self, calls, *, deadline_s, progress):
        return self._fan_out(render_sketch, calls, deadline_s, progress)

    def score(self, calls, *, deadline_s, progress):
        if any("png" in call for call in calls):
            raise ValueError("workers score stored paintings only (png_path)")
        return self._fan_out(score_painting, calls, deadline_s, progress)

    @staticmethod
    def _fan_out(task, calls, deadline_s, progress) -> list[Any]:
        job = group(task.s(**call) for call in calls).apply_async(retry_policy=SEND_RETRY_POLICY)
        deadline = time.monotonic() + deadline_s
        results: list[Any] = []
        for result in job.results:
            try:
                # Waiting on subtasks from inside a task (the trainer, evaluation) is intended:
                # they run on other queues, so they cannot deadlock the waiting worker.
                remaining = max(0.1, deadline - time.monotonic())
                results.append(result.get(timeout=remaining, disable_sync_subtasks=False, propagate=True))
            except Exception as exc:  # noqa: BLE001 - timeout, dead worker, RenderUnavailable, broker down
                results.append(exc)
            progress(len(results))
        if time.monotonic() > deadline:
            job.revoke()  # what never started is not wanted any more
        return results


class InProcess:
    """Renders in `renderer` (this process's browser) and scores in this process, one by one.
    A render already started runs to its own timeout; those not started by the deadline fail."""

    def __init__(self, renderer: Renderer | None = None):
        self.renderer = renderer

    def render(self, calls, *, deadline_s, progress):
        return self._each(lambda call: services.painting_render(**call, renderer=self.renderer), calls, deadline_s, progress)

    def score(self, calls, *, deadline_s, progress):
        def one(call: dict) -> dict:
            if "png" in call:
                call = dict(call)
                return services.painting_score(
                    png=call.pop("png"), **{**call, "recipe": Recipe.from_dict(call["recipe"])}
                )
            return services.painting_score_stored(**call)

        return self._each(one, calls, deadline_s, progress)

    @staticmethod
    def _each(work, calls, deadline_s, progress) -> list[Any]:
        deadline = time.monotonic() + deadline_s
        results: list[Any] = []
        for call in calls:
            if time.monotonic() > deadline:
                results.append(TimeoutError(f"the stage's {deadline_s:.0f} s deadline passed before it started"))
            else:
                try:
                    results.append(work(call))
                except Exception as exc:  # noqa: BLE001 - Chromium unavailable, storage error
                    results.append(exc)
            progress(len(results))
        return results


def paint_batch(
    jobs: Sequence[PaintJob],
    *,
    recipe: Recipe,
    pool_id: int | None,
    size: int,
    executor: Executor | None = None,
    render_deadline_s: float = 300.0,
    score_deadline_s: float = 300.0,
    render_failed_gate: bool = False,
    progress: Progress | None = None,
) -> Batch:
    """Gate every job (in-process, milliseconds), render those that pass, score the renders that
    pass, and combine each into a reward. Never raises for a sketch or for infrastructure."""
    executor = executor or Workers()
    report = progress or (lambda stage, done, total: None)
    painted = [
        Painted(job=job, painting=None if job.reply is None else paint_reply(job.reply, renderer=None))
        for job in jobs
    ]
    failures: dict[int, str] = {}

    # Render: sketches that passed the gate (or every renderable one, when asked).
    t0 = time.monotonic()
    for p in painted:
        if p.job.png is not None:
            p.render = {"passed": True, "violations": [], "png": p.job.png}
    to_render = [
        i for i, p in enumerate(painted)
        if p.job.png is None and p.painting is not None and p.painting.code is not None
        and (p.painting.gate.passed or (render_failed_gate and _renderable(p.painting)))
    ]
    calls = [
        {"code": painted[i].painting.code, "seed": painted[i].job.seed, "size": size,
         "render_failed_gate": render_failed_gate}
        for i in to_render
    ]
    for i, outcome in _stage("render", executor.render, to_render, calls, render_deadline_s, report, failures):
        painted[i].render = outcome
    render_s = time.monotonic() - t0

    # Score: paintings that passed the gate and the render, against their group's references.
    t0 = time.monotonic()
    scored = recipe.w_judge > 0 or recipe.w_quality > 0
    to_score = [
        i for i, p in enumerate(painted) if scored and p.passed and (p.render.get("png_path") or p.render.get("png"))
    ]
    calls = []
    for i in to_score:
        job, render = painted[i].job, painted[i].render
        where = {"png": render["png"]} if render.get("png") else {"png_path": render["png_path"]}
        calls.append({**where, "prompt": job.prompt, "recipe": recipe.to_dict(),
                      "reference_ids": list(job.reference_ids), "pool_id": pool_id})
    for i, outcome in _stage("score", executor.score, to_score, calls, score_deadline_s, report, failures):
        painted[i].score = outcome
    score_s = time.monotonic() - t0

    for i, p in enumerate(painted):
        p.reward, p.parts, p.failure = reward_of(
            recipe, code=p.code, gate_passed=p.gate_passed, render=p.render, score=p.score,
            failure=failures.get(i, ""),
        )
    return Batch(paintings=painted, render_s=render_s, score_s=score_s)


def _stage(name: str, run, indices: list[int], calls: list[dict], deadline_s: float, report: Progress,
           failures: dict[int, str]) -> list[tuple[int, dict]]:
    """Run one stage's calls; an exception becomes that sketch's failure, the rest come back."""
    if not calls:
        return []
    outcomes = run(calls, deadline_s=deadline_s, progress=lambda done: report(name, done, len(calls)))
    results = []
    for i, outcome in zip(indices, outcomes):
        if isinstance(outcome, Exception):
            failures[i] = f"{name}: {type(outcome).__name__}: {outcome}"[:500]
        else:
            results.append((i, outcome))
    return results


def _renderable(painting: Painting) -> bool:
    return not (set(painting.gate.codes) & UNRENDERABLE)
