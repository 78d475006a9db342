"""Find the sketch in a model reply.

Decisions (kept in one place so they can be argued with):

* Fenced blocks: a `<think>...</think>` section is dropped first (Qwen3 may think out
  loud with drafts). Then the first fenced block (``` or ~~~) labelled js / javascript /
  jsx / mjs / p5 / p5js wins; failing that, the first unlabelled block that looks like
  JavaScript; failing that, an opening js fence whose closing fence never came (a reply
  cut off at max tokens): everything after it. Blocks in other languages are ignored.
  Without any fence the whole reply is the sketch.
* `sketch_in_reply` (what the gate reads) finds no sketch when nothing is left, when
  only other-language blocks exist, or when an unfenced reply does not look like code
  (prose). A sketch cut off mid-code is still returned: the gate's parser reports it as
  `truncated`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["KEEP_REPLY", "Extraction", "extract_sketch", "is_keep_reply", "reply_text", "sketch_in_reply"]

_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
# An opening fence (3+ backticks or tildes, optional label) and, lazily, the first
# closing fence of the same kind; a missing closing fence runs to the end of the reply.
_FENCE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<label>[^\s`]*)[^\n]*\n"
    r"(?P<body>.*?)"
    r"(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|(?P<open>\Z))",
    re.M | re.S,
)
_CODE_HINTS = ("function", "=>", "createCanvas", "brush.", "setup")
# Languages a fenced block may be labelled with and still be our sketch.
_JS_LABELS = frozenset({"js", "javascript", "jsx", "mjs", "p5", "p5js", "p5.js"})


def reply_text(decoded: str) -> str:
    """A model's decoded reply as the studio reads and keeps it: each NUL character becomes
    U+FFFD. A byte-level tokenizer can produce NUL, and PostgreSQL refuses it in text and
    JSON columns, so one such reply used to fail the storing of its whole step (every reward
    None). Done where the reply is decoded, so its gate, render, feedback and stored row all
    see the same text."""
    return decoded.replace("\x00", "\ufffd")


# A revision turn's other answer (issue #16): the painting of the turn before stands as the
# final one. Asked for in the feedback (paintenv.feedback.REVISE_INSTRUCTION).
KEEP_REPLY = "KEEP"
# The word alone, as a model may dress it: in a fence, backticks, quotes or bold, with a full stop.
_KEEP = re.compile(r"(?:(?:`{3,}|~{3,})[^\S\n]*\w*[^\S\n]*\n)?[\s`'\"*]*keep[.!]?[\s`'\"*]*(?:`{3,}|~{3,})?", re.I)


def is_keep_reply(reply: str) -> bool:
    """Whether a revision reply is KEEP_REPLY: the word alone (any case, after a think block,
    dressed as `_KEEP` allows). Anything more, a sketch with the word in it too, is a sketch:
    a policy gains nothing by mixing them, and a kept turn can never carry new code."""
    text = _THINK_BLOCK.sub("", reply).strip()
    return len(text) <= 40 and _KEEP.fullmatch(text) is not None


def _looks_like_js(text: str) -> bool:
    """Cheap lexical guess used only to tell code from prose (never for the checks)."""
    has_hint = any(h in text for h in _CODE_HINTS)
    has_syntax = any(ch in text for ch in "{};(")
    return has_hint and has_syntax


@dataclass(frozen=True)
class Extraction:
    code: str | None
    fenced: bool  # the code came from a fenced block
    reason: str = ""  # why there is no code


def _extract(reply: Any) -> Extraction:
    if isinstance(reply, bytes):
        reply = reply.decode("utf-8", "replace")
    if not isinstance(reply, str) or not reply.strip():
        return Extraction(None, False, "the reply is empty")
    text = _THINK_BLOCK.sub("", reply)
    if not text.strip():
        return Extraction(None, False, "the reply holds only a <think> section")
    blocks = [
        (m.group("label").lower(), m.group("body"), m.group("open") is not None)
        for m in _FENCE.finditer(text)
    ]
    if not blocks:
        return Extraction(text, False)
    for label, body, _open in blocks:
        if label in _JS_LABELS and body.strip():
            return Extraction(body, True)
    for label, body, _open in blocks:
        if not label and body.strip() and _looks_like_js(body):
            return Extraction(body, True)
    labels = sorted({label or "unlabelled" for label, _b, _o in blocks})
    return Extraction(None, True, f"no JavaScript block (found: {', '.join(labels)})")


def extract_sketch(reply: str) -> str | None:
    """The sketch in a model reply: see the module docstring for the fence rules."""
    try:
        return _extract(reply).code
    except Exception:  # noqa: BLE001 - never raise on model output
        return None


def sketch_in_reply(reply: Any) -> Extraction:
    """The sketch as the gate reads it: `extract_sketch`'s rules, and an unfenced reply
    that does not look like code is prose, not a sketch. Never raises."""
    try:
        found = _extract(reply)
    except Exception as exc:  # noqa: BLE001 - never raise on model output
        return Extraction(None, False, f"extraction failed: {type(exc).__name__}")
    if found.code is not None and not found.fenced and not _looks_like_js(found.code):
        return Extraction(None, False, "the reply is prose, not code")
    return found
