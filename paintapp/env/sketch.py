"""Find the sketch in a model reply, gate it statically, and score its length.

The gate walks a real JavaScript syntax tree (tree-sitter), so code inside comments,
strings and template literals can never trip a check, while aliases such as
`const r = rect; r(...)` or `window["re" + "ct"]` still do. It is a cheap filter that
runs in-process before any render; the sandboxed renderer stays the security boundary
(a determined obfuscation such as building a property name in a variable and indexing
with it is out of reach of any static check and is caught at runtime there).

Decisions (kept in one place so they can be argued with):

* Fenced blocks: a `<think>...</think>` section is dropped first (Qwen3 may think out
  loud with drafts). Then the first fenced block (``` or ~~~) labelled js / javascript /
  jsx / mjs / p5 / p5js wins; failing that, the first unlabelled block that looks like
  JavaScript; failing that, an opening js fence whose closing fence never came (a reply
  cut off at max tokens): everything after it. Blocks in other languages are ignored.
  Without any fence the whole reply is the sketch. `gate_reply` reports
  `no_sketch_in_response` when nothing is left, when only other-language blocks exist,
  or when an unfenced reply does not look like code (prose).
* Line and column numbers (1-based, column counted in characters) refer to the
  extracted sketch, not to the reply.
* Bare primitives: a *call* of a p5 drawing name (`rect(...)`) is flagged even when the
  sketch defines its own `function rect()`: a top-level definition replaces p5's global
  and the prompt forbids the names anyway. A *non-call* use (`const r = rect`,
  `[rect][0]`, `rect.call`) is flagged only when no declaration of the sketch binds it there (by scope),
  because then it can only be p5's function; `const point = pts[0]; point.x` stays fine.
  `window.rect`, `globalThis.rect`, `p5.prototype.rect`, `p5.instance.rect` are always
  flagged; `this.rect` outside classes and object methods (where `this` is the window)
  is flagged when called or when it escapes as a value. `anyObject.rect(...)` calls are
  flagged (e.g. a `createGraphics` buffer) unless the sketch defines a method of that
  name. `drawingContext` / `_renderer` (raw renderer access) count as bare primitives.
* Text: the same rules with p5's text names (`text`, `textSize`, ...); DOM creators that
  put text on the page (`createP`, `createDiv`, `createSpan`, `createA`, `createButton`)
  are both `text_label` and `external_access`.
* The allowlist (sketch_api.json): every free name — one that no declaration of the
  sketch binds, resolved by scope (scopes.py) after decoding unicode escapes — must be
  on it. Names that a rule below judges keep that rule's code; any other outside name
  is `forbidden_api` (`filter`, `createGraphics`, `Reflect`, `setTimeout`, `p5.WEBGL`).
  `this.name(...)` outside classes and methods, a call of a window function unless the
  sketch defines such a method, and `background()` with an object literal are
  `forbidden_api` too.
* Global objects: `window`/`globalThis` (and `self`/`top`/`parent`/`frames` when the
  sketch does not declare those names) are outside the allowlist: `window.<name>` is
  judged like the bare name (`window.fetch` is external, `window.rect` a bare
  primitive) and otherwise `forbidden_api`. Using them as values (`const w = window`,
  `Reflect.get(globalThis, ...)`) or computed lookups (`window[x]`, and `this[x]`
  outside classes, where `this` may be the window) are `external_access`; a plain string
  index is also judged as a name.
  A computed property whose key is built from strings (`o["con" + "structor"]`) on any
  object is `external_access`; so is `.constructor` (the Function-constructor escape).
* The brush object: `brush.X` must name a real p5.brush 2.x method
  (`unknown_brush_method`) and, under "allowlist", one of the ten
  (`disallowed_brush_method`). Anything that stops us from reading the method name —
  `brush[expr]`, `const b = brush`, passing `brush` around — and any write to
  `brush.X` is `unknown_brush_method`: the method cannot be verified to be real.
  `brush["fill"]` (a plain string) is read as `brush.fill`.
* Entry points: `function setup` / `async function setup` at top level, a top-level
  `var setup = ...`, `setup = ...`, or `window.setup = ...`. A top-level `let`/`const`
  setup is `missing_entry_points`: it never becomes `window.setup`, which is what p5's
  global mode (and the renderer's harness) calls.
* On a syntax error (`truncated`) the absence checks (setup, createCanvas, painting
  calls) are skipped: error recovery may hide what is there. Presence checks still run.
* Input over MAX_SOURCE_CHARS is not parsed: `too_long`. An internal failure of the
  gate (never expected) yields `gate_error` instead of an exception.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from paintapp.env.brush_api import (
    ALLOWED_BRUSH_METHODS,
    COLOUR_SOURCES_ALLOWLIST,
    COLOUR_SOURCES_KNOWN,
    CUSTOM_SHAPE_CALLS,
    KNOWN_BRUSH_METHODS,
    SHAPE_CALLS_ALLOWLIST,
    SHAPE_CALLS_KNOWN,
)
from paintapp.env.scopes import ScopeReport, decode_identifier, resolve
from paintapp.env.sketch_api import SKETCH_API

__all__ = [
    "ALLOWED_BRUSH_METHODS",
    "KNOWN_BRUSH_METHODS",
    "VIOLATION_CODES",
    "Violation",
    "GateVerdict",
    "extract_sketch",
    "gate_source",
    "gate_reply",
    "length_score",
    "estimate_tokens",
]

# ---------------------------------------------------------------------------------------
# Violation codes (stable strings: stored with every rollout and shown in the UI)

NO_SKETCH = "no_sketch_in_response"
TRUNCATED = "truncated"
MISSING_ENTRY = "missing_entry_points"
NOT_WEBGL = "not_webgl"
EXTERNAL = "external_access"
TEXT = "text_label"
BARE = "bare_primitives"
UNKNOWN_BRUSH = "unknown_brush_method"
DISALLOWED_BRUSH = "disallowed_brush_method"
NO_PAINTING = "no_painting_calls"
TOO_LONG = "too_long"
GATE_ERROR = "gate_error"
FORBIDDEN = "forbidden_api"

VIOLATION_CODES: tuple[str, ...] = (
    NO_SKETCH, TRUNCATED, MISSING_ENTRY, NOT_WEBGL, EXTERNAL, TEXT, BARE,
    UNKNOWN_BRUSH, DISALLOWED_BRUSH, NO_PAINTING, TOO_LONG, GATE_ERROR, FORBIDDEN,
)

STRICTNESS_LEVELS = ("allowlist", "known")

# A sketch of 8192 tokens is ~33 KB; 200 KB leaves room for hand-edited sketches while
# keeping the worst case (a full tree walk) well under a second.
MAX_SOURCE_CHARS = 200_000
# Repeats of one code beyond this are counted in stats["violation_counts"] only.
MAX_VIOLATIONS_PER_CODE = 20

# ---------------------------------------------------------------------------------------
# Name lists (p5.js 2.x globals)

# p5 functions that draw geometry or pixels without the brush (sketch_api.json).
PRIMITIVE_NAMES: frozenset[str] = SKETCH_API.primitive_names
# Renderer internals reachable as properties; same effect as bare primitives.
RAW_RENDERER_PROPERTIES: frozenset[str] = frozenset({"drawingContext", "_renderer"})

TEXT_NAMES: frozenset[str] = SKETCH_API.text_names
DOM_TEXT_CREATORS: frozenset[str] = frozenset(
    {"createP", "createDiv", "createSpan", "createA", "createButton"}
)

# Always external, whatever the sketch declares.
EXTERNAL_NAMES: frozenset[str] = frozenset(
    {
        "fetch", "XMLHttpRequest", "WebSocket", "EventSource", "importScripts", "eval",
        "Function", "Worker", "SharedWorker", "require", "document", "navigator",
        "localStorage", "sessionStorage", "indexedDB", "caches", "cookieStore",
        "WebAssembly", "RTCPeerConnection", "WebTransport", "Image", "Audio",
        "BroadcastChannel", "XSLTProcessor", "DOMParser", "alert", "confirm", "prompt",
        "httpGet", "httpPost", "httpDo", "selectAll", "removeElements", "saveCanvas",
        "saveJSON", "saveStrings", "saveTable", "saveGif", "saveFrames", "getURL",
        "getURLPath", "getURLParams", "createElement", "createImg", "createVideo",
        "createAudio", "createCapture", "createInput", "createFileInput", "createSlider",
        "createSelect", "createRadio", "createCheckbox", "createColorPicker",
        "window", "globalThis",
    }
) | DOM_TEXT_CREATORS
# External only when the sketch does not declare the name itself (common variable names).
SOFT_EXTERNAL_NAMES: frozenset[str] = frozenset(
    {"location", "history", "open", "select", "save", "self", "top", "parent", "frames",
     "opener"}
)
# Dangerous as a property of any object.
EXTERNAL_PROPERTIES: frozenset[str] = frozenset(
    {
        "innerHTML", "outerHTML", "insertAdjacentHTML", "srcdoc", "cookie", "sendBeacon",
        "constructor", "__proto__", "__defineGetter__", "__defineSetter__",
        "createObjectURL", "serviceWorker", "postMessage", "fetch", "eval",
        "importScripts", "elt", "execCommand", "XMLHttpRequest", "WebSocket",
        # reflection that reaches or rewrites shared built-ins (frozen at runtime anyway)
        "prototype", "defineProperty", "defineProperties", "setPrototypeOf",
        "getPrototypeOf", "getOwnPropertyDescriptor", "getOwnPropertyDescriptors",
        "__lookupGetter__", "__lookupSetter__",
    }
)
HARD_GLOBAL_OBJECTS: frozenset[str] = frozenset({"window", "globalThis"})
SOFT_GLOBAL_OBJECTS: frozenset[str] = frozenset({"self", "top", "parent", "frames"})
TIMER_NAMES: frozenset[str] = frozenset({"setTimeout", "setInterval"})
# Free names that the rules above give their own codes; every other name outside the
# allowlist is `forbidden_api`.
_JUDGED_ELSEWHERE: frozenset[str] = (
    PRIMITIVE_NAMES | TEXT_NAMES | EXTERNAL_NAMES | SOFT_EXTERNAL_NAMES | HARD_GLOBAL_OBJECTS
    | SOFT_GLOBAL_OBJECTS | RAW_RENDERER_PROPERTIES | {"p5", "brush"}
)

_LOADER = re.compile(r"load[A-Z]\w*\Z")  # loadImage, loadJSON, loadFont, loadShader, ...
_SAFE_LOADERS = frozenset({"loadPixels"})  # reads the canvas, no I/O
# Data and javascript: URIs inside one string literal (a regex over a literal's value,
# never over raw source). `metadata: x` does not match: a data URI needs a type or comma.
_URI_IN_STRING = re.compile(r"(?i)(?<![\w-])(?:data:[\w.+-]*(?:/|;|,)|javascript:)")
# Languages a fenced block may be labelled with and still be our sketch.
_JS_LABELS = frozenset({"js", "javascript", "jsx", "mjs", "p5", "p5js", "p5.js"})


def _is_loader(name: str) -> bool:
    return bool(_LOADER.match(name)) and name not in _SAFE_LOADERS


def _is_external_name(name: str) -> bool:
    return name in EXTERNAL_NAMES or _is_loader(name)


# ---------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    line: int | None = None  # 1-based, in the extracted sketch
    col: int | None = None  # 1-based, in characters

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.line}:{self.col} " if self.line is not None else ""
        return f"{where}{self.code}: {self.message}"


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    violations: tuple[Violation, ...]
    stats: dict = field(default_factory=dict)

    @property
    def codes(self) -> list[str]:
        return sorted({v.code for v in self.violations})

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "codes": self.codes,
            "violations": [v.to_dict() for v in self.violations],
            "stats": self.stats,
        }


# ---------------------------------------------------------------------------------------
# Extraction

_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
# An opening fence (3+ backticks or tildes, optional label) and, lazily, the first
# closing fence of the same kind; a missing closing fence runs to the end of the reply.
_FENCE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<label>[^\s`]*)[^\n]*\n"
    r"(?P<body>.*?)"
    r"(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|(?P<open>\Z))",
    re.M | re.S,
)
_CODE_HINTS = ("function", "=>", "createCanvas", "brush.", "setup")


def _looks_like_js(text: str) -> bool:
    """Cheap lexical guess used only to tell code from prose (never for the checks)."""
    has_hint = any(h in text for h in _CODE_HINTS)
    has_syntax = any(ch in text for ch in "{};(")
    return has_hint and has_syntax


@dataclass(frozen=True)
class _Extraction:
    code: str | None
    fenced: bool
    reason: str = ""


def _extract(reply: Any) -> _Extraction:
    if isinstance(reply, bytes):
        reply = reply.decode("utf-8", "replace")
    if not isinstance(reply, str) or not reply.strip():
        return _Extraction(None, False, "the reply is empty")
    text = _THINK_BLOCK.sub("", reply)
    if not text.strip():
        return _Extraction(None, False, "the reply holds only a <think> section")
    blocks = [
        (m.group("label").lower(), m.group("body"), m.group("open") is not None)
        for m in _FENCE.finditer(text)
    ]
    if not blocks:
        return _Extraction(text, False)
    for label, body, _open in blocks:
        if label in _JS_LABELS and body.strip():
            return _Extraction(body, True)
    for label, body, _open in blocks:
        if not label and body.strip() and _looks_like_js(body):
            return _Extraction(body, True)
    labels = sorted({label or "unlabelled" for label, _b, _o in blocks})
    return _Extraction(None, True, f"no JavaScript block (found: {', '.join(labels)})")


def extract_sketch(reply: str) -> str | None:
    """The sketch in a model reply: see the module docstring for the fence rules."""
    try:
        return _extract(reply).code
    except Exception:  # never raise on model output
        return None


# ---------------------------------------------------------------------------------------
# Length


def estimate_tokens(code: str) -> int:
    """Tokens ≈ characters / 4 (floor), the published system's estimate."""
    if not isinstance(code, str):
        return 0
    return len(code) // 4


