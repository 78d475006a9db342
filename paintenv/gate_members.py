"""The static gate's rules for member access, subscripts, destructuring keys and calls: what a
sketch reaches through `obj.name`, `obj[key]`, `{name: x} = obj` and `f(...)`.

Mixed into `SketchAnalysis` (gate_analysis.py), whose walk calls these visitors; they record
findings with its `add` and read its `text`, `scopes`, `pending` and `found`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from paintenv.brush_api import (
    ALLOWED_BRUSH_METHODS,
    KNOWN_BRUSH_METHODS,
)
from paintenv.gate_keys import KeyValues
from paintenv.gate_rules import (
    BARE,
    CANVAS_SIZE,
    CANVAS_UNITS,
    DISALLOWED_BRUSH,
    EXTERNAL,
    EXTERNAL_PROPERTIES,
    FORBIDDEN,
    NOT_WEBGL,
    PRIMITIVE_NAMES,
    PROBE_PROPERTIES,
    RAW_RENDERER_PROPERTIES,
    TEXT,
    TEXT_NAMES,
    TIMER_NAMES,
    UNKNOWN_BRUSH,
    is_external_name,
    is_loader,
)
from paintenv.js_syntax import (
    NodeContext,
    unwrap,
)

# Arguments that cannot be a colour (background(img), background({toString() {...}})).
_NON_COLOUR_TYPES = frozenset({"object", "array", "arrow_function", "function_expression",
                               "function", "new_expression", "class", "generator_function"})
# Expressions that are fine as a timer callback (anything else may be a code string).
CALLABLE_TYPES = frozenset(
    {"arrow_function", "function_expression", "function", "identifier", "member_expression",
     "generator_function"}
)


@dataclass
class Pending:
    """A check that depends on names declared anywhere in the sketch."""

    name: str  # the name whose declaration (or method definition) decides
    code: str
    message: str
    node: Node
    # "undeclared": report unless the sketch declares `name`;
    # "global_member": `name` is a soft window alias (self, top, ...) and `message`
    #     the property read on it: judge it as window.<property> unless declared;
    # "method": report unless the sketch defines a method called `name`.
    kind: str = "undeclared"
    # the identifier whose scope decides (default: `node`)
    ref: Node | None = None


class MemberChecks:
    """The member, subscript and call visitors of SketchAnalysis."""

    def visit_member(self, node: Node, ctx: NodeContext) -> None:
        obj = node.child_by_field_name("object")
        prop = node.child_by_field_name("property")
        if obj is None or prop is None:
            return
        name = self.text(prop)
        called, assigned, chained = ctx.use()
        if obj.type == "identifier" and self.text(obj) == "brush":
            self.brush_member(name, prop, called=called, assigned=assigned)
            return
        if obj.type == "identifier" and self.text(obj) == "p5" and name in (
                "prototype", "instance") and not chained:
            self.add(EXTERNAL, f"`p5.{name}` used as a value escapes the gate", node)
            return
        if (obj.type == "identifier" and self.text(obj) == "p5" and name not in (
                "prototype", "instance") and self.scopes is not None
                and self.scopes.is_free(obj)):
            self.add(FORBIDDEN, f"`p5.{name}`: p5 itself is outside the sketch API", node)
            return
        if obj.type == "this" and ctx.this_is_instance:
            via, certain = None, True
        else:
            via, certain = self.global_object_name(obj, ctx.this_is_instance)
        if via is not None:
            if name == "setup" and assigned:
                self.has_setup = True
            if via == "this":
                # `this.rect(...)` or `const r = this.rect` outside classes: the window's
                # rect. `this.point = v` and `this.point.x` are a constructor's fields.
                escapes = called or not (assigned or chained)
                if escapes and (name in PRIMITIVE_NAMES or name in TEXT_NAMES):
                    self.check_global_name(name, prop, is_call=True, via=via)
                elif is_external_name(name) or name in RAW_RENDERER_PROPERTIES:
                    self.check_global_name(name, prop, is_call=called, via=via)
                elif called:
                    # `this.filter(...)` in setup: a window function, unless the sketch
                    # defines such a method itself (a constructor function's own)
                    self.pending.append(Pending(name, FORBIDDEN, f"`this.{name}(...)` outside "
                                                 "a class calls a window function", prop,
                                                 kind="method"))
            elif certain:
                before = len(self.found)
                self.check_global_name(name, prop, is_call=called, via=via, always=True)
                if len(self.found) == before:
                    self.add(FORBIDDEN, f"`{via}.{name}`: the global object is outside the "
                             "sketch API", node)
            else:
                self.pending.append(Pending(via, "", name, prop, kind="global_member",
                                             ref=unwrap(obj)))
            if name not in EXTERNAL_PROPERTIES:
                return
        self.check_any_property(name, prop, arguments=ctx.argument_count())

    def check_any_property(self, name: str, node: Node, *, arguments: int) -> None:
        if name in EXTERNAL_PROPERTIES or is_loader(name):
            self.add(EXTERNAL, f"`.{name}` reaches outside the sketch", node)
        elif name in RAW_RENDERER_PROPERTIES:
            self.add(BARE, f"`.{name}` draws on the renderer directly", node)
        elif name in PROBE_PROPERTIES:
            self.add(FORBIDDEN, f"`.{name}` reads the renderer's own state, which changes from "
                     "render to render (a painting may depend on its seed only)", node)
        elif arguments > 0 and name not in self.defined_methods:
            # e.g. a createGraphics buffer: pg.rect(...) then image(pg, ...). Drawing
            # always takes arguments, which keeps fetch's `response.text()` out.
            if name in PRIMITIVE_NAMES:
                self.pending.append(Pending(name, BARE, f"`.{name}(...)` draws without "
                                             "the brush", node, kind="method"))
            elif name in TEXT_NAMES:
                self.pending.append(Pending(name, TEXT, f"`.{name}(...)` draws text", node,
                                             kind="method"))

    def brush_member(self, name: str, node: Node, *, called: bool, assigned: bool) -> None:
        self.brush_names.add(name)
        if called:
            self.brush_calls[name] += 1
        if assigned:
            self.add(UNKNOWN_BRUSH, f"assigning to `brush.{name}` replaces the library", node)
            return
        if name not in KNOWN_BRUSH_METHODS:
            hint = " (p5.brush 1.x name; 2.x uses fillBleed)" if name == "bleed" else ""
            self.add(UNKNOWN_BRUSH, f"`brush.{name}` is not a p5.brush 2.x method{hint}", node)
        elif self.strictness == "allowlist" and name not in ALLOWED_BRUSH_METHODS:
            self.add(DISALLOWED_BRUSH, f"`brush.{name}` is not among the allowed methods",
                     node)

    def visit_subscript(self, node: Node, ctx: NodeContext) -> None:
        obj = node.child_by_field_name("object")
        index = node.child_by_field_name("index")
        if obj is None or index is None:
            return
        literal = self.string_literal(index)
        called, assigned, chained = ctx.use()
        if obj.type == "identifier" and self.text(obj) == "brush":
            if literal is not None:
                self.brush_member(literal, index, called=called, assigned=assigned)
            else:
                self.add(UNKNOWN_BRUSH, "computed `brush[...]` access: the method cannot be "
                         "checked", node)
            return
        if obj.type == "identifier" and self.text(obj) == "p5":
            self.add(EXTERNAL, "computed `p5[...]` access reaches p5 internals", node)
            return
        via, certain = self.global_object_name(obj, ctx.this_is_instance)
        if via is not None:
            message = f"computed lookup `{via}[...]` on the global object"
            if certain:
                self.add(EXTERNAL, message, node)
                if literal is not None:
                    self.check_global_name(literal, index, is_call=called, via=via,
                                           always=True)
            else:
                self.pending.append(Pending(via, EXTERNAL, message, node, ref=unwrap(obj)))
            return
        if literal is not None:
            self.check_any_property(literal, index, arguments=ctx.argument_count())
        elif index.type != "number":
            self.computed_keys.append((index, ctx.argument_count()))

    def check_pattern_key(self, name: str, node: Node) -> None:
        """A property taken by destructuring is judged like `.name`: `{constructor: F}`
        reaches the Function constructor as surely as `f.constructor` does."""
        if name in EXTERNAL_PROPERTIES or is_loader(name) or name in RAW_RENDERER_PROPERTIES:
            self.add(EXTERNAL, f"destructuring `{name}` reaches outside the sketch", node)
        elif name in PROBE_PROPERTIES:
            self.add(FORBIDDEN, f"destructuring `{name}` reads the renderer's own state", node)

    def check_computed_keys(self) -> None:
        """Every computed key must be a number or a string the gate can read
        (gate_keys.py): anything else may spell `constructor`."""
        if not self.computed_keys or self.scopes is None:
            return
        keys = KeyValues(self.scopes, self.data, self.defined_methods | self.defined_keys)
        for index, arguments in self.computed_keys:
            values = keys.strings(index)
            if values is None:
                self.add(EXTERNAL, "a computed property name that may be any string hides what "
                         "is accessed (index with numbers, or write the name)", index)
                continue
            for value in sorted(values):
                self.check_any_property(value, index, arguments=arguments)

    # -- calls, this, strings ------------------------------------------------------------

    def visit_call(self, node: Node, ctx: NodeContext) -> None:
        callee = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if callee is None:
            return
        ctype = callee.type
        name = None
        if ctype == "identifier":
            name = self.text(callee)
        elif ctype == "member_expression":
            obj, prop = callee.child_by_field_name("object"), callee.child_by_field_name(
                "property")
            if obj is not None and prop is not None and (
                    self.global_object_name(obj, ctx.this_is_instance)[0] is not None):
                name = self.text(prop)
        if name == "createCanvas":
            self.check_canvas(node, args)
        elif name == "background" and args is not None:
            for arg in args.named_children:
                if unwrap(arg).type in _NON_COLOUR_TYPES:
                    self.add(FORBIDDEN, "background() takes a colour, not an object", arg)
        elif name in TIMER_NAMES and args is not None:
            first = next((a for a in args.named_children if a.type != "comment"), None)
            if first is not None and first.type not in CALLABLE_TYPES:
                self.add(EXTERNAL, f"`{name}` with a non-function argument evaluates a "
                         "code string", first)

    def check_canvas(self, node: Node, args: Node | None) -> None:
        self.canvas_calls += 1
        values = [a for a in args.named_children if a.type != "comment"] if args else []
        mode = values[2] if len(values) >= 3 else None
        ok = False
        if mode is not None:
            if mode.type == "identifier":
                ok = self.text(mode) == "WEBGL"
            elif mode.type == "member_expression":
                prop = mode.child_by_field_name("property")
                ok = prop is not None and self.text(prop) == "WEBGL"
            else:
                ok = (self.string_literal(mode) or "").lower() == "webgl"
        if not ok:
            self.add(NOT_WEBGL, "createCanvas needs WEBGL as its third argument "
                     "(p5.brush draws nothing on a 2D canvas)", node)
        for size in values[:2]:
            if self.literal_size(size) not in (None, CANVAS_UNITS):
                self.add(CANVAS_SIZE, f"the canvas is {CANVAS_UNITS} x {CANVAS_UNITS} units: "
                         f"createCanvas({CANVAS_UNITS}, {CANVAS_UNITS}, WEBGL)", size)
                break

    def literal_size(self, node: Node) -> float | str | None:
        """A size written as a literal (`1800`, `-600`, `"600"`, `6e2`); None when it is an
        expression, which the render page checks."""
        node = unwrap(node)
        sign = 1
        if node.type == "unary_expression" and node.child_count == 2 and self.text(node.children[0]) in "+-":
            sign = -1 if self.text(node.children[0]) == "-" else 1
            node = unwrap(node.children[1])
        if node.type == "number":
            try:
                return sign * float(self.text(node).replace("_", ""))
            except ValueError:  # 0x258, 0o1130, 600n: another spelling, still a literal
                try:
                    return sign * int(self.text(node).replace("_", "").rstrip("n"), 0)
                except ValueError:
                    return "?"
        literal = self.string_literal(node)
        return "string" if literal is not None else None
