"""The contract with the gate and the renderer: the code names a rejection may carry, and
the `Case` record that says which of them count for one hostile sketch."""
from __future__ import annotations

from dataclasses import dataclass

# static gate
TEXT_LABEL = "text_label"
BARE = "bare_primitives"
EXTERNAL = "external_access"
FORBIDDEN = "forbidden_api"
UNKNOWN_BRUSH = "unknown_brush_method"
DISALLOWED_BRUSH = "disallowed_brush_method"
TRUNCATED = "truncated"
STATIC_CODES = frozenset({TEXT_LABEL, BARE, EXTERNAL, FORBIDDEN, UNKNOWN_BRUSH,
                          DISALLOWED_BRUSH, TRUNCATED})

# renderer (without the gate)
RT_BARE = "runtime_bare_primitive"
RT_TEXT = "runtime_text"
RT_FORBIDDEN = "runtime_forbidden_api"
RT_BRUSH = "runtime_disallowed_brush"
RENDER_ERROR = "render_error"
RENDER_TIMEOUT = "render_timeout"
CANVAS_TOO_LARGE = "canvas_too_large"
CANVAS_SWAPPED = "canvas_swapped"
RUNTIME_CODES = frozenset({RT_BARE, RT_TEXT, RT_FORBIDDEN, RT_BRUSH, RENDER_ERROR,
                           RENDER_TIMEOUT, CANVAS_TOO_LARGE, CANVAS_SWAPPED})


@dataclass(frozen=True)
class Case:
    id: str  # "<construct>__<wrapper>__<variant>", stable
    construct: str
    wrapper: str
    code: str
    static_codes: frozenset[str]  # the gate must report at least one of these
    runtime_codes: frozenset[str]  # the renderer alone must report at least one of these
    variant: str = ""  # which form of the construct
    form: str = ""  # which sub-form of the wrapper (e.g. "setTimeout", "globalThis")

    def __repr__(self) -> str:  # pytest ids and failure messages stay short
        return f"Case({self.id})"
