"""Rewards from a remote OpenEnv environment (the run argument `environment_url`): another
studio's `manage.py serve_env`, or the published environment's Space.

Each completion is played as one episode, all of a step at once, each in its own session:
`reset(seed=…, subject=…, run=…, return_image=True)` then `step({"response": reply})`. A GRPO
group resets with one seed, so the remote judges the whole group on one draw of references.
The observation becomes a `RemoteJudged`, which the reward function stores like a sketch it
judged itself (code, painting, parts, verdict).

The None rules hold across the wire: an episode the remote could not judge (`render_unavailable`,
a weighted judge that did not answer (`judged` false), a weighted scorer that did not
(`quality_scored` false)), or one lost on the way (the connection, a timeout), is None with the
reason, even where the remote reported a number.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import os
from dataclasses import dataclass, field, replace
from typing import Any

from openenv import GenericEnvClient

from paintapp.lib.storage import store_content_addressed
from paintenv.paint import Painting, paint_reply
from painting.pipeline import Batch, PaintJob

# How long one episode may take beyond the run's render and score deadlines (connecting, the
# remote's queues).
MARGIN_S = 60.0


@dataclass
class RemoteJudged:
    """One completion as the remote environment judged it, shaped as the reward function reads
    a `painting.pipeline.JudgedSketch`: gate and verdict are the remote's, `painting` is the
    local read of the reply (its extracted code and gate statistics, for the rollout page)."""

    job: PaintJob
    painting: Painting | None
    gate_passed: bool = False
    passed: bool = False
    violations: list[str] = field(default_factory=list)
    render: dict[str, Any] | None = None
    score: dict[str, Any] | None = None
    reward: float | None = None
    parts: dict[str, Any] = field(default_factory=dict)
    failure: str = ""

    @property
    def code(self) -> str:
        return (self.painting.code if self.painting else None) or ""


class RemoteEnvironment:
    def __init__(self, url: str, *, token_env: str, run_name: str, timeout_s: float):
        self.url = url
        token = os.environ.get(token_env, "")
        self.headers = {"Authorization": f"Bearer {token}"} if token else None
        self.run_name = run_name
        self.timeout_s = timeout_s

    def judge(self, jobs: list[PaintJob]) -> Batch:
        """Play every job at once, each resetting with its `seed` (one per GRPO group); never raises."""
        return Batch(paintings=asyncio.run(self._play_all(jobs)))

    async def _play_all(self, jobs: list[PaintJob]) -> list[RemoteJudged]:
        return list(await asyncio.gather(*(self._play(job) for job in jobs)))

    async def _play(self, job: PaintJob) -> RemoteJudged:
        judged = RemoteJudged(job=job, painting=paint_reply(job.reply or "", renderer=None))
        try:
            async with GenericEnvClient(base_url=self.url, headers=self.headers,
                                        message_timeout_s=self.timeout_s) as env:
                task = (await env.reset(seed=job.seed, subject=job.prompt, run=self.run_name,
                                        return_image=True)).observation
                judged.job = replace(job, reference_ids=tuple(task.get("reference_ids") or ()))
                result = await env.step({"response": job.reply or ""})
        except Exception as exc:  # noqa: BLE001 - the remote or the way to it failed: no reward
            judged.failure = f"remote environment: {type(exc).__name__}: {exc}"[:500]
            judged.parts = {"unavailable": [judged.failure]}
            return judged
        return observed(judged, result.observation, result.reward)


def observed(judged: RemoteJudged, seen: dict[str, Any], reward: float | None) -> RemoteJudged:
    """Fill `judged` from a step's observation and reward, by the None rules."""
    breakdown = seen.get("breakdown") or {}
    components = breakdown.get("components") or {}
    weights = breakdown.get("weights") or {}
    judged.gate_passed = bool(seen.get("gate_passed"))
    judged.violations = list(seen.get("violations") or [])
    judged.passed = judged.gate_passed and not judged.violations and not seen.get("render_unavailable")
    png = _png(seen.get("image_png_base64"))
    judged.render = {
        "passed": judged.passed, "violations": judged.violations, "paint_fraction": seen.get("paint_fraction"),
        "errors": [{"message": e} for e in seen.get("js_errors") or []], "timings": {},
        "png_path": store_content_addressed(png, folder="renders") if png else None,
    }
    judge = breakdown.get("judge") or {}
    judged.score = {
        "judge": {"score": seen.get("judge_score"),
                  "references": [{"reference_id": c.get("reference"), "score": c.get("score"), "orders": []}
                                 for c in judge.get("comparisons") or []]} if seen.get("judged") else None,
        "quality": seen.get("quality_score"), "reasons": {},
    }
    judged.parts = {k: components.get(k) for k in ("gate", "length", "judge", "quality")}
    lost = []
    if seen.get("render_unavailable"):
        lost.append("render unavailable")
    if judged.passed and (seen.get("judge_weight") or weights.get("judge")) and not seen.get("judged"):
        lost.append("the judge did not answer")
    if judged.passed and weights.get("quality") and not seen.get("quality_scored"):
        lost.append("the quality scorer did not answer")
    if reward is None and not lost:
        lost.append("no reward")
    if lost:
        judged.failure = "remote environment: " + "; ".join(lost)
        judged.parts["unavailable"] = [judged.failure]
        judged.reward = None
    else:
        judged.reward = float(reward)
    return judged


def _png(encoded: Any) -> bytes | None:
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if data.startswith(b"\x89PNG\r\n\x1a\n") else None
