"""Which parts of the sketch ran: the sketch's own code, instrumented with markers, as
character ranges of its source.

The length part of the reward counts only code that ran (length.py); a function never
called, a branch never taken and the code after a `return` count nothing. V8's precise
coverage answers that too, but starting it walks the whole heap and deoptimises p5 and
p5.brush, and taking it serialises every library function: +0.2-0.28 s of Chromium CPU a
render on this machine (bench/length_coverage.py), more than the text check the round
replaced. Markers in the sketch alone cost what the sketch's own statements cost.

A marker is a call of a function the module's first line binds (claimed from the harness,
which hands it out once, before any sketch code runs) under a name derived from the
sketch's hash (`__paintRan_<hex>`): no sketch can write that name (its text would have to
contain its own hash), and a lexical binding cannot be reached by a computed name, so no
sketch can set a marker of code that did not run. What a marker covers:

* a statement in a statement list: the statement (the marker goes before it);
* a function (declaration, expression, arrow, method): the whole function, header
  included (the marker opens its body, after any directive prologue);
* the body of an `if`/`else`, a loop, a `catch`, a `case`: the body (a single-statement
  body is wrapped in braces);
* a branch of `?:` and the right side of `&&`, `||`, `??` and their assignments:
  `(marker, branch)`.

Ranges nest, and the innermost decides, as V8's do. Markers add no line breaks, so line
numbers are the sketch's; columns of runtime errors are mapped back (original_column).
"""
from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate

from tree_sitter import Node

from paintenv.js_syntax import parse_js

__all__ = ["MARKER_CLAIM", "MAX_MARKERS", "Instrumented", "executed_ranges", "instrument"]

MAX_MARKERS = 65_536  # the harness's flag array; a sketch with more is left uninstrumented
MARKER_CLAIM = "__paintClaimRan"  # /shadows.js's export that hands the marker function over, once

_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "function_expression",
                        "function", "generator_function", "arrow_function", "method_definition"})
# Parent types whose body is run only sometimes, and the field that holds it.
_BODIES = {"if_statement": "consequence", "for_statement": "body", "for_in_statement": "body",
           "while_statement": "body", "do_statement": "body", "with_statement": "body"}
_LOGICAL = frozenset({"&&", "||", "??"})
_LOGICAL_ASSIGN = frozenset({"&&=", "||=", "??="})
_NOT_STATEMENTS = frozenset({"comment", "html_comment", "{", "}"})


@dataclass(frozen=True)
class Instrumented:
    """The sketch with markers, and what each marker covers."""

    code: str  # the sketch as the page runs it
    name: str  # the marker function's name in the module
    markers: int
    # (start, end, marker) in character offsets of the original sketch
    regions: list[tuple[int, int, int]] = field(default_factory=list)
    original: str = ""
    # line (1-based) -> [(original UTF-16 column (1-based) of an insertion, its length)]
    _inserted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def executed(self, flags: object) -> list[tuple[int, int]] | None:
        """The ranges of the original sketch that ran, from the harness's flags (a string of
        '0'/'1', one a marker). None when the page did not say (no result, a wrong length) or
        no marker ran: a module that evaluates runs its first statement or calls setup()."""
        if not isinstance(flags, str) or len(flags) != self.markers or flags.strip("01"):
            return None
        if "1" not in flags:
            return None  # the module never ran (V8 refused it): unknown, not nothing
        ranges = [(a, b, 1 if flags[k] == "1" else 0) for a, b, k in self.regions]
        return executed_ranges(ranges, len(self.original))

    def original_column(self, line: int | None, col: int | None) -> int | None:
        """The column in the sketch of a column V8 reported on the instrumented `line` (a
        column inside a marker is the marker's place)."""
        if line is None or col is None:
            return col
        shift = 0
        for at, length in self._inserted.get(line, ()):
            if col < at + shift:
                break
            if col < at + shift + length:
                return at
            shift += length
        return col - shift


