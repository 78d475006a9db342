"""What a render gives back (`Render`), and how the page's reading becomes one.

Failures of the SKETCH are verdicts in `Render.violations` (see sandbox.py for the codes).
Only failures of the INFRASTRUCTURE raise `RenderUnavailable`.
"""
from __future__ import annotations

import base64
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from paintenv.image import BLANK_THRESHOLD, paint_fraction
from paintenv.render_config import REFERENCE_SIZE
from paintenv.sandbox import (
    BLANK_CANVAS,
    CANVAS_SWAPPED,
    CANVAS_TOO_LARGE,
    RENDER_ERROR,
    RUNTIME_CANVAS_SIZE,
    PageReading,
    code_for_denied,
    counts,
    png_size,
)

__all__ = ["Render", "RenderError", "RenderUnavailable", "failed_render", "render_from_reading"]


class RenderUnavailable(Exception):
    """The renderer cannot render at all (infrastructure), never a verdict on a sketch."""


@dataclass(frozen=True)
class RenderError:
    message: str
    line: int | None = None  # 1-based line in the sketch source
    col: int | None = None  # 1-based column in the sketch source


@dataclass
class Render:
    png: bytes | None
    violations: list[str] = field(default_factory=list)
    errors: list[RenderError] = field(default_factory=list)
    brush_calls: dict[str, int] = field(default_factory=dict)
    bare_calls: dict[str, int] = field(default_factory=dict)
    paint_fraction: float = 0.0
    elapsed_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    size: int = REFERENCE_SIZE
    seed: int = 0
    # What the page tried and the sandbox refused (aborted requests, CSP reports).
    blocked: list[str] = field(default_factory=list)
    # What the checks on the finished painting found (painting.py): "text", the words the
    # painted-text check read; "determinism", how a second render with the same seed compared.
    findings: dict[str, Any] = field(default_factory=dict)
    # The ranges of the sketch's source that ran (coverage.py), for the length part; None
    # when the page could not say.
    executed: list[tuple[int, int]] | None = None

    @property
    def rendered(self) -> bool:
        return self.png is not None

    @property
    def passed(self) -> bool:
        return self.png is not None and not self.violations

    def to_dict(self, include_png: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d["png"] = base64.b64encode(self.png).decode("ascii") if (include_png and self.png) else None
        d["passed"] = self.passed
        return d


def failed_render(code: str, message: str, *, size: int, seed: int) -> Render:
    """A render that produced nothing: one violation code and why."""
    return Render(png=None, violations=[code], errors=[RenderError(message)], size=size, seed=seed)


def render_from_reading(reading: PageReading, *, size: int, seed: int, max_pixels: int,
                        timings: dict[str, float]) -> Render:
    """Decide the verdict from what was read: the harness's raw counts, the canvas p5
    made (still in the page, at the size it was made), and its pixels. Page-clock spans
    are added to `timings`."""
    data = reading.result
    if data is None:
        # The harness always writes its result before the render promise resolves;
        # a page that resolved without one was tampered with by the sketch.
        return failed_render(RENDER_ERROR, "The render page returned no result.", size=size, seed=seed)
    errors = [
        RenderError(
            str(e.get("message", ""))[:600], _int_or_none(e.get("line")), _int_or_none(e.get("col"))
        )
        for e in (data.get("errors") or [])[:20]
        if isinstance(e, dict)
    ]
    denied = counts(data.get("denied"))
    violations = sorted({code_for_denied(name) for name in denied})
    png: bytes | None = None
    made_w = _int_or_none(data.get("canvasWidth")) or 0
    made_h = _int_or_none(data.get("canvasHeight")) or 0
    if reading.width * reading.height > max_pixels:
        violations.append(CANVAS_TOO_LARGE)
    elif made_w and (not reading.connected or (reading.width, reading.height) != (made_w, made_h)):
        # The canvas p5 made is gone from the page, or not the size it was made at.
        violations.append(CANVAS_SWAPPED)
    elif reading.png is not None and png_size(reading.png) == (reading.width, reading.height):
        png = reading.png
    elif reading.png is not None:
        violations.append(CANVAS_SWAPPED)
    if png is not None and (reading.width, reading.height) != (size, size):
        violations.append(RUNTIME_CANVAS_SIZE)  # the published 600 units are `size` pixels wide
    if png is None and not errors and not violations:
        errors.append(RenderError(reading.error or "The sketch produced no canvas."))
    if errors or data.get("status") == "error":
        violations.append(RENDER_ERROR)
    fraction = 0.0
    if png is not None:
        t = time.perf_counter()
        fraction = paint_fraction(png)
        timings["measure_ms"] = round((time.perf_counter() - t) * 1000, 1)
        if fraction < BLANK_THRESHOLD:
            violations.append(BLANK_CANVAS)
    raw_marks = data.get("marks") if isinstance(data.get("marks"), dict) else {}
    marks = {k: float(v) for k, v in raw_marks.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def span(a: str, b: str) -> float | None:
        return round(marks[b] - marks[a], 1) if a in marks and b in marks else None

    # Page-clock spans: draw = sketch load + setup + frames; flush = GPU finish.
    for key, a, b in (
        ("draw_ms", "run", "done"), ("sketch_ms", "run", "sketchLoaded"),
        ("setup_ms", "setupStart", "setupEnd"), ("frames_ms", "setupEnd", "done"),
        ("gpu_flush_ms", "done", "flushed"),
    ):
        value = span(a, b)
        if value is not None:
            timings[key] = value
    blocked = [f"csp {c}"[:200] for c in (data.get("csp") or [])[:50] if isinstance(c, str)]
    return Render(
        png=png,
        violations=list(dict.fromkeys(violations)),
        errors=errors,
        brush_calls=counts(data.get("brush")),
        bare_calls=denied,
        paint_fraction=round(fraction, 6),
        size=size,
        seed=seed,
        blocked=blocked,
    )


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