def length_score(
    code: str,
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
    tokens = estimate_tokens(code)
    if tokens < low_tokens or tokens > high_tokens:
        return 0.0
    if tokens >= full_tokens:
        return 1.0
    return (tokens - low_tokens) / (full_tokens - low_tokens)


# ---------------------------------------------------------------------------------------
# The syntax-tree analysis

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
_CALL_FIELDS = frozenset({("call_expression", "function"), ("new_expression", "constructor")})
_MEMBER_TYPES = frozenset({"member_expression", "subscript_expression"})
# `this` is an instance (not the window) inside these.
_THIS_SCOPES = frozenset({"class_body", "method_definition"})
_SKIP_TYPES = frozenset({"comment", "regex", "html_comment"})
_NAME_TYPES = frozenset({"identifier", "property_identifier", "shorthand_property_identifier",
                         "shorthand_property_identifier_pattern"})
_HANDLED_TYPES = frozenset(
    {
        "identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern",
        "member_expression", "subscript_expression", "call_expression", "this", "string",
        "template_string", "method_definition", "pair", "import_statement", "import",
        "assignment_expression", "binary_expression",
    }
)
_FUNCTION_LITERALS = frozenset({"arrow_function", "function_expression", "function",
                                "generator_function", "class"})
# Arguments that cannot be a colour (background(img), background({toString() {...}})).
_NON_COLOUR_TYPES = frozenset({"object", "array", "arrow_function", "function_expression",
                               "function", "new_expression", "class", "generator_function"})
_ASSIGN_TYPES = frozenset(
    {"assignment_expression", "augmented_assignment_expression"}
)
# Expressions that are fine as a timer callback (anything else may be a code string).
_CALLABLE_TYPES = frozenset(
    {"arrow_function", "function_expression", "function", "identifier", "member_expression",
     "generator_function"}
)


class _Ctx:
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


@dataclass
class _Pending:
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


class _Analysis:
    def __init__(self, source: str, strictness: str, scopes: ScopeReport | None = None) -> None:
        self.scopes = scopes
        self.source = source
        self.strictness = strictness
        self.data = source.encode("utf-8", "replace")
        self.found: list[tuple[str, str, Node | None]] = []
        self.pending: list[_Pending] = []
        self.declared: set[str] = set()
        self.defined_methods: set[str] = set()
        self.brush_calls: Counter[str] = Counter()
        self.brush_names: set[str] = set()
        self.has_setup = False
        self.lexical_setup: Node | None = None
        self.canvas_calls = 0

    # -- helpers -------------------------------------------------------------------------

    def text(self, node: Node) -> str:
        raw = self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        # `\u0072ect` names `rect`: identifiers are judged by what they spell
        return decode_identifier(raw) if node.type in _NAME_TYPES else raw

    def add(self, code: str, message: str, node: Node | None) -> None:
        self.found.append((code, message, node))

    def position(self, node: Node | None) -> tuple[int | None, int | None]:
        if node is None:
            return None, None
        row, byte_col = node.start_point
        line_start = node.start_byte - byte_col
        col = len(self.data[line_start:node.start_byte].decode("utf-8", "replace")) + 1
        return row + 1, col

    @staticmethod
    def unwrap(node: Node) -> Node:
        """Strip parentheses, iteratively (input may nest them thousands deep)."""
        while node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        return node

    def string_literal(self, node: Node | None) -> str | None:
        """The value of a plain string literal ('abc', "abc", `abc`), else None."""
        if node is None:
            return None
        node = self.unwrap(node)
        if node.type not in ("string", "template_string"):
            return None
        parts = []
        for child in node.named_children:
            if child.type != "string_fragment":
                return None  # escapes or ${...}: not a plain name
            parts.append(self.text(child))
        return "".join(parts)

    @staticmethod
    def contains_string(node: Node) -> bool:
        stack = [node]
        while stack:
            cur = stack.pop()
            if cur.type in ("string", "template_string"):
                return True
            stack.extend(cur.named_children)
        return False

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
                self.visit(node, ntype, _Ctx(parent, index, inst))
            kids = node.named_children
            if kids:
                inst = inst or ntype in _THIS_SCOPES
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

    def visit(self, node: Node, ntype: str, ctx: _Ctx) -> None:
        """Check one node of a type in _HANDLED_TYPES."""
        if ntype == "identifier":
            self.visit_identifier(node, ctx)
        elif ntype == "shorthand_property_identifier":  # `{rect}` reads rect
            self.visit_identifier(node, ctx, force_read=True)
        elif ntype == "shorthand_property_identifier_pattern":
            self.declared.add(self.text(node))
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
                    and self.unwrap(left).type in _FUNCTION_LITERALS):
                # `() => {}` NEWLINE `/x/` is a division to tree-sitter and a regular
                # expression to V8 (which inserts a semicolon): a sketch could hide code
                # from this gate in the difference.
                self.add(EXTERNAL, "a function followed by `/` reads differently in the "
                         "browser (a regular expression)", node)
        elif ntype == "assignment_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if (left is not None and right is not None and left.type == "member_expression"
                    and right.type in _CALLABLE_TYPES):
                prop = left.child_by_field_name("property")
                if prop is not None:
                    self.defined_methods.add(self.text(prop))
        elif ntype == "pair":
            key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
            if key is not None and value is not None and value.type in _CALLABLE_TYPES:
                self.defined_methods.add(self.string_literal(key) or self.text(key))
        elif ntype in ("import_statement", "import"):
            self.add(EXTERNAL, "import loads code from elsewhere", node)

    # -- identifiers ---------------------------------------------------------------------

    def is_binding(self, ctx: _Ctx) -> bool:
        parent = ctx.parent
        if parent is None:
            return False
        ptype = parent.type
        return (ptype, ctx.field) in _BINDING_FIELDS or ptype in _BINDING_PARENTS

    def visit_identifier(self, node: Node, ctx: _Ctx, *, force_read: bool = False) -> None:
        name = self.text(node)
        parent = ctx.parent
        ptype = parent.type if parent is not None else ""
        if not force_read and self.is_binding(ctx):
            self.note_entry_point(name, node, ctx)
            if ptype not in _ASSIGN_TYPES:
                self.declared.add(name)
                return  # a declaration reads nothing
            # `x = ...` without a declaration writes a global: harmless for new names,
            # but `location = url` navigates and `fetch = f` tampers, so those fall
            # through (and a soft name assigned this way does not count as declared).
            if not (_is_external_name(name) or name in SOFT_EXTERNAL_NAMES
                    or name in SOFT_GLOBAL_OBJECTS):
                self.declared.add(name)
                return
        is_call = (ptype, ctx.field) in _CALL_FIELDS
        is_member_object = ptype in _MEMBER_TYPES and ctx.field == "object"

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
                self.pending.append(_Pending(name, EXTERNAL,
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
        if _is_external_name(name):
            self.add(EXTERNAL, f"`{shown}` reaches outside the sketch", node)
            if name in DOM_TEXT_CREATORS:
                self.add(TEXT, f"`{shown}` puts text on the page", node)
            return
        if name in SOFT_EXTERNAL_NAMES:
            if always:
                self.add(EXTERNAL, f"`{shown}` reaches outside the sketch", node)
            else:
                self.pending.append(_Pending(name, EXTERNAL,
                                             f"`{shown}` reaches outside the sketch", node))
            return
        if name in RAW_RENDERER_PROPERTIES:
            message = f"`{shown}` draws on the renderer directly"
            if via or always:
                self.add(BARE, message, node)
            else:
                self.pending.append(_Pending(name, BARE, message, node))
            return
        for names, code, what in ((PRIMITIVE_NAMES, BARE, "draws without the brush"),
                                  (TEXT_NAMES, TEXT, "draws text")):
            if name in names:
                if is_call or always:
                    self.add(code, f"`{shown}` {what}; use brush.* calls", node)
                else:
                    self.pending.append(_Pending(
                        name, code, f"`{shown}` refers to p5's function, which {what}",
                        node))
                return
        if via and name == "brush":
            self.add(UNKNOWN_BRUSH, f"`{shown}` aliases the brush object", node)
        elif via and name == "p5":
            self.add(EXTERNAL, f"`{shown}` reaches p5 internals", node)
        elif name in TIMER_NAMES and via and not is_call:
            self.add(EXTERNAL, f"`{shown}` used as a value", node)

    def note_entry_point(self, name: str, node: Node, ctx: _Ctx) -> None:
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
        obj = self.unwrap(obj)
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

    def use_of(self, node: Node, ctx: _Ctx) -> tuple[bool, bool, bool]:
        """(called, assigned to, used as the object of a further member access)."""
        parent = ctx.parent
        if parent is None:
            return False, False, False
        key = (parent.type, ctx.field)
        called = key in _CALL_FIELDS
        assigned = (parent.type in _ASSIGN_TYPES and ctx.field == "left") or (
            parent.type == "update_expression")
        chained = parent.type in _MEMBER_TYPES and ctx.field == "object"
        return called, assigned, chained

    def visit_member(self, node: Node, ctx: _Ctx) -> None:
        obj = node.child_by_field_name("object")
        prop = node.child_by_field_name("property")
        if obj is None or prop is None:
            return
        name = self.text(prop)
        called, assigned, chained = self.use_of(node, ctx)
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
                elif _is_external_name(name) or name in RAW_RENDERER_PROPERTIES:
                    self.check_global_name(name, prop, is_call=called, via=via)
                elif called:
                    # `this.filter(...)` in setup: a window function, unless the sketch
                    # defines such a method itself (a constructor function's own)
                    self.pending.append(_Pending(name, FORBIDDEN, f"`this.{name}(...)` outside "
                                                 "a class calls a window function", prop,
                                                 kind="method"))
            elif certain:
                before = len(self.found)
                self.check_global_name(name, prop, is_call=called, via=via, always=True)
                if len(self.found) == before:
                    self.add(FORBIDDEN, f"`{via}.{name}`: the global object is outside the "
                             "sketch API", node)
            else:
                self.pending.append(_Pending(via, "", name, prop, kind="global_member",
                                             ref=self.unwrap(obj)))
            if name not in EXTERNAL_PROPERTIES:
                return
        self.check_any_property(name, prop, arguments=self.argument_count(ctx))

    @staticmethod
    def argument_count(ctx: _Ctx) -> int:
        """How many arguments the call around this callee passes; -1 if not a call."""
        parent = ctx.parent
        if parent is None or parent.type != "call_expression" or ctx.field != "function":
            return -1
        args = parent.child_by_field_name("arguments")
        if args is None:
            return 0
        if args.type == "template_string":  # tagged template
            return 1
        return sum(1 for a in args.named_children if a.type != "comment")

    def check_any_property(self, name: str, node: Node, *, arguments: int) -> None:
        if name in EXTERNAL_PROPERTIES or _is_loader(name):
            self.add(EXTERNAL, f"`.{name}` reaches outside the sketch", node)
        elif name in RAW_RENDERER_PROPERTIES:
            self.add(BARE, f"`.{name}` draws on the renderer directly", node)
        elif arguments > 0 and name not in self.defined_methods:
            # e.g. a createGraphics buffer: pg.rect(...) then image(pg, ...). Drawing
            # always takes arguments, which keeps fetch's `response.text()` out.
            if name in PRIMITIVE_NAMES:
                self.pending.append(_Pending(name, BARE, f"`.{name}(...)` draws without "
                                             "the brush", node, kind="method"))
            elif name in TEXT_NAMES:
                self.pending.append(_Pending(name, TEXT, f"`.{name}(...)` draws text", node,
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

    def visit_subscript(self, node: Node, ctx: _Ctx) -> None:
        obj = node.child_by_field_name("object")
        index = node.child_by_field_name("index")
        if obj is None or index is None:
            return
        literal = self.string_literal(index)
        called, assigned, chained = self.use_of(node, ctx)
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
                self.pending.append(_Pending(via, EXTERNAL, message, node, ref=self.unwrap(obj)))
            return
        if literal is not None:
            self.check_any_property(literal, index, arguments=self.argument_count(ctx))
        elif index.type != "number" and self.contains_string(index):
            self.add(EXTERNAL, "a property name built from strings hides what is accessed",
                     index)

    # -- calls, this, strings ------------------------------------------------------------

    def visit_call(self, node: Node, ctx: _Ctx) -> None:
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
                if self.unwrap(arg).type in _NON_COLOUR_TYPES:
                    self.add(FORBIDDEN, "background() takes a colour, not an object", arg)
        elif name in TIMER_NAMES and args is not None:
            first = next((a for a in args.named_children if a.type != "comment"), None)
            if first is not None and first.type not in _CALLABLE_TYPES:
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

    def visit_this(self, node: Node, ctx: _Ctx) -> None:
        parent = ctx.parent
        if parent is None or ctx.this_is_instance:
            return
        # `this` at top level or in setup() is the window; a bare use lets it escape.
        if parent.type in _MEMBER_TYPES and ctx.field == "object":
            return
        # Anything else lets `this` escape as a value (passed, returned, aliased,
        # destructured): outside classes and methods it can only mean the window.
        self.add(EXTERNAL, "`this` outside a class or method used as a value escapes the "
                 "gate", node)

    def visit_string(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "string_fragment":
                if _URI_IN_STRING.search(self.text(child)):
                    self.add(EXTERNAL, "a data: or javascript: URI in a string", node)
                    return

    # -- after the walk ------------------------------------------------------------------

    def declares(self, item: _Pending) -> bool:
        """Does a declaration of the sketch's own bind the name this item reads? Decided
        by scope when the resolver saw the identifier, else by any declaration."""
        ref = item.ref if item.ref is not None else item.node
        if self.scopes is not None and ref.type in ("identifier", "shorthand_property_identifier"):
            return not self.scopes.is_free(ref)
        return item.name in self.declared

    def resolve_pending(self) -> None:
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
            if name in allowed or name in _JUDGED_ELSEWHERE or _is_loader(name):
                continue
            self.add(FORBIDDEN, f"`{name}` is not part of the sketch API (sketch_api.json)",
                     node)

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


# One parser per thread would be needed for concurrent use; tree-sitter parsers are not
# thread-safe, so build one per call (cheap: microseconds).
def parse_js(data: bytes) -> Node:
    parser = Parser(_JS_LANGUAGE)
    return parser.parse(data).root_node


def _base_stats(code: str) -> dict[str, Any]:
    return {
        "code_chars": len(code),
        "estimated_tokens": estimate_tokens(code),
        "lines": code.count("\n") + (1 if code and not code.endswith("\n") else 0),
        "shapes": 0,
        "vertices": 0,
        "circles": 0,
        "fills": 0,
        "brush_calls": 0,
        "brush_methods_used": [],
        "violation_counts": {},
    }


def _verdict(found: list[Violation], stats: dict[str, Any]) -> GateVerdict:
    """Sort, cap repeats per code, and count everything in stats."""
    found = sorted(found, key=lambda v: (v.line or 0, v.col or 0, v.code, v.message))
    seen: set[tuple] = set()
    counts: Counter[str] = Counter()
    kept: list[Violation] = []
    for v in found:
        key = (v.code, v.line, v.col)
        if key in seen:  # one report per code and position
            continue
        seen.add(key)
        counts[v.code] += 1
        if counts[v.code] <= MAX_VIOLATIONS_PER_CODE:
            kept.append(v)
    stats["violation_counts"] = dict(sorted(counts.items()))
    return GateVerdict(passed=not kept, violations=tuple(kept), stats=stats)


def gate_source(code: str, *, strictness: str = "allowlist") -> GateVerdict:
    """Statically gate one sketch. Never raises on any input (a bad `strictness` is a
    programming error and raises ValueError)."""
    if strictness not in STRICTNESS_LEVELS:
        raise ValueError(f"strictness must be one of {STRICTNESS_LEVELS}, got {strictness!r}")
    if isinstance(code, bytes):
        code = code.decode("utf-8", "replace")
    if not isinstance(code, str) or not code.strip():
        return _verdict([Violation(NO_SKETCH, "no code to gate")],
                        _base_stats(code if isinstance(code, str) else ""))
    stats = _base_stats(code)
    if len(code) > MAX_SOURCE_CHARS:
        return _verdict([Violation(TOO_LONG, f"{len(code)} characters is over the "
                                   f"{MAX_SOURCE_CHARS} limit; not analysed")], stats)
    started = time.perf_counter()
    try:
        data = code.encode("utf-8", "replace")
        root = parse_js(data)
        analysis = _Analysis(code, strictness, resolve(root, data))
        analysis.run(root)
        analysis.resolve_pending()
        analysis.check_free_names()
        analysis.final_checks()
        found = []
        for vcode, message, node in analysis.found:
            line, col = analysis.position(node)
            found.append(Violation(vcode, message, line, col))
        calls = analysis.brush_calls
        stats.update(
            shapes=calls["beginShape"],
            vertices=calls["vertex"],
            circles=calls["circle"],
            fills=calls["fill"],
            brush_calls=sum(calls.values()),
            brush_methods_used=sorted(analysis.brush_names),
        )
    except Exception as exc:  # belt and braces: the reward path must never crash
        found = [Violation(GATE_ERROR, f"the gate failed: {type(exc).__name__}: {exc}")]
    stats["gate_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return _verdict(found, stats)


def gate_reply(reply: str, *, strictness: str = "allowlist") -> tuple[str | None, GateVerdict]:
    """Extract the sketch from a model reply and gate it. Prose-only replies, empty
    replies and replies with only non-JS blocks give `no_sketch_in_response`."""
    if strictness not in STRICTNESS_LEVELS:
        raise ValueError(f"strictness must be one of {STRICTNESS_LEVELS}, got {strictness!r}")
    try:
        found = _extract(reply)
    except Exception as exc:
        found = _Extraction(None, False, f"extraction failed: {type(exc).__name__}")
    code = found.code
    if code is not None and not found.fenced and not _looks_like_js(code):
        code, found = None, _Extraction(None, False, "the reply is prose, not code")
    if code is None:
        verdict = _verdict([Violation(NO_SKETCH, found.reason or "no sketch found")],
                           _base_stats(""))
        return None, verdict
    return code, gate_source(code, strictness=strictness)
