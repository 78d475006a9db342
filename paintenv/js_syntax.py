"""Reading tree-sitter's JavaScript syntax trees: the parser, what the grammar's node
types and fields mean, and where a node sits (a callee, an assignment's target, ...).

Grammar facts only; what the static gate makes of them is in gate_analysis.py.
"""

from __future__ import annotations

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

__all__ = [
    "ASSIGN_TYPES",
    "CALL_FIELDS",
    "FUNCTION_LITERALS",
    "MEMBER_TYPES",
    "NAME_TYPES",
    "THIS_SCOPES",
    "NodeContext",
    "contains_string",
    "parse_js",
    "unwrap",
]

_JS_LANGUAGE = Language(tree_sitter_javascript.language())

# (parent type, field) pairs whose identifier child is a binding, not a read.
_BINDING_FIELDS = frozenset(
    {
        ("variable_declarator", "name"),
        ("function_declaration", "name"),
        ("generator_function_declaration", "name"),
        ("function_expression", "name"),
        ("generator_function", "name"),
        ("class_declaration", "name"),
        ("class", "name"),
        ("arrow_function", "parameter"),
        ("catch_clause", "parameter"),
        ("assignment_pattern", "left"),
        ("pair_pattern", "value"),
        ("for_in_statement", "left"),
        ("assignment_expression", "left"),
    }
)
# Parents whose every identifier child is a binding.
_BINDING_PARENTS = frozenset({"formal_parameters", "array_pattern", "rest_pattern"})
CALL_FIELDS = frozenset({("call_expression", "function"), ("new_expression", "constructor")})
MEMBER_TYPES = frozenset({"member_expression", "subscript_expression"})
# `this` is an instance (not the window) inside these.
THIS_SCOPES = frozenset({"class_body", "method_definition"})
NAME_TYPES = frozenset({"identifier", "property_identifier", "shorthand_property_identifier",
                        "shorthand_property_identifier_pattern"})
FUNCTION_LITERALS = frozenset({"arrow_function", "function_expression", "function",
                               "generator_function", "class"})
ASSIGN_TYPES = frozenset(
    {"assignment_expression", "augmented_assignment_expression"}
)


# One parser per thread would be needed for concurrent use; tree-sitter parsers are not
# thread-safe, so build one per call (cheap: microseconds).
def parse_js(data: bytes) -> Node:
    parser = Parser(_JS_LANGUAGE)
    return parser.parse(data).root_node


def unwrap(node: Node) -> Node:
    """Strip parentheses, iteratively (input may nest them thousands deep)."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def contains_string(node: Node) -> bool:
    """Whether a string or template literal occurs anywhere in this subtree."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur.type in ("string", "template_string"):
            return True
        stack.extend(cur.named_children)
    return False


class NodeContext:
    """Where a node sits: its parent, its field there, and whether `this` is an
    instance (inside a class body or an object method) rather than the window."""

    __slots__ = ("parent", "index", "this_is_instance", "_field")

    def __init__(self, parent: Node | None, index: int, this_is_instance: bool) -> None:
        self.parent = parent
        self.index = index
        self.this_is_instance = this_is_instance
        self._field: str | None | bool = False  # False: not looked up yet

    @property
    def field(self) -> str | None:
        if self._field is False:
            self._field = (self.parent.field_name_for_named_child(self.index)
                           if self.parent is not None else None)
        return self._field  # type: ignore[return-value]

    def is_binding(self) -> bool:
        """Whether an identifier here declares its name rather than reading it."""
        parent = self.parent
        if parent is None:
            return False
        ptype = parent.type
        return (ptype, self.field) in _BINDING_FIELDS or ptype in _BINDING_PARENTS

    def use(self) -> tuple[bool, bool, bool]:
        """(called, assigned to, used as the object of a further member access)."""
        parent = self.parent
        if parent is None:
            return False, False, False
        key = (parent.type, self.field)
        called = key in CALL_FIELDS
        assigned = (parent.type in ASSIGN_TYPES and self.field == "left") or (
            parent.type == "update_expression")
        chained = parent.type in MEMBER_TYPES and self.field == "object"
        return called, assigned, chained

    def argument_count(self) -> int:
        """How many arguments the call around this callee passes; -1 if not a call."""
        parent = self.parent
        if parent is None or parent.type != "call_expression" or self.field != "function":
            return -1
        args = parent.child_by_field_name("arguments")
        if args is None:
            return 0
        if args.type == "template_string":  # tagged template
            return 1
        return sum(1 for a in args.named_children if a.type != "comment")
