"""One pipeline from sketch to reward: gate -> render fan-out -> score fan-out -> combine.

The trainer's reward, evaluation, seeding the reference pool, `paint score`, the rollout
editor and the OpenEnv server (serving/) all judge a sketch here, so they agree on everything that decides a reward:

- **Seeding.** A render's seed is `render_seed(run_seed, step, index)`; evaluation renders as
  step 0, which no training step is.
- **Deadlines.** Each stage (render, score) has one deadline for the whole batch; what is not
  back by then is an infrastructure failure of that sketch. On the workers each task expires at
  the deadline and what is not back is revoked, a started one terminated (`Workers`, through
  the pipeline core in painting/fanout.py, which the rollout editor uses too); a result that
  still comes back is late: counted, never used.
- **None.** Any infrastructure failure (timeout, dead worker, unreachable Chromium, a judge
  or scorer that is down) makes that sketch's reward None with the reason — never a made-up
  0. A sketch that fails the gate or the render is worth 0: that is a verdict, not a failure.
- **Combining.** `reward_of` applies the recipe's weights through `paintenv.reward.combine`.
- **Determinism.** A share of the sketches (1 in `check_every`; every one with 1) is rendered a
  second time in the same fan-out, with the same seed, on a page whose history differs from a
  warm worker's (a page of its own, its heap churned); a painting that differs from its twin by
  more than same-seed renders do fails as `nondeterministic` (paintenv/determinism.py). A
  twin lost to infrastructure checks nothing and costs nothing.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.core.files.storage import default_storage

from paintenv.determinism import compare_paintings
from paintenv.length import painting_tokens
from paintenv.paint import UNRENDERABLE, Painting, paint_reply
from paintenv.renderer import Renderer
from paintenv.reward import Recipe, combine
from paintenv.sandbox import NONDETERMINISTIC, PAINTED_TEXT
from paintenv.text_check import TextCheckUnavailable, get_text_check
from painting import fanout, services
from painting.results import GivenPainting, RenderResult, ScoreResult
from painting.tasks import render_sketch

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]  # (stage, done, total)

# Rendering alone (seeding the reference pool): the reward is the verdict, nothing is scored.
RENDER_ONLY = Recipe("render-only", w_gate=1.0, w_length=0.0, w_judge=0.0, w_quality=0.0)


def stage_queues(recipe: Recipe) -> tuple[str, ...]:
    """The worker queues a batch judged with `recipe` needs: render always, score when the
    recipe weights a scored part (the score stage is skipped otherwise)."""
    return (_queue_of(render_sketch), *((fanout.score_queue(recipe),) if _scores(recipe) else ()))


def _queue_of(task) -> str:
    return task.app.conf.task_routes[task.name]["queue"]


def _scores(recipe: Recipe) -> bool:
    return recipe.w_judge > 0 or recipe.w_quality > 0


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
class JudgedSketch:
    """A job's outcome: the static verdict, the render and score results, and the reward."""

    job: PaintJob
    painting: Painting | None  # None when the job gave a painting without a sketch
    render: RenderResult | GivenPainting | None = None  # None when not rendered
    score: ScoreResult | None = None  # None when not scored
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
    paintings: list[JudgedSketch]
    render_s: float = 0.0
    score_s: float = 0.0
    late_count: int = 0  # results that came back after their stage's deadline: not used
    determinism_checked: int = 0  # paintings rendered twice and compared

    @property
    def rewards(self) -> list[float | None]:
        return [p.reward for p in self.paintings]

    @property
    def none_count(self) -> int:
        return sum(1 for p in self.paintings if p.reward is None)

    @property
    def lost(self) -> bool:
        """Nothing the workers had to judge came back: some rewards are None and every other
        one is a gate refusal (0 for every sketch alike, so no group has anything to learn)."""
        return self.none_count > 0 and all(p.reward is None or not p.gate_passed for p in self.paintings)


def reward_of(
    recipe: Recipe, *, code: str, gate_passed: bool, render: RenderResult | GivenPainting | None,
    score: ScoreResult | None,
    failure: str = "",
) -> tuple[float | None, dict, str]:
    """(reward, parts, failure) from a sketch's gate, render and score results.

    `render` and `score` are what `render_sketch` and `score_painting` return; `failure` an
    infrastructure failure already met (then the reward is None and the reason is kept).
    """
    length = recipe.length_part(length_tokens(code, render))
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


