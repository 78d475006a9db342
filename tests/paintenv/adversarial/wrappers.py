"""Wrappers: how a forbidden name is hidden. `Hider` writes every reference a construct
makes to a forbidden name the way one wrapper (and sub-form) would hide it, and places the
payload in the sketch (in setup, in a later hook, next to decoy declarations)."""
from __future__ import annotations

from collections.abc import Callable

from tests.paintenv.adversarial.codes import EXTERNAL, FORBIDDEN
from tests.paintenv.adversarial.skeleton import INDENT, indent

WRAPPER_FORMS: dict[str, tuple[str, ...]] = {
    # rect(...)
    "direct": ("plain",),
    # const r = rect; r(...)   |   const kit = { tool: rect }; kit.tool(...)
    "alias": ("const", "object_slot"),
    # const { rect: r } = window   |   const { rect } = globalThis   |   ... = this
    "destructuring": ("window", "globalThis", "this"),
    # window["re" + "ct"]   |   globalThis[["r","e","c","t"].join("")]   |   this[k]
    "computed": ("concat", "join", "this_key"),
    # \u0072ect(...)   |   \u{72}ect(...)
    "unicode_escape": ("u4", "u_brace"),
    # Reflect.apply(rect, null, [...]) / Reflect.get(globalThis, "x")   |   Reflect.get(window, "rect")(...)
    "reflect": ("apply", "get"),
    # Object.getOwnPropertyDescriptor(window | globalThis | p5.prototype, "rect").value
    "descriptor": ("window", "globalThis", "p5_prototype"),
    # rect.call(null, ...) | rect.apply(null, [...]) | rect.bind(null)(...) |
    # Function.prototype.call.call(rect, null, ...)
    "bind_call_apply": ("call", "apply", "bind", "call_call"),
    # the forbidden part runs later, from a hook
    "lifecycle_hook": ("draw", "setTimeout", "promise_then", "requestAnimationFrame",
                       "registerAddon", "mousePressed", "windowResized"),
    # (function () { return this; })().rect(...) | this.rect(...) in setup | const scope = this (top level)
    "plain_this": ("iife", "setup_this", "top_level_this"),
    # a local `function rect() {}` / `let document` / `{ rect() {} }` elsewhere, then the global one
    "decoy_declaration": ("helper_function", "object_method", "block_let", "class_method"),
}
WRAPPERS: tuple[str, ...] = tuple(WRAPPER_FORMS)

# The hiding itself reads globals outside the allowlist (window, Reflect, setTimeout...):
# a gate may reject the case for that alone.
WRAPPER_STATIC_EXTRA: dict[str, frozenset[str]] = {
    "destructuring": frozenset({FORBIDDEN, EXTERNAL}),
    "computed": frozenset({FORBIDDEN, EXTERNAL}),
    "reflect": frozenset({FORBIDDEN, EXTERNAL}),
    "descriptor": frozenset({FORBIDDEN, EXTERNAL}),
    "plain_this": frozenset({FORBIDDEN, EXTERNAL}),
    "lifecycle_hook": frozenset({FORBIDDEN, EXTERNAL}),
    "bind_call_apply": frozenset({FORBIDDEN, EXTERNAL}),
}

# Globals that are accessor properties on window (p5's lazily bound instance fields and
# the browser's [Replaceable]/unforgeable attributes): a descriptor has `get`, not `value`.
_ACCESSORS = frozenset({"drawingContext", "pixels", "document", "performance", "crypto",
                        "window", "width", "height"})
# p5.prototype methods (reachable through Object.getOwnPropertyDescriptor(p5.prototype, n)).
_P5_METHODS = frozenset({
    "rect", "ellipse", "line", "triangle", "quad", "point", "arc", "square", "circle",
    "beginShape", "vertex", "endShape", "text", "textSize", "textFont", "createGraphics",
    "createFramebuffer", "image", "loadPixels", "updatePixels", "set", "get", "filter",
    "createShader", "createFilterShader", "shader", "baseMaterialShader", "plane", "copy",
    "blend", "createDiv", "createP", "createImage", "background",
})


def _camel(prefix: str, name: str) -> str:
    return prefix + name[:1].upper() + name[1:]


