"""The static gate's own corpus: every forbidden name behind every way to hide it from
name resolution.

The sandbox corpus (`CASES`) crosses what a sketch does with how it hides it and runs
both layers; this one asks the static gate alone, which is meant to refuse without the
renderer's help. It is the cross product

    NAMES (what the sketch must not reach)  x  HIDINGS (how it keeps the gate from
                                                 seeing the name it reads)

where a name is either a global (`rect`, `fetch`, `createGraphics`, `Reflect`...) or a
property that escapes from any object (`constructor`, `__proto__`, `prototype`...). A
global is read from the global object and a property from a function, rotating over the
holders a property escape uses (an arrow, an async arrow, a generator, an async generator,
a class). The hidings:

* scope decoys: the name is read inside a parameter's default value while the function
  body declares the same name (`var`, `function`, `let`...), so a resolver that puts
  parameters and body in one scope thinks the read is the sketch's own;
* destructuring: the property taken by a pattern (`const {constructor: F} = f`) in every
  place a pattern goes;
* computed keys built without the name as a string literal: char codes, `toString(36)`,
  the letters of `[] + {}`, `Object.keys` / for-in over a literal, a function's `.name`,
  the sketch's own source text, a parameter, an array element, a template;
* `with`, which turns every name inside it into a property lookup.

`CONTROLS` are the same hidings around a harmless name (`floor`, `length`) where the
hiding itself is legitimate JavaScript (decoys, destructuring, literal keys): they must
pass, so the refusals above come from the name, not from the shape.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.paintenv.adversarial.codes import BARE, EXTERNAL, FORBIDDEN, TEXT_LABEL
from tests.paintenv.adversarial.skeleton import assemble, indent

# name -> the codes a refusal may carry
GLOBAL_NAMES: dict[str, frozenset[str]] = {
    "rect": frozenset({BARE}),
    "text": frozenset({TEXT_LABEL}),
    "drawingContext": frozenset({BARE}),
    "fetch": frozenset({EXTERNAL}),
    "document": frozenset({EXTERNAL}),
    "eval": frozenset({EXTERNAL}),
    "Function": frozenset({EXTERNAL}),
    "loadImage": frozenset({EXTERNAL}),
    "createGraphics": frozenset({FORBIDDEN}),
    "filter": frozenset({FORBIDDEN}),
    "Reflect": frozenset({FORBIDDEN}),
    "setTimeout": frozenset({EXTERNAL, FORBIDDEN}),
    "p5": frozenset({EXTERNAL, FORBIDDEN}),
}
PROPERTY_NAMES: dict[str, frozenset[str]] = {
    "constructor": frozenset({EXTERNAL}),
    "__proto__": frozenset({EXTERNAL}),
    "prototype": frozenset({EXTERNAL}),
    "getPrototypeOf": frozenset({EXTERNAL}),
}
NAMES: dict[str, frozenset[str]] = {**GLOBAL_NAMES, **PROPERTY_NAMES}
# What a property escape is taken from (rotated over the cases).
PROPERTY_HOLDERS: tuple[str, ...] = ("(() => 0)", "(async () => 0)", "(function* () {})",
                                     "(async function* () {})", "(class {})")
GLOBAL_HOLDER = "globalThis"

# The letters of strings JavaScript makes without a literal: [] + {}, !0 + [], ...
_WORDS = {"([] + {})": "[object Object]", "(!0 + [])": "true", "(!1 + [])": "false",
          "([][0] + [])": "undefined", "(+[][0] + [])": "NaN", "(1 / 0 + [])": "Infinity"}


def _from_char_codes(name: str) -> str:
    return f"String.fromCharCode({', '.join(str(ord(c)) for c in name)})"


def _from_code_points(name: str) -> str:
    return f"String.fromCodePoint({', '.join(str(ord(c)) for c in name)})"


def _radix36(name: str) -> str:
    """Runs of letters and digits as numbers printed in base 36; anything else by char code."""
    parts, run = [], ""
    for c in name + "\0":
        if c.isalnum() and c.isascii() and c.islower() or c.isdigit():
            run += c
            continue
        if run:
            parts.append(f"({int(run, 36)}).toString(36)")
            run = ""
        if c != "\0":
            parts.append(f"String.fromCharCode({ord(c)})")
    return " + ".join(parts)


def _jsfuck(name: str) -> str:
    """Each letter indexed out of a word JavaScript spells itself; the rest by char code."""
    parts = []
    for c in name:
        for expr, word in _WORDS.items():
            if c in word:
                parts.append(f"{expr}[{word.index(c)}]")
                break
        else:
            parts.append(f"String.fromCharCode({ord(c)})")
    return " + ".join(parts)


@dataclass(frozen=True)
class Hiding:
    """`build(name, holder, reach)` -> (top-level lines, setup lines). `reach` is an
    expression that reads the name plainly (`rect`, `(() => 0).constructor`)."""

    name: str
    build: Callable[[str, str, str], tuple[list[str], list[str]]]
    controllable: bool = False  # also built around a harmless name as a control
    # codes a refusal may also carry: `with` is forbidden itself, and a global read
    # through the global object (destructured, computed) is external access
    extra: frozenset[str] = frozenset()


def _decoy(function: str, decoy: str) -> Callable[[str, str, str], tuple[list[str], list[str]]]:
    """A parameter default reads `reach`; the body declares `name` (for a global)."""

    def build(name: str, holder: str, reach: str) -> tuple[list[str], list[str]]:
        local = decoy.format(name=name) if name.isidentifier() and holder == GLOBAL_HOLDER else "var unused;"
        top = [line.format(reach=reach, decoy=local) for line in function.splitlines()]
        return top, ["kit.hide();" if "const kit" in function else "hide();"]

    return build


def _pattern(template: str) -> Callable[[str, str, str], tuple[list[str], list[str]]]:
    def build(name: str, holder: str, reach: str) -> tuple[list[str], list[str]]:
        return [], template.format(name=name, holder=holder).splitlines()

    return build


def _key(make: Callable[[str], str]) -> Callable[[str, str, str], tuple[list[str], list[str]]]:
    def build(name: str, holder: str, reach: str) -> tuple[list[str], list[str]]:
        return [], [f"const taken = {holder}[{make(name)}];"]

    return build


def _source_text(name: str, holder: str, reach: str) -> tuple[list[str], list[str]]:
    top = ["function notes() {", f"  /*{name}*/", "}"]
    return top, ['const key = String(notes).split("/*")[1].split("*/")[0];',
                 f"const taken = {holder}[key];"]


def _with(name: str, holder: str, reach: str) -> tuple[list[str], list[str]]:
    scope = "Math" if holder == GLOBAL_HOLDER else holder
    return [], [f"with ({scope}) {{", f"  var taken = {name};", "}"]


HIDINGS: tuple[Hiding, ...] = (
    # -- scope decoys: a default reads the name, the body declares it
    Hiding("default_var", _decoy("function hide(v = {reach}) {{\n  {decoy}\n  return v;\n}}",
                                 "var {name};"), controllable=True),
    Hiding("default_function", _decoy("function hide(v = {reach}) {{\n  {decoy}\n  return v;\n}}",
                                      "function {name}() {{ return 0; }}"), controllable=True),
    Hiding("default_let", _decoy("function hide(v = {reach}) {{\n  {decoy}\n  return v;\n}}",
                                 "let {name} = 0;"), controllable=True),
    Hiding("default_class", _decoy("function hide(v = {reach}) {{\n  {decoy}\n  return v;\n}}",
                                   "class {name} {{}}"), controllable=True),
    Hiding("default_arrow", _decoy("const hide = (v = {reach}) => {{\n  {decoy}\n  return v;\n}};",
                                   "var {name};"), controllable=True),
    Hiding("default_function_expression",
           _decoy("const hide = function (v = {reach}) {{\n  {decoy}\n  return v;\n}};", "var {name};"),
           controllable=True),
    Hiding("default_generator",
           _decoy("function* hide(v = {reach}) {{\n  {decoy}\n  yield v;\n}}", "var {name};"),
           controllable=True),
    Hiding("default_async",
           _decoy("async function hide(v = {reach}) {{\n  {decoy}\n  return v;\n}}", "var {name};"),
           controllable=True),
    Hiding("default_method",
           _decoy("const kit = {{\n  hide(v = {reach}) {{\n    {decoy}\n    return v;\n  }},\n}};",
                  "var {name};"), controllable=True),
    Hiding("default_class_method",
           _decoy("class Kit {{\n  hide(v = {reach}) {{\n    {decoy}\n    return v;\n  }}\n}}\n"
                  "const kit = new Kit();", "var {name};"), controllable=True),
    Hiding("default_in_pattern",
           _decoy("function hide({{ v = {reach} }} = {{}}) {{\n  {decoy}\n  return v;\n}}", "var {name};"),
           controllable=True),
    # -- destructuring the name out of its holder
    Hiding("destructure_const", _pattern("const {{ {name}: taken }} = {holder};"), controllable=True),
    Hiding("destructure_shorthand", _pattern("let {{ {name} }} = {holder};"), controllable=True),
    Hiding("destructure_string_key", _pattern('var {{ "{name}": taken }} = {holder};'), controllable=True),
    Hiding("destructure_default", _pattern("const {{ {name}: taken = 0 }} = {holder};"), controllable=True),
    Hiding("destructure_nested", _pattern("const {{ inner: {{ {name}: taken }} }} = {{ inner: {holder} }};"),
           controllable=True),
    Hiding("destructure_parameter",
           _pattern("const take = ({{ {name}: taken }}) => taken;\nconst got = take({holder});"),
           controllable=True),
    Hiding("destructure_catch",
           _pattern("try {{\n  throw {holder};\n}} catch ({{ {name}: taken }}) {{\n  console.log(taken);\n}}"),
           controllable=True),
    Hiding("destructure_for_of",
           _pattern("for (const {{ {name}: taken }} of [{holder}]) {{\n  console.log(taken);\n}}"),
           controllable=True),
    Hiding("destructure_assignment", _pattern("let taken;\n({{ {name}: taken }} = {holder});"),
           controllable=True),
    Hiding("destructure_computed_literal", _pattern('const {{ ["{name}"]: taken }} = {holder};'),
           controllable=True),
    # -- a computed key that never writes the name as a string literal
    Hiding("key_char_codes", _key(_from_char_codes)),
    Hiding("key_code_points", _key(_from_code_points)),
    Hiding("key_radix_36", _key(_radix36)),
    Hiding("key_object_letters", _key(_jsfuck)),
    Hiding("key_object_keys", _key(lambda name: f"Object.keys({{ {name}: 0 }})[0]")),
    Hiding("key_function_name", _key(lambda name: f"(function {name}() {{}}).name")),
    Hiding("key_class_name", _key(lambda name: f"(class {name} {{}}).name")),
    Hiding("key_template", _key(lambda name: f"`${{{_from_char_codes(name)}}}`")),
    Hiding("key_for_in", _pattern("for (const key in {{ {name}: 0 }}) {{\n  const taken = {holder}[key];\n}}"),
           controllable=True),
    Hiding("key_for_of_keys",
           _pattern("for (const key of Object.keys({{ {name}: 0 }})) {{\n  const taken = {holder}[key];\n}}"),
           controllable=True),
    Hiding("key_parameter", _pattern("const pick = (from, key) => from[key];\n"
                                     "const taken = pick({holder}, \"{name}\");"), controllable=True),
    Hiding("key_parameter_built", lambda name, holder, reach: (
        [], ["const pick = (from, key) => from[key];",
             f"const taken = pick({holder}, {_from_char_codes(name)});"])),
    Hiding("key_array_element", lambda name, holder, reach: (
        [], [f"const keys = [{_from_char_codes(name)}];", f"const taken = {holder}[keys[0]];"])),
    Hiding("key_mutated_literal", lambda name, holder, reach: (
        [], ["const keys = [0];", f"keys.push({_from_char_codes(name)});",
             "for (const key of keys) {", f"  const taken = {holder}[key];", "}"])),
    Hiding("key_reassigned", lambda name, holder, reach: (
        [], ["let key = 0;", f"key = {_from_char_codes(name)};", f"const taken = {holder}[key];"])),
    Hiding("key_source_text", _source_text),
    # -- with: every name inside is a property of the object
    Hiding("with_statement", _with, extra=frozenset({FORBIDDEN})),
)


@dataclass(frozen=True)
class HiddenName:
    id: str
    name: str
    hiding: str
    code: str
    codes: frozenset[str]  # the gate must report at least one of these


def _reach(name: str, holder: str) -> str:
    return name if holder == GLOBAL_HOLDER else f"{holder}.{name}"


def _holder(name: str, index: int) -> str:
    return GLOBAL_HOLDER if name in GLOBAL_NAMES else PROPERTY_HOLDERS[index % len(PROPERTY_HOLDERS)]


def _sketch(hiding: Hiding, name: str, holder: str) -> str:
    top, block = hiding.build(name, holder, _reach(name, holder))
    return assemble(top, block, [])


def _build() -> list[HiddenName]:
    cases = []
    for hi, hiding in enumerate(HIDINGS):
        for ni, (name, codes) in enumerate(NAMES.items()):
            holder = _holder(name, hi + ni)
            if holder == GLOBAL_HOLDER and not hiding.name.startswith("default_"):
                codes = codes | {EXTERNAL}  # the global object itself escapes
            cases.append(HiddenName(f"{name}__{hiding.name}", name, hiding.name,
                                    _sketch(hiding, name, holder), codes | hiding.extra))
    return cases


def _controls() -> list[tuple[str, str]]:
    """Each controllable hiding around `floor` (a global the sketch may read) and `length`
    (a property it may read)."""
    out = []
    for hiding in HIDINGS:
        if hiding.controllable:
            out.append((f"floor__{hiding.name}", _sketch(hiding, "floor", GLOBAL_HOLDER)
                        .replace(GLOBAL_HOLDER, "Math")))
            out.append((f"length__{hiding.name}", _sketch(hiding, "length", "[1, 2, 3]")))
    return out


HIDDEN_NAMES: list[HiddenName] = _build()
CONTROLS: list[tuple[str, str]] = _controls()


def show(case_id: str) -> str:
    return next(c.code for c in HIDDEN_NAMES if c.id == case_id)


__all__ = ["CONTROLS", "HIDDEN_NAMES", "HIDINGS", "NAMES", "HiddenName", "indent", "show"]
