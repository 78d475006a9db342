"""The studio as an OpenEnv environment: one episode is one painting (plus up to `revisions`
revisions of it), judged by the studio's own pipeline and stored as a rollout.

The wire format is the published environment's, so its training script works unchanged:

- the action is `{"response": str}`, the model's raw reply (fenced or not): the code is
  extracted here, as for the studio's own trainer;
- `reset(subject=?, references=?, seed=?, return_image=?, run=?)` draws the task. The seed fixes
  the subject (when none is given) and the references the judge compares with, so every session
  of a GRPO group that resets with one seed is judged on one draw;
- `step` returns the reward (None when infrastructure failed: never a made-up 0) and the
  verdict's fields (`PaintingObservation`).

An episode goes through `painting.pipeline.paint_batch`, the path of a studio run: the gate in
this process, the render and the score on the Celery workers, so serving scales by adding render
and score workers. Every session runs its step in a thread of its own, so a GRPO group sent at
once renders in parallel on the workers. A client that goes away mid-step cancels the step
(`serving/asgi.py`): its renders are revoked and nothing is stored.
"""
from __future__ import annotations

import asyncio
import base64
import random
import threading
import uuid
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from openenv.core.env_server import Action, Environment, Observation, State
from pydantic import Field

from curation.models import Pool
from curation.selectors import group_references
from paintenv.extraction import is_keep_reply
from paintenv.prompts import SUBJECTS, SYSTEM_PROMPT, user_message
from paintenv.reward import Recipe
from painting.pipeline import JudgedSketch, PaintJob, Workers, paint_batch, render_png, render_seed
from serving import services
from serving.context import current_token
from training.models import Run
from training.recording import TurnOutcome, turn_feedback

MAX_REFERENCES = 16
MAX_SUBJECT_CHARS = 200
MAX_RUN_NAME_CHARS = 120


class PaintingAction(Action):
    # Typed loosely on purpose: a missing or non-string response gets the environment's own
    # error message (which names the field), not pydantic's bare "Invalid message".
    response: Any = Field(None, description="the model's whole reply: one p5.brush sketch, fenced or not",
                          json_schema_extra={"type": "string"})


class PaintingObservation(Observation):
    # reset
    prompt: str = ""
    system_prompt: str = ""
    task_id: str = ""
    subject: str = ""
    reference_ids: list[int] = Field(default_factory=list)
    # step
    gate_passed: bool = False
    violations: list[str] = Field(default_factory=list)
    js_errors: list[str] = Field(default_factory=list)
    length_score: float | None = None
    judge_score: float | None = None
    judged: bool = False
    judge_weight: float = 0.0
    quality_score: float | None = None
    quality_scored: bool = False
    render_unavailable: bool = False
    paint_fraction: float | None = None
    finished: bool = False
    feedback: str = ""
    breakdown: dict[str, Any] = Field(default_factory=dict)
    critique: str = ""
    revisions_left: int = 0
    image_png_base64: str | None = None
    # where the studio keeps it
    run: str = ""
    rollout_id: int | None = None


class PaintingState(State):
    task_id: str = ""
    submitted: bool = False
    revisions_used: int = 0


@dataclass(frozen=True)
class Served:
    """What `serve_env` serves: a frozen pool judged with one recipe."""

    pool_id: int
    recipe: Recipe
    revisions: int = 0
    render_size: int = 600
    render_deadline_s: float = 300.0
    score_deadline_s: float = 300.0

    def subjects(self) -> list[str]:
        pool = Pool.objects.get(id=self.pool_id)
        found = sorted(set(pool.members.filter(split="train").values_list("reference__subject", flat=True)) - {""})
        return found or [s.text for s in SUBJECTS]


@dataclass
class Episode:
    seed: int
    subject: str
    task_id: str
    reference_ids: list[int]
    return_image: bool
    run_name: str
    token: str
    chain: list[TurnOutcome]
    rollout_id: int | None = None
    run_id: int | None = None
    step: int | None = None

    @property
    def finished(self) -> bool:
        return bool(self.chain) and self.chain[-1].kept


