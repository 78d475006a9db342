"""Can a computed property name be a string, and which?

`obj[key]` and `const {[key]: v} = obj` reach whatever property `key` names. A number or
a plain string literal says what that is; anything else may be `"constructor"` built
without a string literal in sight (`String.fromCharCode(...)`, `(1057).toString(36)`,
`Object.keys({constructor: 0})[0]`, a for-in key, a function's `.name`, `[] + {}`
sliced...), and from `constructor` the sketch reaches the Function constructor. So the
gate accepts a computed key only when every value it can take is known: numbers (and
other non-strings: booleans, undefined, null) or strings from a known, finite set.

`KeyValues.strings(node)` answers with that set (empty: never a string) or None (could
be anything). It follows the sketch's own bindings through every write scopes.py
recorded: `let i = 0; i++` is a number, `const k = "fill"` is {"fill"}, a loop
counter passed to a helper makes that parameter a number when every call passes one, and
the index parameter of an array method's callback (`forEach((v, i) => ...)`) is a
number. What it does not follow (destructuring, for-in keys, values read from objects or
arrays, calls of the sketch's own functions with unknown returns) is None, so the gate
refuses: legitimate sketches index arrays with numbers.
"""
from __future__ import annotations

from itertools import product

from tree_sitter import Node

from paintenv.js_syntax import unwrap
from paintenv.scopes import Binding, ScopeReport, Write

__all__ = ["KeyValues"]

Strings = frozenset[str] | None  # None: unknown; frozenset(): never a string

NOTHING: frozenset[str] = frozenset()
_TYPEOF = frozenset({"number", "string", "function", "object", "undefined", "boolean", "symbol",
                     "bigint"})
# Operators whose result is never a string (numbers, booleans).
_NUMERIC_BINARY = frozenset({"-", "*", "/", "%", "**", "&", "|", "^", "<<", ">>", ">>>", "==", "!=",
                             "===", "!==", "<", ">", "<=", ">=", "in", "instanceof"})
_PASS_THROUGH_BINARY = frozenset({"&&", "||", "??"})
_NUMERIC_COMPOUND = frozenset({"-=", "*=", "/=", "%=", "**=", "<<=", ">>=", ">>>=", "&=", "|=", "^="})
# Free globals that are never strings.
_NUMERIC_GLOBALS = frozenset({"PI", "TWO_PI", "HALF_PI", "QUARTER_PI", "TAU", "width", "height",
                              "frameCount", "NaN", "Infinity", "undefined"})
# p5 maths that return a number whatever they are given (`max([..])` too).
_NUMERIC_P5 = frozenset({"abs", "ceil", "constrain", "dist", "exp", "floor", "fract", "lerp", "log",
                         "mag", "map", "max", "min", "norm", "pow", "round", "sq", "sqrt", "sin", "cos",
                         "tan", "asin", "acos", "atan", "atan2", "degrees", "radians", "noise",
                         "randomGaussian", "parseInt", "parseFloat", "isNaN", "isFinite", "Number",
                         "Boolean"})
# Built-in methods that return numbers (or booleans) on the objects that have them.
_NUMERIC_METHODS = frozenset({"indexOf", "lastIndexOf", "findIndex", "findLastIndex", "includes",
                              "charCodeAt", "codePointAt", "has", "some", "every", "isInteger",
                              "isFinite", "isNaN", "isSafeInteger", "parseInt", "parseFloat"})
# Array methods whose callback's parameter at this position is an index.
_INDEX_PARAM = {"forEach": 1, "map": 1, "filter": 1, "some": 1, "every": 1, "find": 1, "findIndex": 1,
                "findLast": 1, "findLastIndex": 1, "flatMap": 1, "reduce": 2, "reduceRight": 2}
# Methods that change an array or object in place (a literal's binding that calls one no
# longer holds just what the literal says).
_MUTATORS = frozenset({"push", "pop", "shift", "unshift", "splice", "fill", "sort", "reverse",
                       "copyWithin", "set", "delete", "add", "clear"})
_MAX_STRINGS = 64
# Rounds of the fixpoint: each is one pass over every write of the sketch; a chain of
# bindings feeding one another settles in about as many rounds as it is long.
_MAX_ROUNDS = 40


def _union(parts: list[Strings]) -> Strings:
    out: set[str] = set()
    for part in parts:
        if part is None:
            return None
        out |= part
    return frozenset(out)


