"""The length part of the reward: the sketch's painting code in tokens, scored against
three thresholds.

The published system estimates tokens as characters / 4 over the whole reply, so a policy
raises its length score by padding. Comments were the first padding (12,000 characters of
them took a 0.065 sketch to 1.0); dead code was the next (dead functions, unread tables,
hundreds of no-op brush calls, dead branches, unrolled loops took 0.117 to 1.0 with the
very same painting). So only painting code counts:

* code that ran: the render's block coverage (coverage.py); a function never called, a
  branch never taken and code after a `return` count nothing;
* code that is read: a `const`/`let`/`var` whose name nothing reads counts nothing, nor do
  the statements that only assign to it, nor an expression statement that does nothing
  (no call, no assignment);
* code, not data: an array or object of literals counts at most DATA_CAP characters, a
  single token at most MAX_TOKEN_CHARS;
* code written once: a statement identical to an earlier one up to its literals (numbers,
  strings, and the digits that end a name) counts only its literals, all the repeats of
  one statement together at most REPEAT_CAP characters: about the head of the loop that
  would write them (hand-unrolled loops, a no-op call repeated 660 times).

Characters are counted as tree-sitter's JavaScript tokens (the gate's parser): comments
dropped, every run of blanks between two tokens one character. Tokens ≈ those characters
/ 4, so the published thresholds keep their meaning for ordinary code.

Before a render (the gate) there is no coverage: `painting_tokens(code)` then applies the
static rules alone, an upper bound of what the render will count.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import accumulate

from tree_sitter import Node

from paintenv.js_syntax import parse_js

__all__ = [
    "DATA_CAP",
    "MAX_TOKEN_CHARS",
    "REPEAT_CAP",
    "code_chars",
    "estimate_tokens",
    "length_score",
    "painting_chars",
    "painting_tokens",
    "score_tokens",
]

# A colour literal is 9 characters with its quotes and a long descriptive name ~30; longer
# tokens are padding.
MAX_TOKEN_CHARS = 32
# A palette of six colours is ~60 characters, a dozen hand-placed points ~100; a longer
# table of literals is data, whatever it holds.
DATA_CAP = 128
# `for (let i = 0; i < 8; i++)` is 28 characters: what writing a statement once more costs.
REPEAT_CAP = 32
_COMMENTS = frozenset({"comment", "html_comment", "hashbang_line"})
_LITERALS = frozenset({"number", "string", "template_string", "regex", "true", "false", "null",
                       "undefined"})
_DATA = _LITERALS | {"array", "object", "pair", "property_identifier", "unary_expression",
                     "string_fragment", "escape_sequence", "spread_element"}
# What makes a statement do something: without one of these it computes a value and drops it.
_EFFECTS = frozenset({"call_expression", "new_expression", "assignment_expression",
                      "augmented_assignment_expression", "update_expression", "await_expression",
                      "yield_expression", "delete"})
_LOOPS = frozenset({"for_statement", "for_in_statement", "while_statement", "do_statement"})
# Statements compared with the earlier ones (a block only where it stands as a statement).
_STATEMENTS = frozenset({
    "expression_statement", "lexical_declaration", "variable_declaration", "if_statement",
    "for_statement", "for_in_statement", "while_statement", "do_statement", "return_statement",
    "switch_statement", "try_statement", "function_declaration", "statement_block",
})
_STATEMENT_LISTS = frozenset({"program", "statement_block", "switch_case", "switch_default",
                              "else_clause", "if_statement", "for_statement", "for_in_statement",
                              "while_statement", "do_statement"})


def _leaves(node: Node) -> Iterator[Node]:
    """The tokens under `node` in source order, comments left out (iterative: sketches may
    nest thousands deep)."""
    cursor = node.walk()
    while True:
        cur = cursor.node
        assert cur is not None
        if cur.type in _COMMENTS:
            pass
        elif cur.child_count == 0:
            if cur.end_byte > cur.start_byte:
                yield cur
        elif cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent() or cursor.node == node:
                return


def _is_literal(node: Node) -> bool:
    if node.type == "template_string":
        return not any(c.type == "template_substitution" for c in node.children)
    if node.type == "unary_expression":  # -3 is one number to a reader
        arg = node.child_by_field_name("argument")
        return arg is not None and arg.type == "number" and node.children[0].type in ("-", "+")
    return node.type in _LITERALS


def _is_data(node: Node) -> bool:
    """An array or object made of literals only."""
    if node.type not in ("array", "object"):
        return False
    stack = list(node.named_children)
    while stack:
        cur = stack.pop()
        if cur.type in _COMMENTS or _is_literal(cur):
            continue
        if cur.type not in _DATA:
            return False
        stack.extend(cur.named_children)
    return True


def _contains(node: Node, test) -> bool:
    """Whether `test` holds for a node of this subtree (named nodes; iterative)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if test(cur):
            return True
        stack.extend(cur.named_children)
    return False


