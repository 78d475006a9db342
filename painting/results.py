"""What crosses the task boundary: the shapes of a render's and a score's results.

Celery carries them as JSON, so they stay dicts on the wire; these TypedDicts name every key
the sender may read, for the workers that build them (painting.services) and the code that
reads them (painting.pipeline, the trainer, the editor), and for a type checker between them.
"""
from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class RenderResult(TypedDict):
    """`render_sketch`'s result: `paintenv.paint.Painting.to_dict()` plus where the PNG is."""

    passed: bool
    violations: list[str]  # the verdict codes (paintenv/sandbox.py), gate and render together
    gate: dict[str, Any]  # the static verdict (paintenv.gate.GateVerdict.to_dict())
    rendered: bool
    paint_fraction: float | None
    errors: list[dict[str, Any]]  # the sketch's JavaScript errors: message, line, col
    brush_calls: dict[str, int]
    bare_calls: dict[str, int]
    blocked: list[str]
    elapsed_ms: float
    timings: dict[str, float]
    size: int | None
    seed: int | None
    length_score: float | None  # of painting_tokens, at the default thresholds
    painting_tokens: NotRequired[int | None]  # tokens of painting code (paintenv/length.py)
    length_from: NotRequired[str]  # "render": the code that ran; "static": not rendered
    findings: dict[str, Any]  # what the checks found: "text" (words read), "determinism"
    png_path: NotRequired[str | None]  # the stored PNG (content-addressed), None when nothing was painted
    png_sha256: NotRequired[str | None]


class GivenPainting(TypedDict):
    """A painting that exists already (a job's `png`): never rendered, only read for writing."""

    passed: bool
    violations: list[str]
    png: bytes
    findings: dict[str, Any]


class ScoreResult(TypedDict):
    """`score_painting`'s result: the judge's verdicts and the quality score, each None with a
    reason in `reasons` when its backend failed (the reward is then None, never 0)."""

    judge: dict[str, Any] | None  # paintenv.judges.JudgeOutcome.to_dict(): score, per-reference orders
    quality: float | None
    reasons: dict[str, str]
