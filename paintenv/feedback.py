"""What the model is told after a turn: how its sketch came out, and the chat for the next turn.

A revision turn (issue #16) shows the policy its own result and asks for a new complete
sketch, or KEEP_REPLY alone when it would not change the painting (then the painting stands:
a small model cannot copy a long sketch token for token, so without it every good painting
would be re-sampled, and most often come out worse). `feedback_text` writes that message from what the studio already knows about a
painted sketch: the gate's violations (line:col and the offending source line), the
render's runtime errors and refusals, the paint fraction with a coverage note, the judge's
verdict per reference in both presentation orders (with its reasons when it gives them),
and the reward with its parts. `revision_messages` appends the reply and the feedback to
the chat, with the painting as an image part for a vision-language model.

Decisions:

* Nothing that would let the policy forge a reward is shown: the gate's rule tables, the
  coverage band's numbers, reference ids or file names, the recipe's weights, and any text
  of an infrastructure failure (a judge's error or an unavailable part's reason can name
  endpoints and hosts) stay out. Judge reasons are shown only for answered verdicts.
* Deterministic: the same inputs give the same text (no clock, no randomness, fixed order).
* Bounded: at most MAX_GATE_LINES violations, MAX_ERROR_LINES runtime errors and
  MAX_REFERENCE_LINES references are listed, the rest counted; every quoted line, message
  and reason is cut to a fixed length, so the text stays under MAX_FEEDBACK_CHARS.
* The trainer's pipeline holds a turn as records (the render task's dict, the score task's
  dict, the reward and its parts); `turn_from_records` rebuilds the typed inputs from
  them so both paths give the same text.
"""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from PIL import Image

from paintenv.extraction import KEEP_REPLY
from paintenv.gate import GateVerdict
from paintenv.image import BALANCED_COVERAGE, BLANK_THRESHOLD, paint_fraction
from paintenv.judges import JudgeResult, OrderVerdict, ReferenceVerdict
from paintenv.paint import Painting
from paintenv.render_result import Render, RenderError
from paintenv.reward import RewardBreakdown
from paintenv.sandbox import (
    BLANK_CANVAS,
    CANVAS_SWAPPED,
    CANVAS_TOO_LARGE,
    NONDETERMINISTIC,
    PAINTED_TEXT,
    RENDER_TIMEOUT,
    RUNTIME_BARE_PRIMITIVE,
    RUNTIME_CANVAS_SIZE,
    RUNTIME_DISALLOWED_BRUSH,
    RUNTIME_FORBIDDEN_API,
    RUNTIME_TEXT,
    code_for_denied,
)

__all__ = [
    "MAX_FEEDBACK_CHARS",
    "REVISE_INSTRUCTION",
    "Turn",
    "feedback_text",
    "revision_messages",
    "turn_from_records",
]

MAX_GATE_LINES = 8
MAX_ERROR_LINES = 5
MAX_REFERENCE_LINES = 8
MAX_NAMES = 6  # names refused at run time, per kind
MAX_MESSAGE_CHARS = 200
MAX_SOURCE_CHARS = 120
MAX_REASON_CHARS = 240
# Every section at its caps (see test_it_stays_within_its_length_bound_on_the_worst_input).
MAX_FEEDBACK_CHARS = 8000

REVISE_INSTRUCTION = (
    "Write a new, complete sketch of the same subject that fixes any problem above and paints "
    "a better watercolour. Answer with exactly one ```js fenced code block containing the whole "
    f"sketch, and no other text. If you would not change the painting, answer {KEEP_REPLY} alone "
    "instead: it then stands as your final painting."
)

# The render's refusals in plain words; the names refused follow where the page counted them.
_RUNTIME_WORDS = {
    RUNTIME_BARE_PRIMITIVE: "At run time it drew with p5 itself instead of the brush",
    RUNTIME_TEXT: "At run time it tried to draw text",
    RUNTIME_FORBIDDEN_API: "At run time it used names outside the allowed API",
    RUNTIME_DISALLOWED_BRUSH: "At run time it called brush methods that are not allowed",
    RENDER_TIMEOUT: "It ran past the time limit and was stopped",
    BLANK_CANVAS: "The canvas came out blank",
    CANVAS_TOO_LARGE: "Its canvas was larger than allowed",
    CANVAS_SWAPPED: "The canvas it painted on was not the one createCanvas made",
    RUNTIME_CANVAS_SIZE: "Its canvas was not the published 600 x 600 (createCanvas(600, 600, WEBGL), made once)",
    PAINTED_TEXT: "The painting shows writing (letters, characters, numbers or grade symbols), which is refused: paint the subject, not words",
    NONDETERMINISTIC: ("Painted twice with the same seed it came out different: a painting may depend on "
                       "randomSeed and noiseSeed only"),
}


