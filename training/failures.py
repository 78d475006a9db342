"""How a painting that did not pass failed, in words: the stage that failed it and a two-word
label. A leaf: the pages, the selectors and the services all name failures the same way."""
from __future__ import annotations

from paintenv.sandbox import BLANK_CANVAS, RENDER_TIMEOUT, RUNTIME_CODES


def failure_stage(violations: list[str]) -> str:
    """Where a painting that did not pass failed: "gate" when the static gate found something
    (the first stage), else "render" (the verdict codes of the render itself)."""
    return "gate" if any(code not in RUNTIME_CODES for code in violations or []) else "render"


def failure_label(violations: list[str]) -> str:
    """A failed painting in two words; a blank canvas only when nothing else went wrong (an
    error that stopped the sketch leaves a blank canvas too)."""
    if RENDER_TIMEOUT in violations:
        return "Timed out"
    if failure_stage(violations) == "gate":
        return "Gate failed"
    return "Blank painting" if set(violations) == {BLANK_CANVAS} else "Render failed"