def length_tokens(code: str, render: RenderResult | GivenPainting | None) -> int | None:
    """Tokens of painting code (paintenv/length.py): what the render measured, the code that
    ran (None when its coverage was lost: the length part is then unknown, never 0); by the
    static rules alone for a sketch that was not rendered or a painting given as a PNG."""
    if render is not None and "length_from" in render:
        return render.get("painting_tokens")  # type: ignore[return-value]
    if render is not None and "rendered" in render:
        return None  # a render task from before painting code was measured
    return painting_tokens(code)


class Executor(Protocol):
    """Where renders and scores run. Each returns one result or exception per call, in order."""

    def render(self, calls: list[dict], *, deadline_s: float, progress: Callable[[int], None]) -> list[Any]: ...

    def score(self, calls: list[dict], *, deadline_s: float, progress: Callable[[int], None]) -> list[Any]: ...


class Workers:
    """Renders on the `render` queue and scores on the `score` queue, all of a stage at once,
    through the pipeline core (painting/fanout.py): each task expires at the stage's deadline,
    and at the deadline those not back are given up — revoked, a started one terminated, then
    up to `settle_s` for them to end; one that finished first anyway is a late result (counted,
    not used). Terminating costs the pool a fresh child process and browser (the first render
    after it took 11 s instead of 2-4 s in tests/painting/test_pipeline.py, against the minute
    the sketch could have kept)."""

    def __init__(self, *, settle_s: float = 2.0, cancel: threading.Event | None = None):
        self.settle_s = settle_s
        self.cancel = cancel  # set: stop waiting, revoke what is not back (an environment client left)

    def render(self, calls, *, deadline_s, progress):
        return self._fan_out("render", calls, deadline_s, progress)

    def score(self, calls, *, deadline_s, progress):
        if any("png" in call for call in calls):
            raise ValueError("workers score stored paintings only (png_path)")
        return self._fan_out("score", calls, deadline_s, progress)

    def _fan_out(self, stage: str, calls, deadline_s, progress) -> list[Any]:
        handles = fanout.submit(stage, calls, wait_s=deadline_s)
        return fanout.collect(handles, deadline_s=deadline_s, progress=progress, settle_s=self.settle_s,
                              cancel=self.cancel)


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
    check_every: int = 0,
    rng: random.Random | None = None,
) -> Batch:
    """Gate every job (in-process, milliseconds), render those that pass, score the renders that
    pass, and combine each into a reward. Never raises for a sketch or for infrastructure.

    `check_every`: render 1 in N of the sketches that passed the gate twice to check that the
    painting depends on its seed alone (0: none; 1: all); `rng` draws which."""
    executor = executor or Workers()
    report = progress or (lambda stage, done, total: None)
    painted = [
        JudgedSketch(job=job, painting=None if job.reply is None else paint_reply(job.reply, renderer=None))
        for job in jobs
    ]
    failures: dict[int, str] = {}
    late: list[int] = []

    # Render: sketches that passed the gate (or every renderable one, when asked).
    t0 = time.monotonic()
    for i, p in enumerate(painted):
        if p.job.png is not None:
            try:
                p.render = _given_painting(p.job.png)
            except TextCheckUnavailable as exc:
                failures[i] = f"render: the painted-text check cannot run: {exc}"[:500]
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
    twins = _determinism_sample([i for i in to_render if painted[i].painting.gate.passed], check_every,
                                rng or random.Random())
    # A twin renders on a page of its own whose heap the harness churns first (paint.py's
    # `twin`), so a painting that reads the renderer's history paints something else there.
    calls += [{**calls[to_render.index(i)], "twin": True} for i in twins]
    checked = 0
    rendered = _stage("render", executor.render, to_render + twins, calls, render_deadline_s, report, failures, late,
                      twins=len(twins))
    for i, outcome in rendered[:len(rendered) - len(twins)]:
        painted[i].render = outcome
    for i, twin in rendered[len(rendered) - len(twins):]:
        checked += _check_determinism(painted[i].render, twin)
    render_s = time.monotonic() - t0

    # Score: paintings that passed the gate and the render, against their group's references.
    t0 = time.monotonic()
    scored = _scores(recipe)
    to_score = [
        i for i, p in enumerate(painted) if scored and p.passed and (p.render.get("png_path") or p.render.get("png"))
    ]
    calls = []
    for i in to_score:
        job, render = painted[i].job, painted[i].render
        where = {"png": render["png"]} if render.get("png") else {"png_path": render["png_path"]}
        calls.append({**where, "prompt": job.prompt, "recipe": recipe.to_dict(),
                      "reference_ids": list(job.reference_ids), "pool_id": pool_id})
    for i, outcome in _stage("score", executor.score, to_score, calls, score_deadline_s, report, failures, late):
        painted[i].score = outcome
    score_s = time.monotonic() - t0

    for i, p in enumerate(painted):
        p.reward, p.parts, p.failure = reward_of(
            recipe, code=p.code, gate_passed=p.gate_passed, render=p.render, score=p.score,
            failure=failures.get(i, ""),
        )
    return Batch(paintings=painted, render_s=render_s, score_s=score_s, late_count=len(late),
                 determinism_checked=checked)