@dataclass(frozen=True)
class Turn:
    """One turn's outcome: the sketch's painting (gate, and render when it ran), the
    judge's verdicts when it was judged, and the reward when one was computed."""

    painting: Painting
    judge: JudgeResult | None = None
    reward: RewardBreakdown | None = None


def feedback_text(turn: Turn) -> str:
    """The user message that follows the model's sketch: how it came out, then the ask."""
    painting = turn.painting
    sections = [_gate_section(painting.code, painting.gate, rendered=painting.render is not None)]
    if painting.render is not None:
        sections += [_render_section(painting.code, painting.render), _paint_section(painting.render)]
    if turn.judge is not None and painting.passed:
        sections.append(_judge_section(turn.judge))
    if turn.reward is not None:
        sections.append(_reward_section(turn.reward))
    sections.append(REVISE_INSTRUCTION)
    return "\n\n".join(s for s in sections if s)


def revision_messages(
    messages: Sequence[Mapping[str, Any]], reply: str, feedback: str, *, painting_png: bytes | None = None
) -> list[dict[str, Any]]:
    """The chat for the next turn: `messages` + the assistant's `reply` + the feedback.

    With `painting_png` (a vision-language base model, and a painting exists) the feedback
    message's content is a list of parts, the painting first as `{"type": "image", "image":
    PIL.Image}` and then `{"type": "text", "text": ...}`: the structured form transformers'
    processors read in apply_chat_template and TRL keeps as is (an image part that already
    holds its image). Without it the content is the plain text. `messages` is not changed.
    """
    content: str | list[dict[str, Any]] = feedback
    if painting_png is not None:
        with Image.open(io.BytesIO(painting_png)) as img:
            image = img.convert("RGB")
        content = [{"type": "image", "image": image}, {"type": "text", "text": feedback}]
    return [
        *(dict(m) for m in messages),
        {"role": "assistant", "content": reply},
        {"role": "user", "content": content},
    ]


def turn_from_records(
    painting: Painting, *, render: Mapping[str, Any] | None, score: Mapping[str, Any] | None,
    reward: float | None, parts: Mapping[str, Any] | None,
) -> Turn:
    """A Turn from what the pipeline keeps: the in-process gate verdict (`painting`), the
    render task's dict (Painting.to_dict), the score task's dict (its "judge" is
    JudgeResult.to_dict) and the reward with its parts (RewardBreakdown.to_dict less the reward)."""
    rendered = painting.render
    if render is not None and rendered is None:
        gate_codes = set(painting.gate.codes)
        png = render.get("png") if isinstance(render.get("png"), bytes) else None
        fraction = render.get("paint_fraction")
        if fraction is None and png:  # a painting given as a PNG: measured here
            fraction = paint_fraction(png)
        if png is None and render.get("rendered"):
            png = b""  # rendered, its PNG stored elsewhere: only that it rendered counts here
        rendered = Render(
            png=png,
            violations=[c for c in render.get("violations", []) if c not in gate_codes],
            errors=[RenderError(e.get("message", ""), e.get("line"), e.get("col")) for e in render.get("errors", [])],
            bare_calls=dict(render.get("bare_calls") or {}),
            paint_fraction=fraction or 0.0,
        )
    judge = None
    judged = (score or {}).get("judge")
    if judged:
        judge = JudgeResult(
            score=judged.get("score"),
            references=[
                ReferenceVerdict(r.get("reference_id"), orders=[OrderVerdict(**o) for o in r.get("orders", [])])
                for r in judged.get("references", [])
            ],
        )
    breakdown = None
    if parts is not None:
        known = ("gate", "length", "judge", "quality", "unavailable")
        breakdown = RewardBreakdown(reward=reward, **{k: parts[k] for k in known if k in parts})
    return Turn(
        painting=_measured(replace(painting, render=rendered), render),
        judge=judge, reward=breakdown,
    )


def _measured(painting: Painting, render: Mapping[str, Any] | None) -> Painting:
    """The painting with the render's length, where the render task measured one."""
    if render is None or render.get("length_from") != "render":
        return painting
    return replace(painting, painting_tokens=render.get("painting_tokens"), length_from="render",
                   length_score=render.get("length_score"))


# ---------------------------------------------------------------------------------------
# Sections


def _gate_section(code: str | None, gate: GateVerdict, *, rendered: bool) -> str:
    if gate.passed:
        return "The static check passed."
    total = max(len(gate.violations), sum((gate.stats or {}).get("violation_counts", {}).values()))
    outcome = "" if rendered else ", so it was not painted"  # the editor renders refused sketches too
    lines = [f"The static check refused the sketch{outcome} ({_count(total, 'problem')}):"]
    for violation in gate.violations[:MAX_GATE_LINES]:
        lines += _located(code, violation.line, violation.col, violation.message)
    lines += _more(total - min(len(gate.violations), MAX_GATE_LINES), "problem")
    return "\n".join(lines)


