"""The static gate: one sketch (or a model reply) in, a verdict with violation codes out.

The gate walks a real JavaScript syntax tree (tree-sitter), so code inside comments,
strings and template literals can never trip a check, while aliases such as
`const r = rect; r(...)` or `window["re" + "ct"]` still do. It is a cheap filter that
runs in-process before any render; the sandboxed renderer stays the security boundary
(a determined obfuscation such as building a property name in a variable and indexing
with it is out of reach of any static check and is caught at runtime there).

Decisions (kept in one place so they can be argued with):

* Replies: `gate_reply` gates the sketch that extraction.py finds (its docstring has the
  fence rules) and reports `no_sketch_in_response` when there is none. Line and column
  numbers (1-based, column counted in characters) refer to the extracted sketch, not to
  the reply.
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
  `.constructor` (the Function-constructor escape) is `external_access`, and so is taking
  it by destructuring (`const {constructor: F} = () => 0`, in any pattern). A computed
  key on any object (`o[k]`, `{[k]: v} = o`) must be a number or a string the gate can
  name (gate_keys.py follows the sketch's bindings: loop counters, literal keys, helpers
  called with either); a key that may be any string (`String.fromCharCode(...)`, a
  for-in over something unknown, a function's `.name`) is `external_access`, because it
  can spell `constructor` without a string literal in sight.
* Scopes: a parameter's default value reads the names around its function, never the
  body's (`function f(g = createGraphics) { var createGraphics; }` reads the global).
  `with` is `forbidden_api`: it makes every name inside it a property lookup.
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

The module layout: gate_rules.py holds the codes and the names each rule judges,
gate_analysis.py the walk over the syntax tree (js_syntax.py reads the grammar), and
extraction.py finds the sketch in a reply.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from paintenv.extraction import sketch_in_reply
from paintenv.gate_analysis import SketchAnalysis
from paintenv.gate_rules import GATE_ERROR, NO_SKETCH, TOO_LONG
from paintenv.js_syntax import parse_js
from paintenv.length import painting_tokens
from paintenv.scopes import resolve

__all__ = [
    "MAX_SOURCE_CHARS",
    "MAX_VIOLATIONS_PER_CODE",
    "STRICTNESS_LEVELS",
    "GateVerdict",
    "Violation",
    "gate_reply",
    "gate_source",
]

STRICTNESS_LEVELS = ("allowlist", "known")

# A sketch of 8192 tokens is ~33 KB; 200 KB leaves room for hand-edited sketches while
# keeping the worst case (a full tree walk) well under a second.
MAX_SOURCE_CHARS = 200_000
# Repeats of one code beyond this are counted in stats["violation_counts"] only.
MAX_VIOLATIONS_PER_CODE = 20

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


def _base_stats(code: str) -> dict[str, Any]:
    return {
        "code_chars": len(code),
        # Static rules only: the render's coverage (what ran) comes later (paintenv/length.py).
        "estimated_tokens": painting_tokens(code),
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
        analysis = SketchAnalysis(code, strictness, resolve(root, data))
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
    except Exception as exc:  # noqa: BLE001 - belt and braces: the reward path must never crash
        found = [Violation(GATE_ERROR, f"the gate failed: {type(exc).__name__}: {exc}")]
    stats["gate_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return _verdict(found, stats)


def gate_reply(reply: str, *, strictness: str = "allowlist") -> tuple[str | None, GateVerdict]:
    """Extract the sketch from a model reply and gate it. Prose-only replies, empty
    replies and replies with only non-JS blocks give `no_sketch_in_response`."""
    if strictness not in STRICTNESS_LEVELS:
        raise ValueError(f"strictness must be one of {STRICTNESS_LEVELS}, got {strictness!r}")
    found = sketch_in_reply(reply)
    if found.code is None:
        verdict = _verdict([Violation(NO_SKETCH, found.reason or "no sketch found")],
                           _base_stats(""))
        return None, verdict
    return found.code, gate_source(found.code, strictness=strictness)
