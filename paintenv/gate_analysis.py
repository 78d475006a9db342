"""The static gate's walk over a sketch's JavaScript syntax tree (tree-sitter).

One pass over the named nodes records what each rule finds; checks that depend on what
the sketch declares anywhere wait in `pending` until the walk is done. Which names count
as what is in gate_rules.py; gate.py turns the findings into a verdict.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from paintenv.brush_api import (
    COLOUR_SOURCES_ALLOWLIST,
    COLOUR_SOURCES_KNOWN,
    CUSTOM_SHAPE_CALLS,
    SHAPE_CALLS_ALLOWLIST,
    SHAPE_CALLS_KNOWN,
)
from paintenv.gate_members import CALLABLE_TYPES, MemberChecks, Pending
from paintenv.gate_rules import (
    BARE,
    CANVAS_RESIZERS,
    CANVAS_SIZE,
    DOM_TEXT_CREATORS,
    EXTERNAL,
    FORBIDDEN,
    HARD_GLOBAL_OBJECTS,
    JUDGED_ELSEWHERE,
    MISSING_ENTRY,
    NO_PAINTING,
    NOT_WEBGL,
    PRIMITIVE_NAMES,
    RAW_RENDERER_PROPERTIES,
    SOFT_EXTERNAL_NAMES,
    SOFT_GLOBAL_OBJECTS,
    TEXT,
    TEXT_NAMES,
    TIMER_NAMES,
    TRUNCATED,
    UNKNOWN_BRUSH,
    URI_IN_STRING,
    is_external_name,
    is_loader,
)
from paintenv.js_syntax import (
    ASSIGN_TYPES,
    CALL_FIELDS,
    FUNCTION_LITERALS,
    MEMBER_TYPES,
    NAME_TYPES,
    THIS_SCOPES,
    NodeContext,
    unwrap,
)
from paintenv.scopes import ScopeReport, decode_identifier
from paintenv.sketch_api import SKETCH_API

__all__ = ["SketchAnalysis"]

_SKIP_TYPES = frozenset({"comment", "regex", "html_comment"})
_HANDLED_TYPES = frozenset(
    {
        "identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern",
        "member_expression", "subscript_expression", "call_expression", "this", "string",
        "template_string", "method_definition", "pair", "import_statement", "import",
        "assignment_expression", "binary_expression", "pair_pattern", "with_statement",
        "field_definition",
    }
)


class SketchAnalysis(MemberChecks):
    """What the rules find in one sketch: `run` walks the tree, then `resolve_pending`,
    `check_free_names` and `final_checks` judge what needs the whole sketch seen;
    `found` holds (code, message, node) for each finding."""

    def __init__(self, source: str, strictness: str, scopes: ScopeReport | None = None) -> None:
        self.scopes = scopes
        self.source = source
        self.strictness = strictness
        self.data = source.encode("utf-8", "replace")
        self.found: list[tuple[str, str, Node | None]] = []
        self.pending: list[Pending] = []
        self.declared: set[str] = set()
        self.defined_methods: set[str] = set()
        # every property name the sketch gives a value (object keys, fields, `o.k = v`)
        self.defined_keys: set[str] = set()
        # computed keys (`o[k]`, `{[k]: v} = o`) and the argument count of their call
        self.computed_keys: list[tuple[Node, int]] = []
        self.brush_calls: Counter[str] = Counter()
        self.brush_names: set[str] = set()
        self.has_setup = False
        self.lexical_setup: Node | None = None
        self.canvas_calls = 0

    # -- helpers -------------------------------------------------------------------------

    def text(self, node: Node) -> str:
        raw = self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        # `\u0072ect` names `rect`: identifiers are judged by what they spell
        return decode_identifier(raw) if node.type in NAME_TYPES else raw

    def add(self, code: str, message: str, node: Node | None) -> None:
        self.found.append((code, message, node))

    def position(self, node: Node | None) -> tuple[int | None, int | None]:
        if node is None:
            return None, None
        row, byte_col = node.start_point
        line_start = node.start_byte - byte_col
        col = len(self.data[line_start:node.start_byte].decode("utf-8", "replace")) + 1
        return row + 1, col

    def string_literal(self, node: Node | None) -> str | None:
        """The value of a plain string literal ('abc', "abc", `abc`), else None."""
        if node is None:
            return None
        node = unwrap(node)
        if node.type not in ("string", "template_string"):
            return None
        parts = []
        for child in node.named_children:
            if child.type != "string_fragment":
                return None  # escapes or ${...}: not a plain name
            parts.append(self.text(child))
        return "".join(parts)

    # -- the walk ------------------------------------------------------------------------

    def run(self, root: Node) -> None:
        if root.has_error:
            self.scan_errors(root)
        # Named nodes only (keywords and punctuation carry no names), iteratively: the
        # input may nest thousands deep.
        stack: list[tuple[Node, Node | None, int, bool]] = [(root, None, 0, False)]
        pop, push = stack.pop, stack.append
        while stack:
            node, parent, index, inst = pop()
            ntype = node.type
            if ntype in _SKIP_TYPES:
                continue
            if ntype in _HANDLED_TYPES:
                self.visit(node, ntype, NodeContext(parent, index, inst))
            kids = node.named_children
            if kids:
                inst = inst or ntype in THIS_SCOPES
                for i in range(len(kids) - 1, -1, -1):
                    push((kids[i], node, i, inst))

    def scan_errors(self, root: Node) -> None:
        """Report ERROR nodes (outermost only) and MISSING tokens of a broken tree."""
        cursor = root.walk()
        while True:
            node = cursor.node
            assert node is not None
            if node.type == "ERROR":
                self.add(TRUNCATED, "syntax error: unbalanced brackets, or an unterminated "
                         "string, template or comment", node)
            elif node.is_missing:
                self.add(TRUNCATED, f"missing {node.type!r}: the code ends early or is "
                         "unbalanced", node)
            elif node.has_error and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return

    def visit(self, node: Node, ntype: str, ctx: NodeContext) -> None:
        """Check one node of a type in _HANDLED_TYPES."""
        if ntype == "identifier":
            self.visit_identifier(node, ctx)
        elif ntype == "shorthand_property_identifier":  # `{rect}` reads rect
            self.visit_identifier(node, ctx, force_read=True)
        elif ntype == "shorthand_property_identifier_pattern":  # `{constructor} = f`
            self.declared.add(self.text(node))
            self.check_pattern_key(self.text(node), node)
        elif ntype == "pair_pattern":  # `{constructor: F} = f`, `{[k]: v} = o`
            key = node.child_by_field_name("key")
            if key is not None and key.type == "computed_property_name":
                inner = key.named_children[0] if key.named_children else None
                if inner is not None:
                    self.computed_keys.append((inner, -1))
            elif key is not None:
                self.check_pattern_key(self.string_literal(key) or self.text(key), key)
        elif ntype == "with_statement":
            self.add(FORBIDDEN, "`with` makes every name inside it a property lookup the gate "
                     "cannot resolve (and is a syntax error in the sketch's strict mode)", node)
        elif ntype == "field_definition":
            prop = node.child_by_field_name("property")
            if prop is not None:
                self.defined_keys.add(self.text(prop))
        elif ntype == "member_expression":
            self.visit_member(node, ctx)
        elif ntype == "subscript_expression":
            self.visit_subscript(node, ctx)
        elif ntype == "call_expression":
            self.visit_call(node, ctx)
        elif ntype == "this":
            self.visit_this(node, ctx)
        elif ntype in ("string", "template_string"):
            self.visit_string(node)
        elif ntype == "method_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                self.defined_methods.add(self.text(name))
        elif ntype == "binary_expression":
            left, op = node.child_by_field_name("left"), node.child_by_field_name("operator")
            if (left is not None and op is not None and self.text(op) == "/"
                    and unwrap(left).type in FUNCTION_LITERALS):
                # `() => {}` NEWLINE `/x/` is a division to tree-sitter and a regular
                # expression to V8 (which inserts a semicolon): a sketch could hide code
                # from this gate in the difference.
                self.add(EXTERNAL, "a function followed by `/` reads differently in the "
                         "browser (a regular expression)", node)
        elif ntype == "assignment_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type == "member_expression":
                prop = left.child_by_field_name("property")
                if prop is not None:
                    self.defined_keys.add(self.text(prop))
                    if right.type in CALLABLE_TYPES:
                        self.defined_methods.add(self.text(prop))
        elif ntype == "pair":
            key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
            if key is not None:
                self.defined_keys.add(self.string_literal(key) or self.text(key))
            if key is not None and value is not None and value.type in CALLABLE_TYPES:
                self.defined_methods.add(self.string_literal(key) or self.text(key))
        elif ntype in ("import_statement", "import"):
            self.add(EXTERNAL, "import loads code from elsewhere", node)

    # -- identifiers ---------------------------------------------------------------------

    def visit_identifier(self, node: Node, ctx: NodeContext, *, force_read: bool = False) -> None:
        name = self.text(node)
        parent = ctx.parent
        ptype = parent.type if parent is not None else ""
        if not force_read and ctx.is_binding():
            self.note_entry_point(name, node, ctx)
            if ptype not in ASSIGN_TYPES:
                self.declared.add(name)
                return  # a declaration reads nothing
            # `x = ...` without a declaration writes a global: harmless for new names,
            # but `location = url` navigates and `fetch = f` tampers, so those fall
            # through (and a soft name assigned this way does not count as declared).
            if not (is_external_name(name) or name in SOFT_EXTERNAL_NAMES
                    or name in SOFT_GLOBAL_OBJECTS):
                self.declared.add(name)
                return
        is_call = (ptype, ctx.field) in CALL_FIELDS
        is_member_object = ptype in MEMBER_TYPES and ctx.field == "object"

        if name == "brush":
            if not is_member_object:
                self.add(UNKNOWN_BRUSH, "`brush` used as a value: the methods called on it "
                         "cannot be checked", node)
            return
        if name in HARD_GLOBAL_OBJECTS:
            if not is_member_object:  # member access is judged by the property
                self.add(EXTERNAL, f"`{name}` used as a value escapes the gate", node)
            return
        if name in SOFT_GLOBAL_OBJECTS:
            if not is_member_object:
                self.pending.append(Pending(name, EXTERNAL,
                                             f"`{name}` is the window object", node))
            return
        if name == "p5":
            if not is_member_object:
                self.add(EXTERNAL, "using `p5` itself (e.g. a second instance) escapes the "
                         "gate", node)
            return
        if name in TIMER_NAMES:
            if not is_call:
                self.add(EXTERNAL, f"`{name}` used as a value", node)
            return
        self.check_global_name(name, node, is_call=is_call, via=None)

    def check_global_name(self, name: str, node: Node, *, is_call: bool,
                          via: str | None, always: bool = False) -> None:
        """Judge a read of a global name, bare (via=None) or as `window.name` etc."""
        shown = f"{via}.{name}" if via else name
        if is_external_name(name):
            self.add(EXTERNAL, f"`{shown}` reaches outside the sketch", node)
            if name in DOM_TEXT_CREATORS:
                self.add(TEXT, f"`{shown}` puts text on the page", node)
            return
        if name in SOFT_EXTERNAL_NAMES:
            if always:
                self.add(EXTERNAL, f"`{shown}` reaches outside the sketch", node)
            else:
                self.pending.append(Pending(name, EXTERNAL,
                                             f"`{shown}` reaches outside the sketch", node))
            return
        if name in RAW_RENDERER_PROPERTIES:
            message = f"`{shown}` draws on the renderer directly"
            if via or always:
                self.add(BARE, message, node)
            else:
                self.pending.append(Pending(name, BARE, message, node))
            return
        for names, code, what in ((PRIMITIVE_NAMES, BARE, "draws without the brush"),
                                  (TEXT_NAMES, TEXT, "draws text"),
                                  (CANVAS_RESIZERS, CANVAS_SIZE, "changes the 600 x 600 canvas")):
            if name in names:
                if is_call or always:
                    self.add(code, f"`{shown}` {what}" + ("" if code == CANVAS_SIZE else "; use brush.* calls"), node)
                else:
                    self.pending.append(Pending(
                        name, code, f"`{shown}` refers to p5's function, which {what}",
                        node))
                return
        if via and name == "brush":
            self.add(UNKNOWN_BRUSH, f"`{shown}` aliases the brush object", node)
        elif via and name == "p5":
            self.add(EXTERNAL, f"`{shown}` reaches p5 internals", node)
        elif name in TIMER_NAMES and via and not is_call:
            self.add(EXTERNAL, f"`{shown}` used as a value", node)

    def note_entry_point(self, name: str, node: Node, ctx: NodeContext) -> None:
        if name != "setup" or ctx.parent is None:
            return
        ptype = ctx.parent.type
        if ptype == "assignment_expression":
            self.has_setup = True
        elif ptype in ("function_declaration", "function_expression",
                       "generator_function_declaration"):
            # a named function expression is what tree-sitter makes of a declaration
            # whose closing brace is missing; the truncation is reported separately
            grand = ctx.parent.parent
            if grand is not None and (grand.type == "program" or (
                    grand.type == "expression_statement" and grand.parent is not None
                    and grand.parent.type == "program")):
                self.has_setup = True
        elif ptype == "variable_declarator":
            decl = ctx.parent.parent
            if decl is not None and decl.parent is not None and decl.parent.type == "program":
                if decl.type == "variable_declaration":  # var: a property of window
                    self.has_setup = True
                else:  # let/const: global, but not window.setup, which p5 looks for
                    self.lexical_setup = node

    # -- members -------------------------------------------------------------------------

    def global_object_name(self, obj: Node, ctx_this_instance: bool) -> tuple[str | None, bool]:
        """If `obj` denotes the window (or p5 internals), its display name and whether
        that is certain (False: a soft name that the sketch may declare itself)."""
        obj = unwrap(obj)
        otype = obj.type
        if otype == "identifier":
            name = self.text(obj)
            if name in HARD_GLOBAL_OBJECTS:
                return name, True
            if name in SOFT_GLOBAL_OBJECTS:
                return name, False
            return None, True
        if otype == "this":
            return (None, True) if ctx_this_instance else ("this", True)
        if otype == "member_expression":
            inner, prop = obj.child_by_field_name("object"), obj.child_by_field_name("property")
            if (inner is not None and prop is not None and inner.type == "identifier"
                    and self.text(inner) == "p5"
                    and self.text(prop) in ("prototype", "instance")):
                return f"p5.{self.text(prop)}", True
        return None, True

    def visit_this(self, node: Node, ctx: NodeContext) -> None:
        parent = ctx.parent
        if parent is None or ctx.this_is_instance:
            return
        # `this` at top level or in setup() is the window; a bare use lets it escape.
        if parent.type in MEMBER_TYPES and ctx.field == "object":
            return
        # Anything else lets `this` escape as a value (passed, returned, aliased,
        # destructured): outside classes and methods it can only mean the window.
        self.add(EXTERNAL, "`this` outside a class or method used as a value escapes the "
                 "gate", node)

    def visit_string(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "string_fragment":
                if URI_IN_STRING.search(self.text(child)):
                    self.add(EXTERNAL, "a data: or javascript: URI in a string", node)
                    return

    # -- after the walk ------------------------------------------------------------------

    def declares(self, item: Pending) -> bool:
        """Does a declaration of the sketch's own bind the name this item reads? Decided
        by scope when the resolver saw the identifier, else by any declaration."""
        ref = item.ref if item.ref is not None else item.node
        if self.scopes is not None and ref.type in ("identifier", "shorthand_property_identifier"):
            return not self.scopes.is_free(ref)
        return item.name in self.declared

    def resolve_pending(self) -> None:
        self.check_computed_keys()
        for item in self.pending:
            if item.kind == "global_member":  # self.rect, top.fetch, ...
                if not self.declares(item):
                    self.check_global_name(item.message, item.node, is_call=True,
                                           via=item.name, always=True)
            elif item.kind == "method":  # pg.rect(...), checked against methods
                if item.name not in self.defined_methods:
                    self.add(item.code, item.message, item.node)
            elif not self.declares(item):
                self.add(item.code, item.message, item.node)

    def check_free_names(self) -> None:
        """The allowlist: every global the sketch reads is in sketch_api.json. Names an
        earlier rule already judges (primitives, text, external, the window) keep that
        rule's code; any other outside name is `forbidden_api`."""
        if self.scopes is None or any(code == TRUNCATED for code, _m, _n in self.found):
            return  # on a broken tree, error recovery invents and loses names
        allowed = SKETCH_API.allowed_globals
        for name, node in self.scopes.free():
            if name in allowed or name in JUDGED_ELSEWHERE or is_loader(name):
                continue
            self.add(FORBIDDEN, f"`{name}` is not part of the sketch API (sketch_api.json)",
                     node)
        for name, node in self.scopes.free_writes:
            if name in allowed:  # `floor = () => ...` would change what the gate trusts
                self.add(FORBIDDEN, f"assigning to `{name}` replaces part of the sketch API; "
                         "declare a name of your own", node)

    def final_checks(self) -> None:
        # On a broken tree, error recovery can swallow a whole `function setup` into an
        # ERROR node, so "X is absent" would be noise next to `truncated`.
        if any(code == TRUNCATED for code, _m, _n in self.found):
            return
        if not self.has_setup and self.lexical_setup is not None:
            self.add(MISSING_ENTRY, "a top-level `let`/`const` setup is not window.setup, so "
                     "p5 never calls it; write `function setup()`", self.lexical_setup)
        elif not self.has_setup:
            self.add(MISSING_ENTRY, "no `function setup()` (p5 never starts the sketch)",
                     None)
        if self.canvas_calls == 0:
            self.add(NOT_WEBGL, "no createCanvas(w, h, WEBGL) call", None)
        known = self.strictness == "known"
        colours = COLOUR_SOURCES_KNOWN if known else COLOUR_SOURCES_ALLOWLIST
        shapes = SHAPE_CALLS_KNOWN if known else SHAPE_CALLS_ALLOWLIST
        used = set(self.brush_calls)
        has_colour = bool(used & colours)
        has_shape = bool(used & shapes) or CUSTOM_SHAPE_CALLS <= used
        if not (has_colour and has_shape):
            missing = []
            if not has_colour:
                missing.append("no brush.fill(...)")
            if not has_shape:
                missing.append("no brush.circle(...) or beginShape/vertex/endShape")
            self.add(NO_PAINTING, "nothing can paint: " + " and ".join(missing), None)