def _split(name: str) -> tuple[str, str]:
    mid = max(1, len(name) // 2)
    return name[:mid], name[mid:]


def _escape_first(name: str, brace: bool) -> str:
    code = ord(name[0])
    head = f"\\u{{{code:x}}}" if brace else f"\\u{code:04x}"
    return head + name[1:]


class Hider:
    """Writes references to forbidden names the way one wrapper (and sub-form) hides them.

    `top` collects top-level lines, `pre` lines that go right before the payload (in the
    same scope), `bottom` top-level functions after setup(). `names` records what was
    hidden (for decoys)."""

    def __init__(self, wrapper: str, form: str) -> None:
        self.wrapper = wrapper
        self.form = form
        self.top: list[str] = []
        self.pre: list[str] = []
        self.bottom: list[str] = []
        self.names: dict[str, str] = {}  # name -> "call" | "value"
        self._cache: dict[tuple[str | None, str], str] = {}

    # -- the two entry points used by constructs -----------------------------------------

    def ref(self, name: str, holder: str | None = None) -> str:
        """An expression whose value is the global `name` (or `holder.name`)."""
        self.names.setdefault(name, "value")
        return self._ref(name, holder, value=True)

    def call(self, name: str, args: str = "", holder: str | None = None) -> str:
        """An expression that calls the global `name` (or `holder.name`) with `args`."""
        self.names[name] = "call"
        w, f = self.wrapper, self.form
        if w == "reflect" and f == "apply":
            target = f"{holder}.{name}" if holder else name
            this = holder or "null"
            return f"Reflect.apply({target}, {this}, [{args}])"
        if w == "bind_call_apply":
            target = f"{holder}.{name}" if holder else name
            this = holder or "null"
            sep = ", " if args else ""
            if f == "call":
                return f"{target}.call({this}{sep}{args})"
            if f == "apply":
                return f"{target}.apply({this}, [{args}])"
            if f == "bind":
                return f"{target}.bind({this})({args})"
            return f"Function.prototype.call.call({target}, {this}{sep}{args})"
        if w == "descriptor" and f == "p5_prototype" and holder is None and name in _P5_METHODS:
            sep = ", " if args else ""
            return (f'Object.getOwnPropertyDescriptor(p5.prototype, "{name}").value'
                    f".call(p5.instance{sep}{args})")
        return f"{self._ref(name, holder, value=False)}({args})"

    # -- wrappers ------------------------------------------------------------------------

    def _once(self, key: tuple[str | None, str], make: Callable[[], tuple[str, str]]) -> str:
        """A prelude line declared once per name; returns the local that holds it."""
        if key not in self._cache:
            local, line = make()
            self.pre.append(line)
            self._cache[key] = local
        return self._cache[key]

    def _ref(self, name: str, holder: str | None, *, value: bool) -> str:
        w, f = self.wrapper, self.form
        plain = f"{holder}.{name}" if holder else name
        if w in ("direct", "lifecycle_hook", "decoy_declaration"):
            return plain
        if w == "alias":
            if f == "const":
                mine = _camel("my", name.lstrip("_"))
                return self._once((holder, name), lambda: (mine, f"const {mine} = {plain};"))
            kit = _camel("kit", name.lstrip("_"))
            self._once((holder, name), lambda: (kit, f"const {kit} = {{ tool: {plain} }};"))
            return f"{kit}.tool"
        if w == "destructuring":
            source = holder or {"window": "window", "globalThis": "globalThis", "this": "this"}[f]
            if f == "globalThis":  # shorthand: the local has the forbidden name itself
                return self._once((holder, name), lambda: (name, f"const {{ {name} }} = {source};"))
            local = _camel("own", name.lstrip("_"))
            return self._once((holder, name), lambda: (local, f"const {{ {name}: {local} }} = {source};"))
        if w == "computed":
            if f == "concat":
                a, b = _split(name)
                return f'{holder or "window"}["{a}" + "{b}"]'
            if f == "join":
                letters = ", ".join(f'"{c}"' for c in name)
                return f'{holder or "globalThis"}[[{letters}].join("")]'
            key = _camel("key", name.lstrip("_"))
            if (holder, name) not in self._cache:
                self.top.append(f'const {key} = "{name}";')
                self._cache[(holder, name)] = key
            return f"{holder or 'this'}[{key}]"
        if w == "unicode_escape":
            escaped = _escape_first(name, brace=(f == "u_brace"))
            return f"{holder}.{escaped}" if holder else escaped
        if w == "reflect":
            if f == "apply":  # a value: Reflect.get on globalThis
                return f'Reflect.get({holder or "globalThis"}, "{name}")'
            return f'Reflect.get({holder or "window"}, "{name}")'
        if w == "descriptor":
            if holder is not None:
                return f'Object.getOwnPropertyDescriptor({holder}, "{name}").value'
            if f == "p5_prototype" and name in _P5_METHODS:
                return (f'Object.getOwnPropertyDescriptor(p5.prototype, "{name}").value'
                        ".bind(p5.instance)")
            source = "globalThis" if f == "globalThis" else "window"
            if name in _ACCESSORS:
                return f'Object.getOwnPropertyDescriptor({source}, "{name}").get.call({source})'
            return f'Object.getOwnPropertyDescriptor({source}, "{name}").value'
        if w == "bind_call_apply":  # a value: passed through an identity function
            ident = "function (v) { return v; }"
            if f == "call":
                return f"({ident}).call(null, {plain})"
            if f == "apply":
                return f"({ident}).apply(null, [{plain}])"
            if f == "bind":
                return f"({ident}).bind(null, {plain})()"
            return f"Function.prototype.call.call({ident}, null, {plain})"
        if w == "plain_this":
            if f == "iife":
                return f"(function () {{ return this; }})().{plain}"
            if f == "setup_this":
                return f"this.{plain}"
            if (None, "<scope>") not in self._cache:
                self.top.append("const scope = this;")
                self._cache[(None, "<scope>")] = "scope"
            return f"scope.{plain}"
        raise ValueError(f"unknown wrapper {w!r}")

    # -- placing the payload -------------------------------------------------------------

    def place(self, payload: list[str],
              decoy_names: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
        """(top, setup block, bottom) for this wrapper."""
        body = self.pre + payload
        top, bottom = list(self.top), list(self.bottom)
        block: list[str] = body
        if self.wrapper == "lifecycle_hook":
            f = self.form
            if f == "draw":
                bottom = ["function draw() {", INDENT + "noLoop();", *indent(body), "}"]
                block = []
            elif f in ("mousePressed", "windowResized"):
                bottom = [f"function {f}() {{", *indent(body), "}"]
                block = []
            elif f == "setTimeout":
                block = ["setTimeout(() => {", *indent(body), "}, 0);"]
            elif f == "requestAnimationFrame":
                block = ["requestAnimationFrame(() => {", *indent(body), "});"]
            elif f == "promise_then":
                block = ["Promise.resolve().then(() => {", *indent(body), "});"]
            elif f == "registerAddon":
                block = ["p5.registerAddon((lib, fn, lifecycles) => {",
                         INDENT + "lifecycles.predraw = function () {",
                         *indent(body, 2), INDENT + "};", "});"]
        elif self.wrapper == "decoy_declaration":
            names = list(dict.fromkeys([*self.names, *decoy_names]))
            f = self.form
            if f == "helper_function":
                inner = []
                for n in names:
                    if self.names.get(n, "call") == "call":
                        inner.append(f"function {n}() {{ return 0; }}")
                    else:
                        inner.append(f"let {n} = null;")
                inner.append(f"return [{', '.join(names)}];")
                top = top + ["// Local helpers, kept out of the way.", "function tidyUp() {",
                             *indent(inner), "}"]
            elif f == "object_method":
                methods = ", ".join(f"{n}() {{ return 0; }}" for n in names)
                top = top + [f"const painter = {{ {methods} }};"]
                block = [f"painter.{names[0]}(1);", *body]
            elif f == "block_let":
                block = ["{", *indent([f"let {n} = null;" for n in names]), "}", *body]
            elif f == "class_method":
                methods = " ".join(f"{n}() {{ return 0; }}" for n in names)
                top = top + [f"class Palette {{ {methods} }}"]
        return top, block, bottom


def uses_this(wrapper: str, form: str) -> bool:
    """Whether this hiding reads the global object through `this`."""
    return wrapper == "plain_this" or (wrapper, form) in (("computed", "this_key"),
                                                          ("destructuring", "this"))
