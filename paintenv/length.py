"""The length part of the reward: the sketch's code in tokens, scored against three thresholds.

The published system estimates tokens as characters / 4 over the whole reply, so a policy
raises its length score by padding: a comment of 12,000 characters took a 0.065 sketch to
1.0. Here only code counts. The sketch is read as JavaScript tokens (tree-sitter, the
parser the gate uses); comments are dropped, every run of blanks between two tokens
counts as one character, and one token counts at most MAX_TOKEN_CHARS characters (a
50,000-character string literal or identifier is data, not code). Tokens ≈ those
characters / 4, so the published thresholds keep their meaning for ordinary code, a
little lower than before because indentation no longer counts.
"""

from __future__ import annotations

from functools import lru_cache

from paintenv.js_syntax import parse_js

__all__ = ["MAX_TOKEN_CHARS", "code_chars", "estimate_tokens", "length_score"]

# A colour literal is 9 characters with its quotes and a long descriptive name ~30; longer
# tokens are padding.
MAX_TOKEN_CHARS = 32
_COMMENTS = frozenset({"comment", "html_comment", "hashbang_line"})


@lru_cache(maxsize=512)  # the gate, the pipeline and the editor ask about the same sketch
def code_chars(code: str) -> int:
    """Characters of code: every token (up to MAX_TOKEN_CHARS each) plus one character
    for each gap of blanks or comments between two tokens."""
    if not isinstance(code, str) or not code.strip():
        return 0
    data = code.encode("utf-8", "replace")
    cursor = parse_js(data).walk()
    total = 0
    last_end: int | None = None
    while True:
        node = cursor.node
        assert node is not None
        if node.type in _COMMENTS:
            pass  # neither a token nor (below) the end of one
        elif node.child_count == 0:
            if node.end_byte > node.start_byte:
                if last_end is not None and node.start_byte > last_end:
                    total += 1  # blanks or comments between two tokens: one separator
                text = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
                total += min(len(text), MAX_TOKEN_CHARS)
                last_end = node.end_byte
        elif cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return total


def estimate_tokens(code: str) -> int:
    """Tokens ≈ characters of code / 4 (floor): the published estimate, over code only."""
    if not isinstance(code, str):
        return 0
    return code_chars(code) // 4


def length_score(
    code: str,
    *,
    low_tokens: int = 150,
    full_tokens: int = 3000,
    high_tokens: int = 6000,
) -> float:
    """0 below `low_tokens` or above `high_tokens`, 1 from `full_tokens` to `high_tokens`
    inclusive, linear in between. Raises ValueError for thresholds out of order."""
    if not 0 <= low_tokens <= full_tokens <= high_tokens:
        raise ValueError(
            f"need 0 <= low_tokens <= full_tokens <= high_tokens, got "
            f"{low_tokens}, {full_tokens}, {high_tokens}"
        )
    tokens = estimate_tokens(code)
    if tokens < low_tokens or tokens > high_tokens:
        return 0.0
    if tokens >= full_tokens:
        return 1.0
    return (tokens - low_tokens) / (full_tokens - low_tokens)