class KeyValues:
    """What a key expression can be, over one sketch's scopes. `defined` holds the names
    of the sketch's own methods and properties: a method the sketch defines (say
    `indexOf`) no longer counts as a built-in that returns a number."""

    def __init__(self, scopes: ScopeReport, data: bytes, defined: set[str]) -> None:
        self.scopes = scopes
        self.data = data
        self.defined = defined
        self._values: dict[int, Strings] | None = None  # binding id -> what it can hold

    def text(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def strings(self, node: Node) -> Strings:
        node = unwrap(node)
        t = node.type
        if t in ("number", "true", "false", "null", "undefined"):
            return NOTHING
        if t in ("string", "template_string"):
            return self.literal(node)
        if t == "identifier":
            return self.identifier(node)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            return _TYPEOF if op is not None and self.text(op) == "typeof" else NOTHING
        if t == "update_expression":
            return NOTHING
        if t == "binary_expression":
            return self.binary(node)
        if t == "ternary_expression":
            return _union([self.strings(n) for n in (node.child_by_field_name("consequence"),
                                                     node.child_by_field_name("alternative"))
                           if n is not None])
        if t in ("assignment_expression", "augmented_assignment_expression"):
            op = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
            write = Write("=" if op is None else self.text(op), right)
            return self.write(write)
        if t == "sequence_expression":
            last = node.named_children[-1] if node.named_children else None
            return self.strings(last) if last is not None else None
        if t == "member_expression":
            prop = node.child_by_field_name("property")
            if prop is not None and self.text(prop) == "length" and "length" not in self.defined:
                return NOTHING
            return None
        if t == "call_expression":
            return self.call(node)
        return None

    def literal(self, node: Node) -> Strings:
        parts = []
        for child in node.named_children:
            if child.type != "string_fragment":
                return None  # escapes or ${...}
            parts.append(self.text(child))
        return frozenset({"".join(parts)})

    def binary(self, node: Node) -> Strings:
        op_node = node.child_by_field_name("operator")
        op = self.text(op_node) if op_node is not None else ""
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in _NUMERIC_BINARY:
            return NOTHING
        if left is None or right is None:
            return None
        a, b = self.strings(left), self.strings(right)
        if op in _PASS_THROUGH_BINARY:
            return _union([a, b])
        if op == "+":
            if a == NOTHING and b == NOTHING:
                return NOTHING  # number + number
            if a and b and len(a) * len(b) <= _MAX_STRINGS:
                return frozenset(x + y for x, y in product(a, b))  # literal + literal
        return None

    def call(self, node: Node) -> Strings:
        callee = node.child_by_field_name("function")
        if callee is None:
            return None
        callee = unwrap(callee)
        if callee.type == "identifier" and self.scopes.is_free(callee):
            name = self.text(callee)
            if name in _NUMERIC_P5:
                return NOTHING
            if name == "random":  # random(array) returns an element: only numbers in, number out
                args = node.child_by_field_name("arguments")
                values = [a for a in (args.named_children if args else []) if a.type != "comment"]
                return NOTHING if all(self.strings(a) == NOTHING for a in values) else None
            return None
        if callee.type == "member_expression":
            obj, prop = callee.child_by_field_name("object"), callee.child_by_field_name("property")
            if obj is None or prop is None:
                return None
            method = self.text(prop)
            if (obj.type == "identifier" and self.text(obj) in ("Math", "Number")
                    and self.scopes.is_free(obj) and method not in self.defined):
                return NOTHING  # (`Math.floor = () => "x"` would make it a method of the sketch's)
            if method in _NUMERIC_METHODS and method not in self.defined:
                return NOTHING
        return None

    # -- the sketch's own bindings -----------------------------------------------------

    def identifier(self, node: Node) -> Strings:
        binding = self.scopes.binding_of(node)
        if binding is None:
            return NOTHING if self.text(node) in _NUMERIC_GLOBALS else None
        if self._values is None:
            self._values = {}
            self._solve()
        return self._values.get(id(binding), NOTHING)

    def _solve(self) -> None:
        """What every binding can hold: the least fixpoint over all their writes (loops and
        recursion feed a binding back into itself), starting from "never a string". Each
        round only widens a value (a set grows, or becomes None past _MAX_STRINGS); a
        sketch that has not settled after _MAX_ROUNDS gets None everywhere."""
        assert self._values is not None
        everything = [*self.scopes.declarations.values(), *self.scopes.resolved.values()]
        bindings = list({id(b): b for b in everything}.values())
        values = self._values
        for b in bindings:
            values[id(b)] = NOTHING
        for _round in range(_MAX_ROUNDS):
            changed = False
            for b in bindings:
                old = values[id(b)]
                if old is None:
                    continue
                new = _union([old, *(self.write(w) for w in b.writes)])
                if new is not None and len(new) > _MAX_STRINGS:
                    new = None
                if new != old:
                    values[id(b)] = new
                    changed = True
            if not changed:
                return
        for b in bindings:
            values[id(b)] = None

    def write(self, write: Write) -> Strings:
        op, node = write.op, write.node
        if op in ("undefined", "++") or op in _NUMERIC_COMPOUND:
            return NOTHING
        if op == "=" and node is not None:
            return self.strings(node)
        if op in ("+=", "||=", "&&=", "??=") and node is not None:
            # `k += x` keeps k a number only when x is one; a string appended is unknown
            return NOTHING if self.strings(node) == NOTHING else None
        if op == "param" and node is not None:
            return self.parameter(node, write.index)
        if op == "element" and node is not None:
            return self.elements(node)
        if op == "keys" and node is not None:
            return self.keys(node)
        return None

    def elements(self, node: Node) -> Strings:
        """What a for-of loop over `node` hands its variable: the elements of an array
        literal, or the keys of an object literal through `Object.keys(...)`."""
        node = unwrap(node)
        if node.type == "call_expression":
            callee, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
            values = [a for a in (args.named_children if args else []) if a.type != "comment"]
            if (callee is not None and self.text(callee) == "Object.keys" and len(values) == 1
                    and self.scopes.is_free(callee.child_by_field_name("object"))):
                return self.keys(values[0])
            return None
        literal = self.literal_of(node, "array")
        if literal is None:
            return None
        values = [c for c in literal.named_children if c.type != "comment"]
        if any(v.type == "spread_element" for v in values):
            return None
        return _union([self.strings(v) for v in values])

    def keys(self, node: Node) -> Strings:
        """The property names a for-in loop over `node` (or `Object.keys(node)`) gives: an
        object literal's own keys, when they are all written out."""
        literal = self.literal_of(node, "object")
        if literal is None:
            return None
        names: set[str] = set()
        for member in literal.named_children:
            if member.type == "comment":
                continue
            key = member.child_by_field_name("key") or member.child_by_field_name("name")
            if member.type == "shorthand_property_identifier":
                key = member
            if key is None or key.type not in ("property_identifier", "string", "number",
                                               "shorthand_property_identifier"):
                return None  # a computed key, a spread, ...
            name = self.literal(key) if key.type == "string" else frozenset({self.text(key)})
            if name is None:
                return None
            names |= name
        return frozenset(names)

    def literal_of(self, node: Node, kind: str) -> Node | None:
        """`node` itself when it is an array / object literal, or the literal a binding
        holds when that binding is only ever read (never written into, passed anywhere or
        mutated in place), so what the literal says is all it will ever hold."""
        node = unwrap(node)
        if node.type == kind:
            return node
        if node.type != "identifier":
            return None
        binding = self.scopes.binding_of(node)
        if binding is None or len(binding.writes) != 1 or binding.writes[0].op != "=":
            return None
        value = binding.writes[0].node
        if value is None or unwrap(value).type != kind:
            return None
        return unwrap(value) if all(self.read_only(read) for read in binding.reads) else None

    def read_only(self, read: Node) -> bool:
        """Whether this use of a literal's binding leaves the literal as it was written."""
        parent = read.parent
        if parent is None:
            return False
        ptype = parent.type
        if ptype == "for_in_statement":
            right = parent.child_by_field_name("right")
            return right is not None and right.id == read.id
        if ptype == "arguments":  # Object.keys(X) only
            call = parent.parent
            callee = call.child_by_field_name("function") if call is not None else None
            return callee is not None and self.text(callee) == "Object.keys"
        if ptype not in ("member_expression", "subscript_expression"):
            return False
        obj = parent.child_by_field_name("object")
        if obj is None or obj.id != read.id:
            return False
        holder = parent.parent
        if holder is not None and holder.type in ("assignment_expression",
                                                  "augmented_assignment_expression",
                                                  "update_expression"):
            target = holder.child_by_field_name("left") or holder.child_by_field_name("argument")
            if target is not None and target.id == parent.id:
                return False  # X[i] = v
        prop = parent.child_by_field_name("property")
        return prop is None or self.text(prop) not in _MUTATORS

    def parameter(self, function: Node, index: int) -> Strings:
        """A parameter: the index of an array method's callback, or whatever every call of
        a function that is only ever called directly passes at that position."""
        parent = function.parent
        if parent is not None and parent.type == "arguments":
            call = parent.parent
            callee = call.child_by_field_name("function") if call is not None else None
            if callee is not None and callee.type == "member_expression":
                prop = callee.child_by_field_name("property")
                method = self.text(prop) if prop is not None else ""
                if _INDEX_PARAM.get(method) == index and method not in self.defined:
                    return NOTHING
            return None
        binding = self.function_binding(function)
        if binding is None or not binding.reads:
            return None  # never called by the sketch (p5 or the page may call it)
        passed: list[Strings] = []
        for read in binding.reads:
            call = read.parent
            if call is None or call.type not in ("call_expression", "new_expression"):
                return None  # passed around as a value: called with anything
            field = "function" if call.type == "call_expression" else "constructor"
            callee = call.child_by_field_name(field)
            if callee is None or callee.id != read.id:
                return None
            args = call.child_by_field_name("arguments")
            values = [a for a in (args.named_children if args else []) if a.type != "comment"]
            if any(v.type == "spread_element" for v in values[: index + 1]):
                return None
            passed.append(self.strings(values[index]) if index < len(values) else NOTHING)
        return _union(passed)

    def function_binding(self, function: Node) -> Binding | None:
        """The binding that names `function`, when it is its only value."""
        if function.type in ("function_declaration", "generator_function_declaration"):
            name = function.child_by_field_name("name")
        else:
            declarator = function.parent
            if declarator is None or declarator.type != "variable_declarator":
                return None
            name = declarator.child_by_field_name("name")
        if name is None or name.type != "identifier":
            return None
        binding = self.scopes.binding_of(name)
        if binding is None or len(binding.writes) != 1:
            return None
        return binding