def _has_call(node: Node) -> bool:
    return _contains(node, lambda cur: cur.type in ("call_expression", "new_expression"))


def _has_effect(node: Node) -> bool:
    return _contains(node, lambda cur: cur.type in _EFFECTS or (
        cur.type == "unary_expression" and cur.children[0].type == "delete"))


class _Sketch:
    """One parsed sketch and what of it counts."""

    def __init__(self, code: str, executed: Sequence[tuple[int, int]] | None):
        self.data = code.encode("utf-8", "replace")
        self.root = parse_js(self.data)
        self.executed = None if executed is None else self._to_bytes(code, executed)
        self.excluded: set[int] = set()  # node ids that count nothing
        self._exclude_unread()

    @staticmethod
    def _to_bytes(code: str, ranges: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
        if code.isascii():
            offsets = None
        else:
            offsets = list(accumulate((len(ch.encode("utf-8", "replace")) for ch in code), initial=0))
        starts, ends = [], []
        for a, b in sorted(ranges):
            if offsets is not None:
                a, b = offsets[min(a, len(code))], offsets[min(b, len(code))]
            starts.append(a)
            ends.append(b)
        return starts, ends

    def ran(self, node: Node) -> bool:
        if self.executed is None:
            return True
        starts, ends = self.executed
        i = bisect.bisect_right(starts, node.start_byte) - 1
        return i >= 0 and node.start_byte < ends[i]

    def text(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # ---- static: what is never read
    def _exclude_unread(self) -> None:
        """Declarations whose name nothing reads, the statements that only assign to such a
        name, and expression statements without an effect; repeated until nothing more goes
        (a table read only by a dropped declaration is itself unread)."""
        declared: dict[str, list[Node]] = {}
        writes: dict[str, list[Node]] = {}
        loops: list[Node] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "variable_declarator":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and name.type == "identifier" and (value is None or not _has_effect(value)):
                    declared.setdefault(self.text(name), []).append(node)
            elif t == "expression_statement" and node.named_child_count:
                expr = node.named_children[0]
                target = None
                if expr.type in ("assignment_expression", "augmented_assignment_expression"):
                    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
                    if left is not None and left.type == "identifier" and right is not None and not _has_effect(right):
                        target = left
                elif expr.type == "update_expression":
                    arg = expr.child_by_field_name("argument")
                    target = arg if arg is not None and arg.type == "identifier" else None
                if target is not None:
                    writes.setdefault(self.text(target), []).append(node)
                elif not _has_effect(expr):
                    self.excluded.add(node.id)
            elif t in _LOOPS:
                loops.append(node)
            stack.extend(node.children)
        bindings = {n.child_by_field_name("name").id for group in declared.values() for n in group}  # type: ignore[union-attr]
        targets = {self._target(w).id for group in writes.values() for w in group}
        for _ in range(8):
            read = {self.text(n) for n in self._names_outside_excluded()  # a read in code that never ran reads nothing
                    if n.id not in bindings and n.id not in targets and self.ran(n)}
            unread = [name for name in declared if name not in read and declared[name][0].id not in self.excluded]
            idle = [loop for loop in loops if loop.id not in self.excluded and self._idle(loop)]
            if not unread and not idle:
                return
            for name in unread:
                for node in declared[name] + writes.get(name, []):
                    self.excluded.add(node.id)
            self.excluded.update(loop.id for loop in idle)

    def _idle(self, loop: Node) -> bool:
        """A loop whose body does nothing that counts and whose head calls nothing."""
        body = loop.child_by_field_name("body")
        if body is None:
            return False
        head = [c for c in loop.children if c.id != body.id]
        if any(_has_call(c) for c in head):
            return False
        if body.id in self.excluded:
            return True
        return body.type == "statement_block" and all(
            c.id in self.excluded or c.type in _COMMENTS for c in body.named_children)

    @staticmethod
    def _target(statement: Node) -> Node:
        expr = statement.named_children[0]
        found = expr.child_by_field_name("left") or expr.child_by_field_name("argument")
        assert found is not None
        return found

    def _names_outside_excluded(self) -> list[Node]:
        """The names not inside anything excluded, top-down in one pass (asking each name for
        its ancestors is quadratic in the nesting, and `a.a.a...` nests 100,000 deep)."""
        out: list[Node] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.id in self.excluded:
                continue
            if node.type in ("identifier", "shorthand_property_identifier"):
                out.append(node)
            stack.extend(node.children)
        return out

    # ---- counting
    def shape(self, node: Node) -> str:
        """The statement up to its literals: what a loop would write once."""
        parts: list[str] = []
        skip_until = -1
        for leaf in _leaves(node):
            if leaf.start_byte < skip_until:
                continue
            lit = leaf if _is_literal(leaf) else leaf.parent
            if lit is not None and lit is not node and _is_literal(lit):
                parts.append("#")
                skip_until = lit.end_byte
            elif leaf.type == "identifier":
                parts.append(self.text(leaf).rstrip("0123456789"))
            else:
                parts.append(self.text(leaf))
        return " ".join(parts)

    def chars(self, node: Node, *, literals_only: bool = False) -> int:
        """Characters of the tokens under `node` that ran (blank runs as one), or of its
        literals alone."""
        total, last_end = 0, None
        for leaf in _leaves(node):
            if not self.ran(leaf) or (literals_only and not self._in_literal(leaf)):
                continue
            if last_end is not None and leaf.start_byte > last_end:
                total += 1
            total += min(leaf.end_byte - leaf.start_byte, MAX_TOKEN_CHARS)
            last_end = leaf.end_byte
        return total

    @staticmethod
    def _in_literal(leaf: Node) -> bool:
        cur: Node | None = leaf
        for _ in range(3):  # a literal's tokens sit at most two levels below it
            if cur is None:
                return False
            if _is_literal(cur):
                return True
            cur = cur.parent
        return False

    def count(self) -> int:
        total, last_end = 0, None
        repeats: dict[str, int] = {}  # shape -> characters its repeats have used of DATA_CAP
        seen: set[str] = set()
        cursor = self.root.walk()
        while True:
            node = cursor.node
            assert node is not None
            whole: int | None = None  # set: this subtree is counted as one piece
            separate = True  # a repeat's literals are a table's entries: no blank before them
            if node.id in self.excluded or self._all_excluded(node) or self._branches_never_ran(node):
                whole = 0
            elif node.type in _STATEMENTS and self._is_statement(node) and self.ran(node):
                shape = self.shape(node)
                if shape in seen:
                    used = repeats.get(shape, 0)
                    whole = min(self.chars(node, literals_only=True), REPEAT_CAP - used)
                    repeats[shape] = used + whole
                    separate = False
                else:
                    seen.add(shape)
            elif _is_data(node):
                whole = min(self.chars(node), DATA_CAP)
            if whole is not None:
                if whole and separate and last_end is not None and node.start_byte > last_end:
                    total += 1
                total += whole
                last_end = node.end_byte if whole else last_end
            elif node.type in _COMMENTS:
                pass
            elif node.child_count == 0:
                if node.end_byte > node.start_byte and self.ran(node):
                    if last_end is not None and node.start_byte > last_end:
                        total += 1
                    total += min(node.end_byte - node.start_byte, MAX_TOKEN_CHARS)
                    last_end = node.end_byte
            elif cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return total

    def _branches_never_ran(self, node: Node) -> bool:
        """An `if` none of whose branches ran, a loop whose body never ran: its test decided
        only that nothing paints (`if (width < 0) {...}`), so it counts with its branches."""
        if self.executed is None:
            return False
        if node.type == "if_statement":
            branches = [node.child_by_field_name("consequence")]
            alternative = node.child_by_field_name("alternative")
            if alternative is not None:
                branches += [c for c in alternative.named_children if c.type not in _COMMENTS][:1]
        elif node.type in _LOOPS:
            branches = [node.child_by_field_name("body")]
        else:
            return False
        return all(b is not None and not self.ran(b) for b in branches)

    def _all_excluded(self, node: Node) -> bool:
        """A declaration all of whose names are unread."""
        if node.type not in ("lexical_declaration", "variable_declaration"):
            return False
        names = [c for c in node.named_children if c.type == "variable_declarator"]
        return bool(names) and all(c.id in self.excluded for c in names)

    @staticmethod
    def _is_statement(node: Node) -> bool:
        return node.type != "statement_block" or (node.parent is not None and node.parent.type in _STATEMENT_LISTS)


@lru_cache(maxsize=512)  # the gate, the pipeline and the editor ask about the same sketch
def _painting_chars(code: str, executed: tuple[tuple[int, int], ...] | None) -> int:
    return _Sketch(code, executed).count()


def painting_chars(code: str, executed: Sequence[tuple[int, int]] | None = None) -> int:
    """Characters of painting code (the rules above): of the code that ran when `executed`
    (the render's coverage: ranges of `code`) is given, else the static rules alone."""
    if not isinstance(code, str) or not code.strip():
        return 0
    return _painting_chars(code, None if executed is None else tuple(map(tuple, executed)))


def painting_tokens(code: str, executed: Sequence[tuple[int, int]] | None = None) -> int:
    """Tokens of painting code ≈ its characters / 4 (floor)."""
    return painting_chars(code, executed) // 4


@lru_cache(maxsize=512)
def code_chars(code: str) -> int:
    """Characters of all the code, run or not (comments dropped, blank runs as one, a token
    at most MAX_TOKEN_CHARS): the measure before painting code, kept to compare with."""
    if not isinstance(code, str) or not code.strip():
        return 0
    data = code.encode("utf-8", "replace")
    total, last_end = 0, None
    for leaf in _leaves(parse_js(data)):
        if last_end is not None and leaf.start_byte > last_end:
            total += 1
        total += min(leaf.end_byte - leaf.start_byte, MAX_TOKEN_CHARS)
        last_end = leaf.end_byte
    return total


def estimate_tokens(code: str) -> int:
    """Tokens ≈ characters of all the code / 4 (floor): the published estimate, over code only."""
    if not isinstance(code, str):
        return 0
    return code_chars(code) // 4


def score_tokens(
    tokens: int,
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
    if tokens < low_tokens or tokens > high_tokens:
        return 0.0
    if tokens >= full_tokens:
        return 1.0
    return (tokens - low_tokens) / (full_tokens - low_tokens)


def length_score(code: str, executed: Sequence[tuple[int, int]] | None = None, **thresholds: int) -> float:
    """The length score of `code`'s painting tokens (`executed`: the render's coverage;
    without it, the static rules alone)."""
    return score_tokens(painting_tokens(code, executed), **thresholds)