def executed_ranges(ranges: list[tuple[int, int, int]], length: int) -> list[tuple[int, int]]:
    """Nested (start, end, count) ranges of a text of `length` characters flattened to the
    sorted, disjoint ranges whose innermost range ran. Ranges nest (a branch inside its
    statement, a statement inside its function), and the innermost holds the count, so
    painting them outermost first leaves the answer. Text outside every range did not run
    (what lies between statements is blanks and comments)."""
    spans = sorted(ranges, key=lambda r: (r[0], -r[1]))
    ran = bytearray(length + 1)
    for a, b, count in spans:
        a, b = max(0, min(a, length)), max(0, min(b, length))
        ran[a:b] = (b"\x01" if count > 0 else b"\x00") * (b - a)
    out: list[tuple[int, int]] = []
    i = 0
    while i < length:
        i = ran.find(1, i, length)
        if i < 0:
            break
        j = ran.find(0, i, length)
        j = length if j < 0 else j
        out.append((i, j))
        i = j
    return out


@lru_cache(maxsize=256)  # a determinism twin, a retry and the editor render the same sketch again
def instrument(code: str) -> Instrumented | None:
    """The sketch with a marker for each piece of code that may or may not run, or None
    where markers cannot be placed with certainty (the gate's parser finds an error in the
    sketch or in the result, or there would be more than MAX_MARKERS)."""
    if not isinstance(code, str):
        return None
    data = code.encode("utf-8", "surrogatepass")
    root = parse_js(data)
    if root.has_error:
        return None
    name = f"__paintRan_{hashlib.sha256(data).hexdigest()[:16]}"
    placer = _Placer(name)
    placer.walk(root)
    if placer.count > MAX_MARKERS:
        return None
    text = placer.apply(data)
    if parse_js(text).has_error:
        return None  # a marker broke the parse: measure nothing rather than change the sketch
    to_char = _char_offsets(code, data)
    regions = [(to_char(a), to_char(b), k) for a, b, k in placer.regions]
    inserted = _insertions_by_line(code, data, placer.insertions, to_char)
    return Instrumented(code=text.decode("utf-8", "surrogatepass"), name=name, markers=placer.count,
                        regions=regions, original=code, _inserted=inserted)


