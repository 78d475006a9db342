"""Which names a sketch declares where, which of its names are free (globals), and what
each of its own bindings is ever given.

A small scope resolver over the tree-sitter syntax tree, for sketches run as ES modules
(strict mode): `var` belongs to the nearest function body (or the module),
`let`/`const`/`class` and function declarations inside blocks to their block, a named
function expression's name to the function itself, `arguments` to every non-arrow
function. Parameters live in a scope of their own, outside the body: a default value
(`function f(g = createGraphics) { var createGraphics; }`) reads the names around the
function, never the body's, as JavaScript does for parameter expressions. Identifiers are
compared after decoding `\\uXXXX` and `\\u{X}` escapes, as JavaScript does, so
`\\u0072ect` is `rect`.

Every binding keeps its writes (`Write`): the initialiser, each assignment, a parameter's
position, "unknown" where a pattern or a loop hands it a value the resolver does not
follow. The gate's key analysis (gate_keys.py) reads them to tell whether a computed
property name can ever be a string.
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


@dataclass(frozen=True)
class Write:
    """One way a binding gets a value.

    op: "=" (node is the value), a compound operator such as "+=" (node is the right-hand
    side), "++" (an update), "undefined" (declared without a value), "param" (node is the
    function, index the parameter's position), "element" / "keys" (node is what a for-of /
    for-in loop goes over), "function" / "class" (a declaration), "unknown" (a pattern, a
    catch parameter, `arguments`: values the resolver does not follow)."""

    op: str
    node: Node | None = None
    index: int = 0


@dataclass(eq=False)
class Binding:
    name: str
    writes: list[Write] = field(default_factory=list)
    reads: list[Node] = field(default_factory=list)  # identifier nodes that resolve here


@dataclass(eq=False)
class Scope:
    kind: str  # "module" | "function" | "params" | "block"
    parent: Scope | None
    bindings: dict[str, Binding] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        return set(self.bindings)

    def declare(self, name: str, write: Write) -> Binding:
        binding = self.bindings.get(name)
        if binding is None:
            binding = self.bindings[name] = Binding(name)
            if (self.kind == "function" and self.parent is not None and self.parent.kind == "params"
                    and name in self.parent.bindings):
                # `var x` in a body whose function has a parameter x starts with its value
                binding.writes.append(Write("unknown"))
        binding.writes.append(write)
        return binding

    def var_scope(self) -> Scope:
        scope = self
        while scope.kind == "block" and scope.parent is not None:
            scope = scope.parent
        return scope

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            binding = scope.bindings.get(name)
            if binding is not None:
                return binding
            scope = scope.parent
        return None

    def resolves(self, name: str) -> bool:
        return self.lookup(name) is not None


@dataclass
class ScopeReport:
    module_names: set[str]
    # identifier / shorthand_property_identifier nodes that read or assign a name
    references: list[tuple[str, Node, Scope]]
    # node id of a reference -> the binding it resolves to (free names are absent)
    resolved: dict[int, Binding] = field(default_factory=dict)
    # node id of a declaring identifier -> its binding
    declarations: dict[int, Binding] = field(default_factory=dict)
    # assignments and updates of names no declaration binds: writes to globals
    free_writes: list[tuple[str, Node]] = field(default_factory=list)

    def free(self) -> list[tuple[str, Node]]:
        """References that no declaration of the sketch resolves: globals."""
        return [(name, node) for name, node, _scope in self.references if node.id not in self.resolved]

    def is_free(self, node: Node) -> bool:
        """Whether this identifier node reads a global (True for nodes never seen)."""
        return node.id not in self.resolved

    def binding_of(self, node: Node) -> Binding | None:
        """The binding an identifier reads, or the one it declares; None for a global."""
        return self.resolved.get(node.id) or self.declarations.get(node.id)


class _Resolver:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.module = Scope("module", None)
        self.references: list[tuple[str, Node, Scope]] = []
        self.declarations: dict[int, Binding] = {}
        # assignments wait for the walk to end: the binding they write may be hoisted later
        self.assignments: list[tuple[Node, Scope, Write]] = []
        # (node, scope, mode, write): mode "expr" walks an expression or statement, "bind"
        # declares a pattern's identifiers in `scope` with `write` (its value, when the
        # pattern is a bare identifier), "target" treats a pattern's identifiers as
        # assignment targets (references) written with `write`.
        self.stack: list[tuple[Node, Scope, str, Write | None]] = []

    def name(self, node: Node) -> str:
        return decode_identifier(self.data[node.start_byte:node.end_byte].decode("utf-8", "replace"))

    def declare(self, scope: Scope, node: Node, write: Write) -> None:
        self.declarations[node.id] = scope.declare(self.name(node), write)

    def run(self, root: Node) -> ScopeReport:
        self.stack.append((root, self.module, "expr", None))
        while self.stack:
            node, scope, mode, write = self.stack.pop()
            if mode == "expr":
                self.expr(node, scope)
            else:
                self.pattern(node, scope, mode, write or Write("unknown"))
        resolved: dict[int, Binding] = {}
        for name, node, scope in self.references:
            binding = scope.lookup(name)
            if binding is not None:
                resolved[node.id] = binding
                binding.reads.append(node)
        free_writes = []
        for node, scope, write in self.assignments:
            binding = scope.lookup(self.name(node))
            if binding is not None:
                binding.writes.append(write)
            else:
                free_writes.append((self.name(node), node))
        return ScopeReport(self.module.names, self.references, resolved, self.declarations, free_writes)

    def push_children(self, node: Node, scope: Scope, skip: tuple[Node | None, ...] = ()) -> None:
        skip_ids = {n.id for n in skip if n is not None}
        for child in reversed(node.named_children):
            if child.id not in skip_ids:
                self.stack.append((child, scope, "expr", None))

    # -- patterns --------------------------------------------------------------------------
    def pattern(self, node: Node, scope: Scope, mode: str, write: Write) -> None:
        ntype = node.type
        if ntype in ("identifier", "shorthand_property_identifier_pattern"):
            if ntype != "identifier":
                write = Write("unknown")  # `{ key }`: a property of something
            if mode == "target":
                self.references.append((self.name(node), node, scope))
                self.assignments.append((node, scope, write))
            else:
                self.declare(scope, node, write)
            return
        if ntype in ("assignment_pattern", "object_assignment_pattern"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is not None:
                self.stack.append((right, scope, "expr", None))
            if left is not None:
                self.stack.append((left, scope, mode, write))
                if right is not None and left.type == "identifier":  # the default is a write too
                    if mode == "target":
                        self.assignments.append((left, scope, Write("=", right)))
                    else:
                        self.stack.append((left, scope, mode, Write("=", right)))
            return
        if ntype == "pair_pattern":
            key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
            if key is not None and key.type == "computed_property_name":
                self.stack.append((key, scope, "expr", None))
            if value is not None:
                self.stack.append((value, scope, mode, Write("unknown")))
            return
        if ntype in ("object_pattern", "array_pattern", "rest_pattern"):
            for child in node.named_children:
                self.stack.append((child, scope, mode, Write("unknown")))
            return
        # anything else in a pattern position (member_expression targets, defaults...)
        self.stack.append((node, scope, "expr", None))

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
                if ntype == "class_declaration":
                    self.declare(scope, name, Write("class", node))
                self.declare(inner, name, Write("class", node))
            self.push_children(node, inner, skip=(name,))
            return
        if ntype in ("variable_declaration", "lexical_declaration"):
            target = scope.var_scope() if ntype == "variable_declaration" else scope
            for declarator in node.named_children:
                if declarator.type != "variable_declarator":
                    continue
                name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
                if value is not None:
                    self.stack.append((value, scope, "expr", None))
                if name is not None:
                    write = Write("=", value) if value is not None else Write("undefined")
                    self.stack.append((name, target, "bind", write))
            return
        if ntype == "for_in_statement":
            inner = Scope("block", scope)
            kind = node.child_by_field_name("kind")
            left = node.child_by_field_name("left")
            operator = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
            of = operator is not None and self.data[operator.start_byte:operator.end_byte] == b"of"
            write = Write("element" if of else "keys", right) if right is not None else Write("unknown")
            self.push_children(node, inner, skip=(left,))
            if left is not None:
                if kind is None:
                    self.stack.append((left, inner, "target", write))
                else:
                    is_var = self.data[kind.start_byte:kind.end_byte] == b"var"
                    self.stack.append((left, inner.var_scope() if is_var else inner, "bind", write))
            return
        if ntype in ("assignment_expression", "augmented_assignment_expression"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            operator = node.child_by_field_name("operator")
            op = "=" if operator is None else self.data[operator.start_byte:operator.end_byte].decode()
            self.push_children(node, scope, skip=(left,))
            if left is not None:
                self.stack.append((left, scope, "target", Write(op, right)))
            return
        if ntype == "update_expression":
            argument = node.child_by_field_name("argument")
            if argument is not None and argument.type == "identifier":
                self.assignments.append((argument, scope, Write("++")))
            self.push_children(node, scope)
            return
        if ntype == "catch_clause":
            inner = Scope("block", scope)
            param = node.child_by_field_name("parameter")
            body = node.child_by_field_name("body")
            if body is not None:
                self.stack.append((body, inner, "expr", None))
            if param is not None:
                self.stack.append((param, inner, "bind", Write("unknown")))
            return
        if ntype == "import_statement":
            for child in _walk(node):
                if child.type == "import_specifier":
                    alias = child.child_by_field_name("alias") or child.child_by_field_name("name")
                    if alias is not None:
                        self.declare(self.module, alias, Write("unknown"))
                elif child.type in ("import_clause", "namespace_import"):
                    for sub in child.named_children:
                        if sub.type == "identifier":
                            self.declare(self.module, sub, Write("unknown"))
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
            self.declare(scope, name, Write("function", node))
        elif name is not None and ntype in _NAMED_FUNCTION_EXPRESSIONS:
            outer = Scope("block", scope)
            self.declare(outer, name, Write("function", node))
        # Parameters (and `arguments`) in their own scope; the body's declarations in a
        # scope inside it, so a parameter's default never sees them.
        params_scope = Scope("params", outer)
        if ntype != "arrow_function":
            params_scope.declare("arguments", Write("unknown"))
        inner = Scope("function", params_scope)
        body = node.child_by_field_name("body")
        if body is not None:
            if body.type == "statement_block":
                self.push_children(body, inner)
            else:
                self.stack.append((body, inner, "expr", None))
        if ntype == "method_definition":
            key = name
            if key is not None and key.type == "computed_property_name":
                self.stack.append((key, scope, "expr", None))
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        if params is not None:
            if params.type == "formal_parameters":
                for index, p in enumerate(c for c in params.named_children if c.type != "comment"):
                    self.stack.append((p, params_scope, "bind", Write("param", node, index)))
            else:
                self.stack.append((params, params_scope, "bind", Write("param", node, 0)))


def _walk(node: Node) -> list[Node]:
    out, todo = [], [node]
    while todo:
        cur = todo.pop()
        out.append(cur)
        todo.extend(cur.named_children)
    return out


def resolve(root: Node, data: bytes) -> ScopeReport:
    """Scopes of a parsed sketch: its module-level names, every reference and what each
    binding is given."""
    return _Resolver(data).run(root)
