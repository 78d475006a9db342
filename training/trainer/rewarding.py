"""The GRPO reward function: gate in-process, render and score on the workers, combine; what
the judged sketches become (rows, metrics) is training/recording.py's.

TRL calls `PaintingReward` once per generation batch with every completion. Anything that
goes wrong with infrastructure becomes a None reward for the rollouts it touched, and is
counted. It raises one thing only, on purpose, since a raising reward function ends
`train()`: when every rollout the workers had to judge was lost, it waits for the workers
the recipe needs (up to WORKER_WAIT_S) and fans out once more; lost again with a queue that
still has no worker, it raises `WorkersMissing` and the run pauses (training/trainer/pausing.py)
before any optimizer step on those rollouts. Lost again with every worker answering (a
backend that fails, not a missing worker), the step goes on with its None rewards.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from curation.selectors import group_references
from paintapp.lib.db import outlasting_restarts
from paintapp.lib.workers import answering_queues
from paintenv.extraction import reply_text
from paintenv.reward import Recipe
from painting.pipeline import Batch, Executor, JudgedSketch, PaintJob, paint_batch, render_seed, stage_queues
from training import metrics as keys
from training.models import Run
from training.recording import (
    revision_metrics,
    rollout_reward,
    rollout_rows,
    step_metrics,
    store_failed_rollouts,
    store_rollouts,
)
from training.trainer import together
from training.trainer.pausing import WorkersMissing
from training.trainer.turns import REVISION_CHAIN

log = logging.getLogger(__name__)
WORKER_POLL_S = 2.0  # between two asks of which queues answer, while a lost step waits


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
        return reply_text(completion)
    if isinstance(completion, list):
        return reply_text("".join(part.get("content", "") for part in completion if isinstance(part, dict)))
    return reply_text(str(completion))


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return next((m.get("content", "") for m in reversed(prompt) if m.get("role") == "user"), "")
    return str(prompt)


class PaintingReward:
    """One reward per completion: 0 on a failed gate, None on infrastructure failure."""

    __name__ = "painting"  # TRL names the reward column after the function

    def __init__(self, run: Run, *, executor: Executor | None = None):
        self.run = run
        self.executor = executor  # where renders and scores run: the workers unless given (painting.pipeline)
        self.recipe = Recipe.from_dict(run.recipe)
        self.args = run.arguments
        self.last: StepRecord | None = None
        self.step_started_at: float = time.monotonic()
        self._references: dict[tuple[int, int], list[int]] = {}
        self.turn_figures = {"late": 0, "render_s": 0.0, "score_s": 0.0}
        self.remote = None
        if self.args.environment_url:
            # Only a run that plays a remote environment imports OpenEnv's client (and with it fastmcp,
            # mcp and opentelemetry): a lean GPU image without them trains every other run.
            from training.trainer.remote import MARGIN_S, RemoteEnvironment

            self.remote = RemoteEnvironment(
                self.args.environment_url, token_env=self.args.environment_token_env, run_name=run.name,
                timeout_s=self.args.render_deadline_s + self.args.score_deadline_s + MARGIN_S,
            )

    # TRL calls this; keep the signature permissive (it passes dataset columns and helpers).
    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        if together.count() == 1:
            return self._step(prompts, completions, **kwargs)
        return self._step_of_processes(prompts, completions, **kwargs)

    def _step_of_processes(self, prompts, completions, **kwargs) -> list[float | None]:
        """In a multi-process run TRL calls each process with its own share of the step's
        completions, in rank order (the order in which it gathers the rewards into groups). The
        main process judges the whole step as one batch, the way a single process does, so each
        rollout gets its step-wide group, position and render seed, a lost step is retried and
        paused once for all, and the step's metrics cover every completion; each process then
        returns the rewards of its own share. Rendering and scoring happen on the workers: the
        main process only waits for them, as the others would."""
        subjects, chains = kwargs.get("subject"), kwargs.get(REVISION_CHAIN)
        shares = together.gather((list(prompts), list(completions), None if subjects is None else list(subjects),
                                  None if chains is None else list(chains)))

        def judge_all() -> tuple[list[float | None], tuple[int, str] | None]:
            every_subject = None if any(share[2] is None for share in shares) else [s for share in shares for s in share[2]]
            every_chain = None if any(share[3] is None for share in shares) else [c for share in shares for c in share[3]]
            try:
                rewards = self._step([p for share in shares for p in share[0]], [c for share in shares for c in share[1]],
                                     **{**kwargs, "subject": every_subject, REVISION_CHAIN: every_chain})
            except WorkersMissing as missing:
                return [], (missing.step, missing.queue)
            return rewards, None

        rewards, missing = together.main_decides(judge_all)
        if missing is not None:
            raise WorkersMissing(step=missing[0], queue=missing[1])
        start = sum(len(share[1]) for share in shares[:together.rank()])
        return rewards[start:start + len(completions)]

    def _step(self, prompts, completions, **kwargs) -> list[float | None]:
        state = kwargs.get("trainer_state")
        step = (state.global_step if state is not None else 0) + 1
        try:
            rewards, record = self._reward(step, prompts, completions, kwargs.get("subject"), kwargs.get(REVISION_CHAIN))
        except WorkersMissing:
            raise  # ends train() before the optimizer step: the run pauses (training/trainer/pausing.py)
        except Exception as exc:  # noqa: BLE001 - never kill train(); every rollout is None instead
            log.exception("reward function failed at step %s", step)
            rewards = [None] * len(completions)
            record = StepRecord(step=step, rollouts=len(completions), metrics={
                keys.NONE_COUNT: float(len(completions)), keys.REWARD_ERROR: 1.0})
            subjects = kwargs.get("subject")
            store_failed_rollouts(
                self.run, step, prompts=[prompt_text(p) for p in prompts],
                subjects=list(subjects) if subjects is not None else [prompt_text(p) for p in prompts],
                replies=[completion_text(c) for c in completions], message=f"reward function error: {exc}",
                group_size=self.args.num_generations)
        self.last = record
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for name, value in record.metrics.items():
                log_metric(name, value)
        return rewards

    # ------------------------------------------------------------------------------------
    def _reward(self, step, prompts, completions, subjects, chains=None) -> tuple[list[float | None], StepRecord]:
        """Judge the step's completions (or, with revision turns, combine the chains the rollout
        function judged turn by turn), store every rollout, and measure the step."""
        t_start = time.monotonic()
        generation_s = max(0.0, t_start - self.step_started_at)
        n = len(completions)
        subjects = list(subjects) if subjects is not None else [prompt_text(p) for p in prompts]
        if chains is None:
            replies = [completion_text(c) for c in completions]
            batch, late, missing = self._judge(self._jobs(step, subjects, replies))
            paintings, render_s, score_s = batch.paintings, batch.render_s, batch.score_s
            rewards = batch.rewards
        else:
            replies = [chain[-1].reply for chain in chains]
            paintings = [chain[-1].painted for chain in chains]
            late, missing = self.turn_figures["late"], []
            render_s, score_s = self.turn_figures["render_s"], self.turn_figures["score_s"]
            generation_s = max(0.0, generation_s - render_s - score_s)  # the turns were judged during generation
            rewards = [rollout_reward([t.reward for t in chain], gain_weight=self.args.revision_gain_weight)
                       for chain in chains]
        rows = rollout_rows(self.run, step, prompts=[prompt_text(p) for p in prompts], subjects=subjects,
                            replies=replies, paintings=paintings, rewards=rewards, chains=chains,
                            group_size=self.args.num_generations)
        store_rollouts(rows, chains, step=step)
        if missing:
            raise WorkersMissing(step=step, queue=missing[0])  # its rollouts are stored: the page shows why
        record = StepRecord(step=step, rollouts=n, started_at=t_start)
        record.metrics = step_metrics(rows, rewards, generation_s=generation_s, render_s=render_s, score_s=score_s,
                                      reward_s=time.monotonic() - t_start)
        record.metrics[keys.LATE_COUNT] = float(late)
        if chains is not None:
            record.metrics.update(revision_metrics(chains))
        return rewards, record

    def _jobs(self, step: int, subjects: list[str], replies: list[str], indices: list[int] | None = None) -> list[PaintJob]:
        """The paint jobs of replies at step-wide `indices` (all of the step's by default): each
        group is judged against the same references, drawn from the run's seed and step, at
        every turn."""
        G = self.args.num_generations
        indices = list(range(len(replies))) if indices is None else indices
        # A remote environment takes the seed as its reset seed: one per group, so it judges
        # the whole group on one draw of references.
        return [
            PaintJob(reply=reply, prompt=subject,
                     seed=render_seed(self.run.seed, step, i if self.remote is None else i // G * G),
                     reference_ids=tuple(self._group_references(step, i // G)) if self.remote is None else ())
            for i, subject, reply in zip(indices, subjects, replies, strict=True)
        ]

    def _group_references(self, step: int, group: int) -> list[int]:
        if not (self.recipe.w_judge > 0 and self.recipe.references_per_group):
            return []
        key = (step, group)
        if key not in self._references:
            members = outlasting_restarts(
                lambda: group_references(self.run.pool, count=self.recipe.references_per_group,
                                         key=(self.run.seed, step, group)),
                what=f"drawing step {step}'s references")
            self._references = {k: v for k, v in self._references.items() if k[0] == step}  # only this step's
            self._references[key] = [m.reference_id for m in members]
        return self._references[key]

    # Revision turns: the rollout function (training/trainer/turns.py) paints each turn through these.
    def begin_turns(self, step: int) -> None:
        self.turn_figures = {"late": 0, "render_s": 0.0, "score_s": 0.0}

    def paint_turn(self, step: int, share: int, items: list[tuple[int, str, str]]) -> list[JudgedSketch]:
        """Gate, render and score one turn's sketches, `items` = (index in this process's
        `share` of the step, subject, reply), as one batch: in a multi-process run the main
        process judges every process's items together, so the step's indices, render seeds,
        references, retry and pause are the ones a single process would have."""
        if together.count() == 1:
            return self._paint_turn(step, items)
        shares = together.gather((share, items))

        def judge_all() -> tuple[list[list[JudgedSketch]], tuple[int, str] | None]:
            offsets = [sum(size for size, _ in shares[:r]) for r in range(len(shares))]
            every = [(offset + i, subject, reply) for offset, (_, its) in zip(offsets, shares, strict=True)
                     for i, subject, reply in its]
            try:
                painted = self._paint_turn(step, every)
            except WorkersMissing as missing:
                return [], (missing.step, missing.queue)
            out, start = [], 0
            for _, its in shares:
                out.append(painted[start:start + len(its)])
                start += len(its)
            return out, None

        per_share, missing = together.main_decides(judge_all)
        if missing is not None:
            raise WorkersMissing(step=missing[0], queue=missing[1])
        return per_share[together.rank()]

    def _paint_turn(self, step: int, items: list[tuple[int, str, str]]) -> list[JudgedSketch]:
        if not items:
            return []
        indices, subjects, replies = (list(column) for column in zip(*items, strict=True))
        batch, late, missing = self._judge(self._jobs(step, subjects, replies, indices))
        figures = getattr(self, "turn_figures", None) or {"late": 0, "render_s": 0.0, "score_s": 0.0}
        figures["late"] += late
        figures["render_s"] += batch.render_s
        figures["score_s"] += batch.score_s
        self.turn_figures = figures
        if missing:
            raise WorkersMissing(step=step, queue=missing[0])
        return batch.paintings

    def _judge(self, jobs: list[PaintJob]) -> tuple[Batch, int, list[str]]:
        """(the batch, its late results, the queues still missing when it was lost twice)."""
        if self.remote is not None:  # its workers are the remote's: nothing here to wait for
            return self.remote.judge(jobs), 0, []
        batch = self._paint(jobs)
        late = batch.late_count
        if not batch.lost:
            return batch, late, []
        queues = stage_queues(self.recipe)
        missing = self._wait_for_workers(queues)
        log.warning("run %s: every rollout was lost to infrastructure; %s; fanning out once more", self.run.id,
                    f"still no worker on {', '.join(missing)}" if missing else "the workers answer")
        batch = self._paint(jobs)
        late += batch.late_count
        if not batch.lost:
            return batch, late, []
        answering = answering_queues()
        return batch, late, [queue for queue in queues if queue not in answering]

    def _paint(self, jobs: list[PaintJob]) -> Batch:
        return paint_batch(
            jobs, recipe=self.recipe, pool_id=self.run.pool_id, size=self.args.render_size, executor=self.executor,
            render_deadline_s=self.args.render_deadline_s, score_deadline_s=self.args.score_deadline_s,
            check_every=settings.DETERMINISM_EVERY,
        )

    def _wait_for_workers(self, queues: tuple[str, ...]) -> list[str]:
        """Wait up to WORKER_WAIT_S for a worker on each of `queues` (not past a stop request);
        the queues still missing."""
        deadline = time.monotonic() + settings.WORKER_WAIT_S
        while True:
            answering = answering_queues()
            missing = [queue for queue in queues if queue not in answering]
            if not missing or time.monotonic() >= deadline or self._stop_requested():
                return missing
            time.sleep(min(WORKER_POLL_S, max(0.0, deadline - time.monotonic())))

    def _stop_requested(self) -> bool:
        return Run.objects.filter(id=self.run.id, stop_requested=True).exists()