def _stage(name: str, run, indices: list[int], calls: list[dict], deadline_s: float, report: Progress,
           failures: dict[int, str], late: list[int], *, twins: int = 0) -> list[tuple[int, dict | None]]:
    """Run one stage's calls; an exception becomes that sketch's failure (a late result is
    noted in `late` too), the rest come back. The last `twins` calls are second renders for the
    determinism check: they come back last, each as a result or None, and fail nothing."""
    if not calls:
        return []
    outcomes = run(calls, deadline_s=deadline_s, progress=lambda done: report(name, done, len(calls)))
    results: list[tuple[int, dict | None]] = []
    firsts = len(calls) - twins
    for position, (i, outcome) in enumerate(zip(indices, outcomes)):
        if position >= firsts:
            results.append((i, None if isinstance(outcome, Exception) else outcome))
        elif isinstance(outcome, Exception):
            failures[i] = f"{name}: {type(outcome).__name__}: {outcome}"[:500]
            if isinstance(outcome, fanout.LateResult):
                late.append(i)
        else:
            results.append((i, outcome))
    return results


def _given_painting(png: bytes) -> GivenPainting:
    """A painting that exists already, read for writing like every render's painting."""
    found = get_text_check().find(png)
    return {"passed": not found.legible, "violations": [PAINTED_TEXT] if found.legible else [], "png": png,
            "findings": {"text": found.to_dict()}}


def _determinism_sample(indices: list[int], every: int, rng: random.Random) -> list[int]:
    """Which of `indices` to render twice: each with probability 1 / `every` (all with 1)."""
    if every <= 0:
        return []
    return [i for i in indices if every == 1 or rng.random() < 1 / every]


def _check_determinism(first: RenderResult | None, twin: RenderResult | None) -> int:
    """Compare a painting that passed with its twin; a difference fails it as `nondeterministic`.
    1 when compared, 0 when there was nothing to compare (either render lost, or not passed)."""
    if first is None or twin is None or not first.get("passed"):
        return 0
    comparison = compare_paintings(render_png(first), list(first.get("violations", [])), render_png(twin),
                                   list(twin.get("violations", [])))
    first["findings"] = {**first.get("findings", {}), "determinism": comparison.to_dict()}
    if not comparison.same:
        first["passed"] = False
        first["violations"] = [*first.get("violations", []), NONDETERMINISTIC]
    return 1


def render_png(render: RenderResult | GivenPainting) -> bytes | None:
    """The PNG of what render_sketch returned (its bytes, or the stored file), or None when
    nothing was painted."""
    if render.get("png"):
        return render["png"]
    if not render.get("png_path"):
        return None
    with default_storage.open(render["png_path"], "rb") as fh:
        return fh.read()


def _renderable(painting: Painting) -> bool:
    return not (set(painting.gate.codes) & UNRENDERABLE)
