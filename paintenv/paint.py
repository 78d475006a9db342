"""One sketch, judged whole: static gate, then (optionally) the sandboxed render.

The CLI, the `render_sketch` task and the trainer's reward function all go through
`paint_source` / `paint_reply`, so a sketch gets the same verdict wherever it is judged.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from paintenv.determinism import compare_paintings
from paintenv.gate import GateVerdict, gate_reply, gate_source
from paintenv.length import painting_tokens, score_tokens
from paintenv.render_result import Render, RenderUnavailable
from paintenv.renderer import Renderer
from paintenv.sandbox import NONDETERMINISTIC, PAINTED_TEXT
from paintenv.text_check import TextCheck, TextCheckUnavailable, get_text_check

# Violation codes that leave nothing to render.
UNRENDERABLE = frozenset({"no_sketch_in_response", "truncated", "too_long", "gate_error"})


@dataclass
class Painting:
    code: str | None
    gate: GateVerdict
    render: Render | None  # None when the gate failed and rendering was skipped
    length_score: float | None  # of `painting_tokens`, at the default thresholds
    # Tokens of painting code (length.py): of the code that ran when rendered ("render"),
    # else by the static rules alone ("static"); None when the render could not say.
    painting_tokens: int | None = None
    length_from: str = "static"

    @property
    def violations(self) -> list[str]:
        codes = set(self.gate.codes)
        if self.render is not None:
            codes.update(self.render.violations)
        return sorted(codes)

    @property
    def passed(self) -> bool:
        return self.gate.passed and self.render is not None and self.render.passed

    @property
    def png(self) -> bytes | None:
        return self.render.png if self.render else None

    def to_dict(self, include_png: bool = False) -> dict[str, Any]:
        render = self.render
        errors = [
            {"message": e.message, "line": e.line, "col": e.col} for e in (render.errors if render else [])
        ]
        return {
            "passed": self.passed,
            "violations": self.violations,
            "gate": self.gate.to_dict(),
            "rendered": bool(render and render.rendered),
            "paint_fraction": render.paint_fraction if render else None,
            "errors": errors,
            "brush_calls": render.brush_calls if render else {},
            "bare_calls": render.bare_calls if render else {},
            "blocked": render.blocked if render else [],
            "elapsed_ms": render.elapsed_ms if render else 0.0,
            "timings": render.timings if render else {},
            "size": render.size if render else None,
            "seed": render.seed if render else None,
            "length_score": self.length_score,
            "painting_tokens": self.painting_tokens,
            "length_from": self.length_from,
            "findings": render.findings if render else {},
            "png": base64.b64encode(self.png).decode("ascii") if include_png and self.png else None,
        }


def paint_source(
    code: str,
    *,
    renderer: Renderer | None,
    seed: int = 0,
    size: int = 600,
    strictness: str = "allowlist",
    render_failed_gate: bool = False,
    check_determinism: bool = False,
    text_check: TextCheck | None = None,
    twin: bool = False,
) -> Painting:
    """Gate `code`, then render it when it passed (or always, if asked and renderable).

    `renderer=None` gives the static verdict alone. A render raises RenderUnavailable only
    for infrastructure failure; a bad sketch is always a verdict. A painting that passed is
    read for writing (`text_check`, this process's by default: text_check.py), and with
    `check_determinism` rendered once more with the same seed (determinism.py), on a page
    whose history differs from the first's (`twin`: this render is that second one).
    """
    verdict = gate_source(code, strictness=strictness)
    return _finish(code, verdict, renderer, seed, size, render_failed_gate, check_determinism, text_check, twin)


def paint_reply(
    reply: str,
    *,
    renderer: Renderer | None,
    seed: int = 0,
    size: int = 600,
    strictness: str = "allowlist",
    render_failed_gate: bool = False,
    check_determinism: bool = False,
    text_check: TextCheck | None = None,
    twin: bool = False,
) -> Painting:
    """Like paint_source, for a model's whole reply (the sketch is extracted first)."""
    code, verdict = gate_reply(reply, strictness=strictness)
    return _finish(code, verdict, renderer, seed, size, render_failed_gate, check_determinism, text_check, twin)


def _finish(
    code: str | None, verdict: GateVerdict, renderer: Renderer | None, seed: int, size: int, always: bool,
    check_determinism: bool, text_check: TextCheck | None, twin: bool = False,
) -> Painting:
    render = None
    renderable = code is not None and not (set(verdict.codes) & UNRENDERABLE)
    if renderer is not None and renderable and (verdict.passed or always):
        render = renderer.render(code, seed=seed, size=size, twin=twin)
        if render.passed:
            check_painted_text(render, text_check or get_text_check())
        if check_determinism and render.passed:
            again = renderer.render(code, seed=seed, size=size, twin=True)
            comparison = compare_paintings(render.png, render.violations, again.png, again.violations)
            render.timings["determinism_ms"] = round(again.elapsed_ms, 1)
            render.findings["determinism"] = comparison.to_dict()
            if not comparison.same:
                render.violations.append(NONDETERMINISTIC)
    if render is None:
        tokens, source = painting_tokens(code or ""), "static"
    else:
        executed = render.executed
        tokens, source = (None if executed is None else painting_tokens(code or "", executed)), "render"
    return Painting(code=code, gate=verdict, render=render, painting_tokens=tokens, length_from=source,
                    length_score=None if tokens is None else score_tokens(tokens))


def check_painted_text(render: Render, text_check: TextCheck) -> None:
    """Read a painting for writing; legible words fail it as `painted_text`. A text check
    that cannot run is infrastructure (RenderUnavailable), never a verdict."""
    try:
        found = text_check.find(render.png)
    except TextCheckUnavailable as exc:
        raise RenderUnavailable(f"the painted-text check cannot run: {exc}") from exc
    render.timings["text_check_ms"] = round(found.elapsed_ms, 1)
    render.findings["text"] = found.to_dict()
    if found.legible:
        render.violations.append(PAINTED_TEXT)