class _Placer:
    """Walks the tree once, collecting insertions (byte offset, text, order) and regions."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.regions: list[tuple[int, int, int]] = []
        # (byte offset, 0 closing / 1 opening, depth order, text)
        self.insertions: list[tuple[int, int, int, str]] = []

    def _marker(self, start: int, end: int) -> int:
        k = self.count
        self.count += 1
        self.regions.append((start, end, k))
        return k

    def _call(self, k: int) -> str:
        return f"{self.name}({k});"

    def _open(self, at: int, depth: int, text: str) -> None:
        self.insertions.append((at, 1, depth, text))

    def _close(self, at: int, depth: int, text: str) -> None:
        self.insertions.append((at, 0, -depth, text))

    def walk(self, root: Node) -> None:
        stack: list[tuple[Node, int]] = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            kind = node.type
            if kind in ("program", "statement_block"):
                self._statement_list(node, node.named_children, depth)
            elif kind in ("switch_case", "switch_default"):
                self._case(node, depth)
            if kind in _FUNCTIONS:
                self._function(node, depth)
            elif kind in _BODIES:
                body = node.child_by_field_name(_BODIES[kind])
                if body is not None:
                    self._body(body, body, depth)
            elif kind == "else_clause":
                body = next((c for c in node.named_children if c.type not in _NOT_STATEMENTS), None)
                if body is not None:
                    self._body(body, body, depth)
            elif kind == "catch_clause":
                body = node.child_by_field_name("body")
                if body is not None:
                    self._body(body, node, depth)
            elif kind == "ternary_expression":
                for field_name in ("consequence", "alternative"):
                    branch = node.child_by_field_name(field_name)
                    if branch is not None:
                        self._branch(branch, depth)
            elif kind == "binary_expression" or kind == "augmented_assignment_expression":
                operator = node.child_by_field_name("operator")
                right = node.child_by_field_name("right")
                op = operator.type if operator is not None else ""
                if right is not None and (op in _LOGICAL or op in _LOGICAL_ASSIGN):
                    self._branch(right, depth)
            for child in reversed(node.named_children):
                stack.append((child, depth + 1))

    def _statement_list(self, owner: Node, children: list[Node], depth: int) -> None:
        prologue = owner.type == "program" or (owner.parent is not None and owner.parent.type in _FUNCTIONS)
        for child in children:
            if child.type in _NOT_STATEMENTS:
                continue
            if prologue and _is_directive(child):
                continue  # a directive stays a directive: nothing may come before it
            prologue = False
            if child.type in ("function_declaration", "generator_function_declaration"):
                continue  # hoisted: its own marker (in its body) says whether it ran
            k = self._marker(child.start_byte, child.end_byte)
            self._open(child.start_byte, depth + 1, self._call(k))

    def _case(self, node: Node, depth: int) -> None:
        colon = next((c for c in node.children if c.type == ":"), None)
        if colon is None:
            return
        k = self._marker(node.start_byte, node.end_byte)
        self._open(colon.end_byte, depth, self._call(k))
        self._statement_list(node, node.children_by_field_name("body"), depth)

    def _function(self, node: Node, depth: int) -> None:
        body = node.child_by_field_name("body")
        if body is None:
            return
        k = self._marker(node.start_byte, node.end_byte)
        if body.type == "statement_block":
            at = body.children[0].end_byte  # after "{"
            for child in body.named_children:
                if child.type in _NOT_STATEMENTS:
                    continue
                if not _is_directive(child):
                    break
                at = child.end_byte
            self._open(at, depth, self._call(k))
        else:  # an arrow's expression
            self._open(body.start_byte, depth, f"({self.name}({k}), ")
            self._close(body.end_byte, depth, ")")

    def _body(self, body: Node, region: Node, depth: int) -> None:
        k = self._marker(region.start_byte, region.end_byte)
        if body.type == "statement_block":
            self._open(body.children[0].end_byte, depth, self._call(k))
        else:
            self._open(body.start_byte, depth, "{" + self._call(k))
            self._close(body.end_byte, depth, "}")

    def _branch(self, expr: Node, depth: int) -> None:
        k = self._marker(expr.start_byte, expr.end_byte)
        self._open(expr.start_byte, depth, f"({self.name}({k}), ")
        self._close(expr.end_byte, depth, ")")

    def apply(self, data: bytes) -> bytes:
        out, last = [], 0
        for at, _, _, text in sorted(self.insertions, key=lambda i: i[:3]):
            out.append(data[last:at])
            out.append(text.encode("ascii"))
            last = at
        out.append(data[last:])
        return b"".join(out)


def _is_directive(node: Node) -> bool:
    return (node.type == "expression_statement" and node.named_child_count == 1
            and node.named_children[0].type == "string")


def _char_offsets(code: str, data: bytes):
    """A function from a UTF-8 byte offset of `data` to a character offset of `code`."""
    if code.isascii():
        return lambda at: at
    table = [0] * (len(data) + 1)
    pos = 0
    for i, ch in enumerate(code):
        n = len(ch.encode("utf-8", "surrogatepass"))
        for j in range(n):
            table[pos + j] = i
        pos += n
    table[pos] = len(code)
    return lambda at: table[min(at, len(data))]


def _insertions_by_line(code: str, data: bytes, insertions, to_char) -> dict[int, list[tuple[int, int]]]:
    """Each line's insertions (1-based lines of the sketch, as the harness reports errors) as
    (1-based UTF-16 column in the original, length), in order."""
    line_starts = [0] + [i + 1 for i, ch in enumerate(code) if ch == "\n"]
    # UTF-16 units before each character: V8's columns count them
    units = None if code.isascii() else list(accumulate((2 if ord(ch) > 0xFFFF else 1 for ch in code), initial=0))
    out: dict[int, list[tuple[int, int]]] = {}
    for at, _, _, text in sorted(insertions, key=lambda i: i[:3]):
        char = to_char(at)
        line = bisect.bisect_right(line_starts, char)
        start = line_starts[line - 1]
        col = (char - start if units is None else units[char] - units[start]) + 1
        out.setdefault(line, []).append((col, len(text)))
    return out