def _render_section(code: str | None, render: Render) -> str:
    lines: list[str] = []
    if render.errors:
        lines.append(f"When it ran it raised {_count(len(render.errors), 'error')}:")
        for error in render.errors[:MAX_ERROR_LINES]:
            lines += _located(code, error.line, error.col, error.message)
        lines += _more(len(render.errors) - MAX_ERROR_LINES, "error")
    names = _refused_names(render.bare_calls)
    for violation in render.violations:
        words = _RUNTIME_WORDS.get(violation)
        if words is None:  # render_error: the errors above say it
            continue
        shown = names.get(violation, [])
        if violation == PAINTED_TEXT:
            found = render.findings.get("text", {})  # where the writing is; a render before round three read words
            shown = list(found.get("where", [])) or [repr(w) for w in found.get("words", [])[:5]]
        lines.append(f"{words}: {', '.join(shown)}." if shown else f"{words}.")
    if not lines:
        return "It ran without errors."
    return "\n".join(lines)


def _paint_section(render: Render) -> str:
    if render.png is None:
        return ""
    share = render.paint_fraction
    low, high = BALANCED_COVERAGE
    if share < BLANK_THRESHOLD:
        note = "blank: nothing visible was painted"
    elif share < low:
        note = "near-empty: paint the subject larger, with more washes"
    elif share > high:
        note = "overfilled: leave more bare paper round the subject"
    else:
        note = "a balanced share of the sheet"
    return f"Paint covers {share:.1%} of the sheet: {note}."


def _judge_section(judge: JudgeResult) -> str:
    references = judge.references
    lines = [f"The judge compared your painting with {_count(len(references), 'reference watercolour')}, "
             "each once with yours shown first and once with yours shown second:"]
    for number, reference in enumerate(references[:MAX_REFERENCE_LINES], start=1):
        lines.append(f"- reference {number}: {_orders(reference.orders)}")
        for order in reference.orders:
            reason = _clip(" ".join(order.reason.split()), MAX_REASON_CHARS)
            if order.p_candidate is not None and reason:
                lines.append(f'    judge, yours {"first" if order.candidate_first else "second"}: "{reason}"')
    lines += _more(len(references) - MAX_REFERENCE_LINES, "reference")
    if judge.score is not None:
        lines.append(f"Judge score: {judge.score:.2f} (1 = preferred every time).")
    return "\n".join(lines)


def _orders(orders: Sequence[OrderVerdict]) -> str:
    parts = []
    for order in orders:
        where = "yours first" if order.candidate_first else "yours second"
        parts.append(f"{where} {_outcome(order.p_candidate)}")
    return "; ".join(parts) if parts else "no verdict"


def _outcome(p: float | None) -> str:
    if p is None:
        return "no verdict"
    if p == 1.0:
        return "won"
    if p == 0.0:
        return "lost"
    return f"{'won' if p > 0.5 else 'lost' if p < 0.5 else 'tied'} (P = {p:.2f})"


def _reward_section(reward: RewardBreakdown) -> str:
    if reward.reward is None:
        return "The reward could not be computed this time (a scorer did not answer)."
    parts = [f"gate {'passed' if reward.gate else 'failed'}"]
    for name in ("length", "judge", "quality"):
        value = getattr(reward, name)
        if value is not None:
            parts.append(f"{name} {value:.2f}")
    return f"Reward: {reward.reward:.3f} ({', '.join(parts)})."


# ---------------------------------------------------------------------------------------
# Helpers


def _located(code: str | None, line: int | None, col: int | None, message: str) -> list[str]:
    """A problem at line:col, then the sketch's line there (when there is one)."""
    message = _clip(" ".join(str(message).split()), MAX_MESSAGE_CHARS)
    if line is None:
        return [f"- {message}"]
    where = f"line {line}:{col}" if col is not None else f"line {line}"
    out = [f"- {where}: {message}"]
    source = _source_line(code, line)
    if source:
        out.append(f"    {line} | {source}")
    return out


def _source_line(code: str | None, line: int) -> str:
    lines = (code or "").splitlines()
    if not 1 <= line <= len(lines):
        return ""
    return _clip(lines[line - 1].strip(), MAX_SOURCE_CHARS)


def _refused_names(bare_calls: Mapping[str, int]) -> dict[str, list[str]]:
    """The names the page refused, by the violation code each earns, sorted, capped."""
    by_code: dict[str, list[str]] = {}
    for name in sorted(bare_calls):
        by_code.setdefault(code_for_denied(name), []).append(_clip(name, 40))
    return {
        code: names[:MAX_NAMES] + ([f"and {len(names) - MAX_NAMES} more"] if len(names) > MAX_NAMES else [])
        for code, names in by_code.items()
    }


def _more(hidden: int, noun: str) -> list[str]:
    return [f"- … and {_count(hidden, 'more ' + noun)} not shown."] if hidden > 0 else []


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