class StudioEnvironment(Environment[PaintingAction, PaintingObservation, PaintingState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: Served, threads: Executor | None = None):
        super().__init__()
        self.served = served
        self.threads = threads  # where steps wait on the workers: one thread a session (None: asyncio's default)
        self.episode: Episode | None = None
        self._state = PaintingState()

    # The server awaits these in the session's own task: the work runs in a thread, and a
    # cancelled await (the client went away) tells that thread to revoke what it sent.
    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> PaintingObservation:
        token = current_token()
        return await asyncio.get_running_loop().run_in_executor(
            self.threads, lambda: self._reset(seed, episode_id, token, kwargs))

    async def step_async(self, action: PaintingAction, timeout_s: float | None = None, **kwargs: Any) -> PaintingObservation:
        cancel = threading.Event()
        try:
            return await asyncio.get_running_loop().run_in_executor(self.threads, lambda: self._step(action, cancel))
        except asyncio.CancelledError:
            cancel.set()
            raise

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> PaintingObservation:
        return self._reset(seed, episode_id, current_token(), kwargs)

    def step(self, action: PaintingAction, timeout_s: float | None = None, **kwargs: Any) -> PaintingObservation:
        return self._step(action, threading.Event())

    @property
    def state(self) -> PaintingState:
        return self._state

    # ------------------------------------------------------------------------------------
    def _reset(self, seed: int | None, episode_id: str | None, token: str | None, options: dict) -> PaintingObservation:
        if token is None:
            raise PermissionError("no valid bearer token")
        close_old_connections()
        try:
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                raise ValueError(f"seed must be a whole number 0 or more, not {seed!r}")
            seed = random.randrange(2**31) if seed is None else seed
            subject = self._subject(options.get("subject"), seed)
            reference_ids = self._references(options.get("references"), seed)
            run_name = options.get("run") or ""
            if not isinstance(run_name, str) or len(run_name) > MAX_RUN_NAME_CHARS:
                raise ValueError(f"run must be a name of at most {MAX_RUN_NAME_CHARS} characters")
            pool = Pool.objects.get(id=self.served.pool_id)
            task_id = f"{pool.label}/seed-{seed}"
            self.episode = Episode(seed=seed, subject=subject, task_id=task_id, reference_ids=reference_ids,
                                   return_image=bool(options.get("return_image")), run_name=run_name, token=token,
                                   chain=[])
            self._state = PaintingState(episode_id=episode_id or uuid.uuid4().hex, step_count=0, task_id=task_id)
            return PaintingObservation(
                prompt=user_message(subject), system_prompt=SYSTEM_PROMPT, task_id=task_id, subject=subject,
                reference_ids=reference_ids, judge_weight=self.served.recipe.w_judge,
                revisions_left=self.served.revisions, done=False, reward=None,
            )
        finally:
            close_old_connections()

    def _subject(self, subject: Any, seed: int) -> str:
        if subject is None or subject == "":
            return random.Random(f"subject/{seed}").choice(self.served.subjects())
        # The subject reaches the judge's prompt: one line of plain text, so a client cannot
        # write the judge a message of its own below it.
        if not isinstance(subject, str) or len(subject) > MAX_SUBJECT_CHARS or not subject.isprintable():
            raise ValueError(f"subject must be one line of text of at most {MAX_SUBJECT_CHARS} characters")
        return " ".join(subject.split())

    def _references(self, references: Any, seed: int) -> list[int]:
        """The references the judge compares with: drawn from the seed (half love, half okay,
        train split), `references` of them when it is a number, or exactly those ids."""
        recipe = self.served.recipe
        pool = Pool.objects.get(id=self.served.pool_id)
        if isinstance(references, list):
            if not references or len(references) > MAX_REFERENCES or not all(
                    isinstance(r, int) and not isinstance(r, bool) for r in references):
                raise ValueError(f"references must be 1 to {MAX_REFERENCES} reference ids, or how many to draw")
            allowed = set(pool.members.filter(split="train", reference_id__in=references)
                          .values_list("reference_id", flat=True))
            unknown = [r for r in references if r not in allowed]
            if unknown:
                raise ValueError(f"references {unknown} are not in the train split of pool {pool.label}")
            return list(references)
        count = recipe.references_per_group
        if references is not None:
            if not isinstance(references, int) or isinstance(references, bool) or not 1 <= references <= MAX_REFERENCES:
                raise ValueError(f"references must be 1 to {MAX_REFERENCES} reference ids, or how many to draw")
            count = references
        if not (recipe.w_judge > 0 and count):
            return []
        return [m.reference_id for m in group_references(pool, count=count, key=(seed,))]

    def _step(self, action: PaintingAction, cancel: threading.Event) -> PaintingObservation:
        episode = self.episode
        if episode is None:
            raise ValueError("reset before the first step")
        turn = len(episode.chain) + 1
        if episode.finished or turn > self.served.revisions + 1:
            raise ValueError("this episode is finished: reset for a new one")
        reply = action.response
        if not isinstance(reply, str):
            raise ValueError(f"the action needs 'response': the model's reply as a string, not {type(reply).__name__}")
        limit = settings.ENV_MAX_RESPONSE_CHARS
        if len(reply) > limit:
            raise ValueError(f"the response is {len(reply):,} characters; the limit is {limit:,}")
        close_old_connections()
        try:
            if turn > 1 and is_keep_reply(reply):
                painted, kept = episode.chain[-1].painted, True
            else:
                painted, kept = self._paint(episode, reply, turn, cancel), False
            if cancel.is_set():
                raise asyncio.CancelledError()  # the client left: nothing is stored
            revisions_left = 0 if kept else self.served.revisions + 1 - turn
            critique = turn_feedback(painted) if revisions_left else ""
            episode.chain.append(TurnOutcome(reply=reply, painted=painted, feedback=critique, kept=kept))
            if episode.run_id is None:
                run = services.external_run(pool=Pool.objects.get(id=self.served.pool_id), recipe=self.served.recipe,
                                            name=episode.run_name, fed_by=episode.token)
                episode.run_id, episode.step = run.id, services.episode_step(run=run, seed=episode.seed)
            run = Run.objects.get(id=episode.run_id)
            rollout = services.episode_record(
                run=run, step=episode.step, rollout_id=episode.rollout_id, subject=episode.subject,
                prompt=user_message(episode.subject), chain=episode.chain, reference_ids=episode.reference_ids,
                fed_by=episode.token)
            episode.rollout_id = rollout.id
            self._state = PaintingState(episode_id=self._state.episode_id, step_count=turn, task_id=episode.task_id,
                                        submitted=True, revisions_used=turn - 1)
            return self._observation(episode, painted, revisions_left, critique, run.name, rollout.id)
        finally:
            close_old_connections()

    def _paint(self, episode: Episode, reply: str, turn: int, cancel: threading.Event) -> JudgedSketch:
        served = self.served
        job = PaintJob(reply=reply, prompt=episode.subject, seed=render_seed(episode.seed, 0, turn - 1),
                       reference_ids=tuple(episode.reference_ids))
        batch = paint_batch([job], recipe=served.recipe, pool_id=served.pool_id, size=served.render_size,
                            executor=Workers(cancel=cancel), render_deadline_s=served.render_deadline_s,
                            score_deadline_s=served.score_deadline_s, check_every=settings.DETERMINISM_EVERY)
        return batch.paintings[0]

    def _observation(self, episode: Episode, painted: JudgedSketch, revisions_left: int, critique: str,
                     run_name: str, rollout_id: int) -> PaintingObservation:
        recipe, parts, render = self.served.recipe, painted.parts, painted.render or {}
        judge = (painted.score or {}).get("judge") or {}
        quality = parts.get("quality")
        image = None
        if episode.return_image and render:
            png = render_png(render)
            image = base64.b64encode(png).decode() if png else None
        finished = revisions_left == 0
        return PaintingObservation(
            task_id=episode.task_id, subject=episode.subject, reference_ids=episode.reference_ids,
            gate_passed=painted.gate_passed, violations=painted.violations,
            js_errors=[_js_error(e) for e in render.get("errors", [])],
            length_score=parts.get("length"), judge_score=parts.get("judge"), judged=parts.get("judge") is not None,
            judge_weight=recipe.w_judge, quality_score=quality, quality_scored=quality is not None,
            render_unavailable=painted.failure.startswith("render"), paint_fraction=render.get("paint_fraction"),
            finished=finished, feedback=_verdict(painted), critique=critique, revisions_left=revisions_left,
            breakdown={
                "components": {k: parts.get(k) for k in ("gate", "length", "judge", "quality")},
                "weights": {"gate": recipe.w_gate, "length": recipe.w_length, "judge": recipe.w_judge,
                            "quality": recipe.w_quality},
                "gate": painted.painting.gate.to_dict() if painted.painting else {},
                "judge": {"score": judge.get("score"),
                          "comparisons": [{"reference": r.get("reference_id"), "score": r.get("score")}
                                          for r in judge.get("references", [])]},
                "unavailable": parts.get("unavailable", []),
            },
            image_png_base64=image, run=run_name, rollout_id=rollout_id,
            reward=painted.reward, done=finished,
        )


def _js_error(error: dict) -> str:
    where = f"{error.get('line')}:{error.get('col')} " if error.get("line") is not None else ""
    return f"{where}{error.get('message', '')}"


def _verdict(painted: JudgedSketch) -> str:
    """One line on how the sketch came out, for a person reading the client's log."""
    if painted.failure:
        return f"no reward: infrastructure failed ({painted.failure})"
    if not painted.gate_passed:
        return f"refused by the gate: {', '.join(painted.violations)} (reward 0)"
    if not painted.passed:
        return f"refused at render: {', '.join(painted.violations)} (reward 0)"
    return f"painted; reward {painted.reward:.3f}"
