"""A sketch's normal form: its JavaScript tokens, comments dropped, one space between each, so
two sketches that differ only in comments, blanks or line breaks are one sketch. The SFT
dataset builder de-duplicates on it and keeps the eval split's code out by it."""
from __future__ import annotations

import hashlib
from functools import lru_cache

from paintenv.js_syntax import parse_js

_COMMENTS = frozenset({"comment", "html_comment", "hashbang_line"})


@lru_cache(maxsize=4096)
def normal_form(code: str) -> str:
    if not isinstance(code, str) or not code.strip():
        return ""
    data = code.encode("utf-8", "replace")
    cursor = parse_js(data).walk()
    tokens: list[str] = []
    while True:
        node = cursor.node
        assert node is not None
        if node.type not in _COMMENTS:
            if node.child_count == 0:
                if node.end_byte > node.start_byte:
                    tokens.append(data[node.start_byte:node.end_byte].decode("utf-8", "replace"))
            elif cursor.goto_first_child():
                continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return " ".join(tokens)


def code_key(code: str) -> str:
    """sha256 of the normal form: equal for sketches equal up to comments and blanks."""
    return hashlib.sha256(normal_form(code).encode()).hexdigest()
