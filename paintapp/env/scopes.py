"""Which names a sketch declares where, and which of its names are free (globals).

A small scope resolver over the tree-sitter syntax tree, for sketches run as ES modules
(strict mode): `var` and parameters belong to the nearest function (or the module),
`let`/`const`/`class` and function declarations inside blocks to their block, a named
function expression's name to the function itself, `arguments` to every non-arrow
function. Identifiers are compared after decoding `\\uXXXX` and `\\u{X}` escapes, as
JavaScript does, so `\\u0072ect` is `rect`.

Two readers: the static gate asks which reads are free (each must be on the allowlist),
and the renderer asks which names the module declares at its top level (those it must
not shadow with its import of stubs, or the module would not parse).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})")

_FUNCTIONS = frozenset({
    "function_declaration", "generator_function_declaration", "function_expression",
    "function", "generator_function", "arrow_function", "method_definition",
})
_DECLARED_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration"})
_NAMED_FUNCTION_EXPRESSIONS = frozenset({"function_expression", "function", "generator_function"})
_BLOCKS = frozenset({"statement_block", "switch_body", "class_static_block", "for_statement",
                     "for_in_statement", "catch_clause", "class_body"})
_SKIP = frozenset({"comment", "html_comment", "regex", "string", "number"})


def decode_identifier(text: str) -> str:
    """`\\u0072ect` -> `rect`; text without escapes is returned as is."""
    if "\\" not in text:
        return text

    def repl(m: re.Match[str]) -> str:
        try:
            return chr(int(m.group(1) or m.group(2), 16))
        except (ValueError, OverflowError):
            return m.group(0)

    return _ESCAPE.sub(repl, text)


@dataclass
class Scope:
    kind: str  # "module" | "function" | "block"
    parent: Scope | None
    names: set[str] = field(default_factory=set)

    def var_scope(self) -> Scope:
        scope = self
        while scope.kind == "block" and scope.parent is not None:
            scope = scope.parent
        return scope

    def resolves(self, name: str) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent
        return False


@dataclass
class ScopeReport:
    module_names: set[str]
    # identifier / shorthand_property_identifier nodes that read or assign a name
    references: list[tuple[str, Node, Scope]]

    def free(self) -> list[tuple[str, Node]]:
        """References that no declaration of the sketch resolves: globals."""
        return [(name, node) for name, node, scope in self.references if not scope.resolves(name)]

    def is_free(self, node: Node) -> bool:
        """Whether this identifier node reads a global (True for nodes never seen)."""
        if self._free_ids is None:
            self._free_ids = {ref.id for _name, ref in self.free()}
            self._seen_ids = {ref.id for _name, ref, _scope in self.references}
        return node.id in self._free_ids or node.id not in self._seen_ids

    _free_ids: set[int] | None = None
    _seen_ids: set[int] | None = None


class _Resolver:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.module = Scope("module", None)
        self.references: list[tuple[str, Node, Scope]] = []
        # (node, scope, mode): mode "expr" walks an expression or statement, "bind:X"
        # declares the identifiers of a pattern in a scope chosen by X, "target" treats a
        # pattern's identifiers as assignment targets (references).
        self.stack: list[tuple[Node, Scope, str]] = []

    def name(self, node: Node) -> str:
        return decode_identifier(self.data[node.start_byte:node.end_byte].decode("utf-8", "replace"))

    def run(self, root: Node) -> ScopeReport:
        self.stack.append((root, self.module, "expr"))
        while self.stack:
            node, scope, mode = self.stack.pop()
            if mode == "expr":
                self.expr(node, scope)
            else:
                self.pattern(node, scope, mode)
        return ScopeReport(self.module.names, self.references)

    def push_children(self, node: Node, scope: Scope, skip: tuple[Node | None, ...] = ()) -> None:
        skip_ids = {n.id for n in skip if n is not None}
        for child in reversed(node.named_children):
            if child.id not in skip_ids:
                self.stack.append((child, scope, "expr"))

    # -- patterns --------------------------------------------------------------------------
    def pattern(self, node: Node, scope: Scope, mode: str) -> None:
        ntype = node.type
        if ntype in ("identifier", "shorthand_property_identifier_pattern"):
            if mode == "target":
                self.references.append((self.name(node), node, scope))
            else:
                scope.names.add(self.name(node))
            return
        if ntype in ("assignment_pattern", "object_assignment_pattern"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is not None:
                self.stack.append((right, scope, "expr"))
            if left is not None:
                self.stack.append((left, scope, mode))
            return
        if ntype == "pair_pattern":
            key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
            if key is not None and key.type == "computed_property_name":
                self.stack.append((key, scope, "expr"))
            if value is not None:
                self.stack.append((value, scope, mode))
            return
        if ntype in ("object_pattern", "array_pattern", "rest_pattern"):
            for child in node.named_children:
                self.stack.append((child, scope, mode))
            return
        # anything else in a pattern position (member_expression targets, defaults...)
        self.stack.append((node, scope, "expr"))

    # -- expressions and statements ----------------------------------------------------------
    def expr(self, node: Node, scope: Scope) -> None:
        ntype = node.type
        if ntype in _SKIP:
            return
        if ntype in ("identifier", "shorthand_property_identifier"):
            self.references.append((self.name(node), node, scope))
            return
        if ntype in _FUNCTIONS:
            self.function(node, scope)
            return
        if ntype in ("class_declaration", "class"):
            name = node.child_by_field_name("name")
            inner = Scope("block", scope)
            if name is not None:
                (scope if ntype == "class_declaration" else inner).names.add(self.name(name))
                inner.names.add(self.name(name))
            self.push_children(node, inner, skip=(name,))
            return
        if ntype in ("variable_declaration", "lexical_declaration"):
            target = scope.var_scope() if ntype == "variable_declaration" else scope
            for declarator in node.named_children:
                if declarator.type != "variable_declarator":
                    continue
                name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
                if value is not None:
                    self.stack.append((value, scope, "expr"))
                if name is not None:
                    self.stack.append((name, target, "bind"))
            return
        if ntype == "for_in_statement":
            inner = Scope("block", scope)
            kind = node.child_by_field_name("kind")
            left = node.child_by_field_name("left")
            self.push_children(node, inner, skip=(left,))
            if left is not None:
                if kind is None:
                    self.stack.append((left, inner, "target"))
                else:
                    is_var = self.data[kind.start_byte:kind.end_byte] == b"var"
                    self.stack.append((left, inner.var_scope() if is_var else inner, "bind"))
            return
        if ntype == "assignment_expression" or ntype == "augmented_assignment_expression":
            left = node.child_by_field_name("left")
            self.push_children(node, scope, skip=(left,))
            if left is not None:
                self.stack.append((left, scope, "target"))
            return
        if ntype == "catch_clause":
            inner = Scope("block", scope)
            param = node.child_by_field_name("parameter")
            body = node.child_by_field_name("body")
            if body is not None:
                self.stack.append((body, inner, "expr"))
            if param is not None:
                self.stack.append((param, inner, "bind"))
            return
        if ntype == "import_statement":
            for child in _walk(node):
                if child.type == "import_specifier":
                    alias = child.child_by_field_name("alias") or child.child_by_field_name("name")
                    if alias is not None:
                        self.module.names.add(self.name(alias))
                elif child.type in ("import_clause", "namespace_import"):
                    for sub in child.named_children:
                        if sub.type == "identifier":
                            self.module.names.add(self.name(sub))
            return
        if ntype == "class_static_block":
            # a static block keeps its own `var`s, like a function body
            self.push_children(node, Scope("function", scope))
            return
        if ntype in _BLOCKS and ntype != "catch_clause":
            self.push_children(node, Scope("block", scope))
            return
        if ntype in ("property_identifier", "private_property_identifier", "statement_identifier"):
            return
        self.push_children(node, scope)

    def function(self, node: Node, scope: Scope) -> None:
        ntype = node.type
        name = node.child_by_field_name("name")
        outer = scope
        if name is not None and ntype in _DECLARED_FUNCTIONS:
            scope.names.add(self.name(name))
        elif name is not None and ntype in _NAMED_FUNCTION_EXPRESSIONS:
            outer = Scope("block", scope, {self.name(name)})
        inner = Scope("function", outer)
        if ntype != "arrow_function":
            inner.names.add("arguments")
        body = node.child_by_field_name("body")
        if body is not None:
            # the body block shares the function's scope (parameters and body lexicals
            # live together as far as name resolution is concerned)
            if body.type == "statement_block":
                self.push_children(body, inner)
            else:
                self.stack.append((body, inner, "expr"))
        if ntype == "method_definition":
            key = name
            if key is not None and key.type == "computed_property_name":
                self.stack.append((key, scope, "expr"))
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        if params is not None:
            if params.type == "formal_parameters":
                for p in params.named_children:
                    self.stack.append((p, inner, "bind"))
            else:
                self.stack.append((params, inner, "bind"))


def _walk(node: Node) -> list[Node]:
    out, todo = [], [node]
    while todo:
        cur = todo.pop()
        out.append(cur)
        todo.extend(cur.named_children)
    return out


def resolve(root: Node, data: bytes) -> ScopeReport:
    """Scopes of a parsed sketch: its module-level names and every reference."""
    resolver = _Resolver(data)
    report = resolver.run(root)
    return report
