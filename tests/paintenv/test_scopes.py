"""Scope resolution: which names a sketch declares at its top level, which reads are free."""
from __future__ import annotations

from paintenv.js_syntax import parse_js
from paintenv.scopes import decode_identifier, resolve


def scopes(code: str):
    data = code.encode()
    return resolve(parse_js(data), data)


def free_names(code: str) -> set[str]:
    return {name for name, _node in scopes(code).free()}


def test_it_decodes_unicode_escapes_in_identifiers():
    assert decode_identifier(r"\u0072ect") == "rect"
    assert decode_identifier(r"\u{74}ext") == "text"
    assert decode_identifier("plain") == "plain"


def test_a_name_declared_inside_a_helper_does_not_cover_the_top_level_use():
    code = "function helper() { let document = 1; return document; }\ndocument.body;"
    assert free_names(code) == {"document"}


def test_var_hoists_out_of_blocks_but_let_and_block_functions_do_not():
    code = "if (1) { var a = 1; let b = 2; function c() {} }\na; b; c;"
    assert scopes(code).module_names == {"a"}
    assert free_names(code) == {"b", "c"}


def test_parameters_catch_bindings_and_named_function_expressions_are_local():
    code = ("const f = function named(p, { q, r: [s] }, ...t) { return named(p, q, s, t, arguments); };\n"
            "try {} catch ({ message }) { message; }\nnamed; message;")
    assert free_names(code) == {"named", "message"}


def test_destructuring_assignments_read_their_targets():
    assert free_names("[x, y] = [1, 2]; ({ z } = {});") == {"x", "y", "z"}


def test_loop_heads_scope_their_declarations():
    code = "for (const [i, { j }] of pairs) { i + j; }\nfor (var k in o) {}\ni; k;"
    assert free_names(code) == {"pairs", "o", "i"}
    assert scopes(code).module_names == {"k"}


def test_escaped_declarations_declare_the_decoded_name():
    assert scopes(r"let \u0064ocument = 1;").module_names == {"document"}
    assert free_names(r"\u0072ect(0, 0, 1, 1);") == {"rect"}


def test_classes_methods_and_labels_bind_only_what_they_should():
    code = "class Petal { draw(x) { return x + this.y; } }\nouter: for (;;) break outer;\nPetal; draw;"
    assert scopes(code).module_names == {"Petal"}
    assert free_names(code) == {"draw"}


def test_a_parameter_default_reads_the_names_around_the_function_not_its_body():
    code = ("function f(a = createGraphics, b = a) { var createGraphics; function rect() {} return b; }\n"
            "const g = (c = rect, d = arguments) => { let rect = 0; return c; };")
    assert free_names(code) == {"createGraphics", "rect", "arguments"}


def test_the_body_still_sees_its_parameters_and_arguments():
    assert free_names("function f(a, { b }) { var c = a + b + arguments.length; return c; }") == set()


def test_every_binding_keeps_each_value_it_is_given():
    code = ("let i = 0; i++; i = i + 2; var s; s += 'x';\n"
            "for (const k in obj) {}\nfor (const v of [1, 2]) {}\nfunction f(p, q = 3) {}\n")
    report = scopes(code)
    ops = {b.name: [w.op for w in b.writes] for b in report.declarations.values()}
    assert ops["i"] == ["=", "++", "="]
    assert ops["s"] == ["undefined", "+="]
    assert ops["k"] == ["keys"] and ops["v"] == ["element"]
    assert ops["p"] == ["param"] and sorted(ops["q"]) == ["=", "param"]
    assert ops["f"] == ["function"]


def test_a_body_var_that_shares_a_parameter_name_starts_unknown():
    report = scopes("function f(k) { var k; return k; }")
    body_k = [b for b in report.declarations.values() if b.name == "k" and b.writes[0].op == "unknown"]
    assert body_k and [w.op for w in body_k[0].writes] == ["unknown", "undefined"]
