"""The static gate's round-two holes: a name read in a default parameter behind a body
declaration, `constructor` taken by destructuring, computed keys built without a string literal
(gate_keys.py, gate_members.py), assignments to the sketch API's own names, and `with`. The whole
cross product of forbidden names and hidings is tests/paintenv/test_hidden_names.py."""
from __future__ import annotations

import pytest

from tests.paintenv.sketches import codes, sketch


@pytest.mark.parametrize("declaration", ["var createGraphics;", "function createGraphics() {}",
                                         "let createGraphics = 0;", "class createGraphics {}"])
def test_it_refuses_a_name_read_in_a_default_parameter_behind_a_body_declaration(declaration):
    top = f"function hide(g = createGraphics) {{ {declaration} return g; }}\n"
    assert codes(top + sketch("  hide();")) == ["forbidden_api"]


def test_a_default_parameter_may_read_an_earlier_parameter_and_the_allowlist():
    top = "function wash(r = 40, s = r * PI, t = floor(s)) { var r2 = r; return t + r2; }\n"
    assert codes(top + sketch("  brush.circle(wash(), 300, 20, 0.1);")) == []


@pytest.mark.parametrize("holder", ["() => 0", "async () => 0", "function* () {}",
                                    "async function* () {}", "class {}", "function () {}"])
@pytest.mark.parametrize("pattern", ["const {{constructor: F}} = {h};", "let {{constructor}} = {h};",
                                     'var {{"constructor": F}} = {h};', "let F; ({{constructor: F}} = {h});",
                                     "const take = ({{constructor: F}}) => F; take({h});",
                                     "for (const {{constructor: F}} of [{h}]) {{}}"])
def test_it_refuses_constructor_taken_by_destructuring_from_any_function(holder, pattern):
    assert codes(sketch("  " + pattern.format(h=f"({holder})"))) == ["external_access"]


@pytest.mark.parametrize("key", [
    "String.fromCharCode(99, 111, 110, 115, 116, 114, 117, 99, 116, 111, 114)",
    "(1057).toString(36) + (1342885).toString(36) + (27).toString(36)",
    "Object.keys({constructor: 0})[0]",
    "(function constructor() {}).name",
    "([] + {})[5] + ([] + {})[1]",
    "String(setup).slice(0, 11)",
    "({ key: 1 }).key",
])
def test_it_refuses_a_computed_key_that_could_spell_constructor_without_a_string_literal(key):
    assert codes(sketch(f"  const F = (() => 0)[{key}];")) == ["external_access"]


@pytest.mark.parametrize("body", [
    "  for (let i = 0; i < 3; i++) { const p = [1, 2, 3][i]; }",
    "  const P = [4, 5]; brush.circle(P[P.length - 1], P[floor(random(2))], P[max(0, 1)], 0.1);",
    "  const P = [4, 5]; P.forEach((v, i) => brush.circle(P[i], v, 9, 0.1));",
    "  const C = {petal: \"#f4a582\", leaf: \"#5f8f4e\"}; for (const k in C) brush.fill(C[k], 150);",
    "  const C = {petal: \"#f4a582\"}; const tint = (part) => C[part]; brush.fill(tint(\"petal\"), 150);",
    "  const C = {petal: \"#f4a582\"}; for (const k of Object.keys(C)) brush.fill(C[k], 150);",
    "  const P = [4, 5]; let j = 0; j += 1; brush.circle(P[j], P[j ? 0 : 1], 9, 0.1);",
])
def test_computed_keys_that_are_numbers_or_known_strings_pass(body):
    assert codes(sketch(body)) == []


def test_a_key_that_becomes_a_string_later_is_refused():
    body = ("  let k = 0; const P = [1];\n"
            "  k = String.fromCharCode(99);\n"
            "  const p = P[k];")
    assert codes(sketch(body)) == ["external_access"]


def test_a_literal_key_set_that_names_constructor_is_refused():
    body = "  for (const k of [\"fill\", \"constructor\"]) { const F = (() => 0)[k]; }"
    assert codes(sketch(body)) == ["external_access"]


def test_a_literal_that_is_changed_in_place_no_longer_vouches_for_its_keys():
    body = ("  const keys = [\"a\"]; keys.push(String.fromCharCode(99));\n"
            "  for (const k of keys) { const F = (() => 0)[k]; }")
    assert codes(sketch(body)) == ["external_access"]


def test_a_method_the_sketch_defines_no_longer_counts_as_a_number_builtin():
    body = "  const o = {indexOf() { return 1; }}; const P = [1]; const p = P[o.indexOf(1)];"
    assert codes(sketch(body)) == ["external_access"]


@pytest.mark.parametrize("line", ["  floor = () => 1;", "  frameCount++;", "  Math = {};",
                                  "  [floor] = [() => 1];"])
def test_it_refuses_assignments_to_the_sketch_apis_own_names(line):
    assert codes(sketch(line)) == ["forbidden_api"]


def test_it_refuses_with_statements():
    assert codes(sketch("  with (Math) { brush.circle(PI, 1, 9, 0.1); }")) == ["forbidden_api"]
