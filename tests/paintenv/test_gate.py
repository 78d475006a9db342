"""The static gate: corpus expectations, each rule, positions, strictness, robustness."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from paintenv.brush_api import ALLOWED_BRUSH_METHODS
from paintenv.extraction import extract_sketch
from paintenv.gate import (
    MAX_SOURCE_CHARS,
    MAX_VIOLATIONS_PER_CODE,
    GateVerdict,
    Violation,
    gate_reply,
    gate_source,
)
from paintenv.gate_rules import VIOLATION_CODES
from paintenv.length import estimate_tokens, painting_tokens
from tests.paintenv.sketches import codes, sketch

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "corpus"
EXPECTATIONS: dict[str, list[str]] = json.loads(
    (CORPUS / "static_expectations.json").read_text()
)
GOOD = sorted((CORPUS / "good").glob("*.js"))
HIBISCUS = (CORPUS / "good" / "hibiscus.js").read_text()


# ---------------------------------------------------------------------------------------
# The corpus


def _gate_file(path: Path) -> GateVerdict:
    # .txt files are whole model replies (prose, fences); .js files are bare sketches
    text = path.read_text()
    return gate_reply(text)[1] if path.suffix == ".txt" else gate_source(text)


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_each_corpus_file_gets_exactly_the_expected_codes(name):
    verdict = _gate_file(CORPUS / name)
    assert verdict.codes == sorted(EXPECTATIONS[name]), [str(v) for v in verdict.violations]
    assert verdict.passed == (not EXPECTATIONS[name])


def test_every_corpus_file_has_an_expectation_and_every_expectation_a_file():
    # good/ and hostile/ are this gate's corpus; other folders belong to other tests
    on_disk = {
        f"{p.parent.name}/{p.name}"
        for folder in ("good", "hostile")
        for p in (CORPUS / folder).glob("*")
        if p.suffix in (".js", ".txt")
    }
    assert on_disk == set(EXPECTATIONS)


def test_the_hostile_corpus_has_at_least_thirty_files():
    assert len(list((CORPUS / "hostile").glob("*"))) >= 30


def test_expected_codes_are_all_known_codes():
    for name, expected in EXPECTATIONS.items():
        assert set(expected) <= set(VIOLATION_CODES), name


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
@pytest.mark.parametrize("strictness", ["allowlist", "known"])
def test_good_sketches_pass_in_both_strictness_modes(path, strictness):
    verdict = gate_source(path.read_text(), strictness=strictness)
    assert verdict.passed, [str(v) for v in verdict.violations]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_sketches_use_only_the_ten_allowed_brush_methods(path):
    used = set(gate_source(path.read_text()).stats["brush_methods_used"])
    assert used <= ALLOWED_BRUSH_METHODS


def test_there_are_at_least_four_good_sketches():
    assert len(GOOD) >= 4


# ---------------------------------------------------------------------------------------
# Bare primitives, aliases, user-defined names


def test_it_rejects_bare_rect():
    assert codes(sketch("  rect(1, 2, 3, 4);")) == ["bare_primitives"]


@pytest.mark.parametrize(
    "line",
    [
        "const r = rect; r(1, 2, 3, 4);",
        "[rect][0](1, 2, 3, 4);",
        "rect.call(null, 1, 2, 3, 4);",
        "p5.prototype.ellipse(1, 2, 3);",
        "this.rect(1, 2, 3, 4);",
        "window.line(0, 0, 5, 5);",
        "globalThis.triangle(1, 2, 3, 4, 5, 6);",
        "self.quad(1, 2, 3, 4, 5, 6, 7, 8);",
        "const { ellipse: e } = { ellipse };",
        "const pg = createGraphics(10, 10); pg.ellipse(1, 2, 3);",
        "image(createGraphics(10, 10), 0, 0);",
        "drawingContext.clear(0);",
    ],
)
def test_it_flags_primitives_reached_through_aliases(line):
    assert "bare_primitives" in codes(sketch("  " + line))


def test_it_flags_a_user_defined_function_named_like_a_primitive_when_called():
    code = "function circle(x, y, r) { brush.circle(x, y, r, 0.1); }\n" + sketch(
        "  circle(1, 2, 3);"
    )
    assert codes(code) == ["bare_primitives"]


def test_it_allows_locals_named_like_primitives_that_are_only_read():
    code = sketch("  const point = { x: 1 };\n  for (const line of [[1]]) { line.push(point.x); }")
    assert codes(code) == []


def test_it_allows_methods_of_a_users_own_class_named_like_primitives():
    code = "class P { circle(x) { brush.circle(x, 1, 2, 0.1); } go() { this.circle(3); } }\n"
    code += sketch("  new P().go();")
    assert codes(code) == []


def test_it_ignores_primitives_in_comments_strings_templates_and_regexes():
    body = (
        "  // rect(1, 2, 3, 4); text('x'); fetch('/x');\n"
        "  /* ellipse(1, 2, 3) window['re' + 'ct']() */\n"
        "  const a = \"rect(1, 2) text('hi') eval('1')\";\n"
        "  const b = `line(${1 + 2}) and document.write`;\n"
        "  const c = /rect\\(|fetch/;"
    )
    assert codes(sketch(body)) == []


# ---------------------------------------------------------------------------------------
# Text


@pytest.mark.parametrize(
    "line",
    ['text("hi", 1, 2);', "textSize(20);", 'textFont("serif");', "const t = text; t('x', 1, 1);",
     'window.text("x", 1, 2);', 'createGraphics(9, 9).text("x", 1, 2);'],
)
def test_it_flags_text_drawing(line):
    assert "text_label" in codes(sketch("  " + line))


def test_dom_text_creators_are_both_text_and_external():
    assert codes(sketch('  createP("title");')) == ["external_access", "text_label"]


def test_a_text_method_without_arguments_is_not_text_drawing():
    # e.g. a fetch Response's .text(): flagged as external via fetch, not as text
    assert codes(sketch("  const s = { text() { return 1; } }; s.text();")) == []
    assert codes(sketch('  fetch("/x").then((r) => r.text());')) == ["external_access"]


# ---------------------------------------------------------------------------------------
# External access


@pytest.mark.parametrize(
    "line",
    [
        'fetch("/x");',
        'new XMLHttpRequest();',
        'new WebSocket("wss://x");',
        'new EventSource("/e");',
        'importScripts("x.js");',
        'import("x.mjs");',
        'eval("1");',
        'Function("return 1")();',
        'new Function("return 1");',
        'loadImage("a.png");',
        'loadJSON("a.json");',
        'loadFont("a.ttf");',
        'loadStrings("a.txt");',
        'loadShader("a.vert", "a.frag");',
        'createElement("iframe");',
        'createImg("a.png", "");',
        'createA("http://x", "x");',
        'document.title = "x";',
        'document.write("x");',
        'const e = {}; e.innerHTML = "<b>";',
        'const e = {}; e.outerHTML = "";',
        'window["fe" + "tch"]("/x");',
        'globalThis[name]("/x");',
        'self["fetch"]("/x");',
        'const u = "data:image/png;base64,AAAA";',
        'const u = `javascript:alert(1)`;',
        'navigator.sendBeacon("/x", "y");',
        'new Worker("w.js");',
        'new SharedWorker("w.js");',
        'location.href = "http://x";',
        'location = "http://x";',
        'localStorage.setItem("a", "b");',
        'require("fs");',
        'setTimeout("fetch(1)", 5);',
        'setInterval("x" + 1, 5);',
        'const F = [].constructor.constructor;',
        'const k = ({})["con" + "structor"];',
        'const w = window;',
        'new p5((p) => {});',
        'alert("x");',
        'saveCanvas("a", "png");',
        'new Image();',
        'httpGet("/x");',
    ],
)
def test_it_flags_every_external_access_route(line):
    assert "external_access" in codes(sketch("  " + line)), line


def test_timers_are_outside_the_sketch_api_even_with_function_callbacks():
    assert codes(sketch("  setTimeout(() => brush.circle(1, 1, 1, 0.1), 5);")) == ["forbidden_api"]


def test_it_refuses_load_pixels_but_allows_innocent_strings():
    assert codes(sketch('  loadPixels();')) == ["forbidden_api"]
    assert codes(sketch('  const m = "metadata: none";')) == []


def test_declared_names_that_shadow_soft_window_properties_are_fine():
    body = "  const top = 10; const self = {}; let parent = top; const location = [1, 2];"
    assert codes(sketch(body + "\n  parent = location[0] + self.x;")) == []


# ---------------------------------------------------------------------------------------
# Structure: entry points, canvas, painting, truncation


@pytest.mark.parametrize(
    "entry",
    [
        "function setup() {{ {body} }}",
        "async function setup() {{ {body} }}",
        "var setup = function () {{ {body} }};",
    ],
)
def test_it_accepts_each_form_of_setup(entry):
    body = 'createCanvas(600, 600, WEBGL); brush.fill("#e0857a", 180); brush.circle(1, 1, 9, 0.1);'
    assert codes(entry.format(body=body)) == []


@pytest.mark.parametrize(
    "entry", ["setup = function () {{ {body} }};", "window.setup = () => {{ {body} }};"]
)
def test_a_setup_assigned_to_an_undeclared_or_window_global_is_refused(entry):
    # The sketch runs as a module: an undeclared name is no global, and `window` is not
    # part of the sketch API.
    body = 'createCanvas(600, 600, WEBGL); brush.fill("#e0857a", 180); brush.circle(1, 1, 9, 0.1);'
    assert codes(entry.format(body=body)) == ["forbidden_api"]


def test_a_let_or_const_setup_is_not_an_entry_point_because_p5_reads_window_setup():
    body = 'createCanvas(600, 600, WEBGL); brush.fill("#e0857a", 180); brush.circle(1, 1, 9, 0.1);'
    verdict = gate_source(f"const setup = () => {{ {body} }};")
    assert verdict.codes == ["missing_entry_points"]
    assert (verdict.violations[0].line, verdict.violations[0].col) == (1, 7)


def test_a_setup_nested_in_another_function_is_not_an_entry_point():
    body = 'createCanvas(600, 600, WEBGL); brush.fill("#e0857a", 180); brush.circle(1, 1, 9, 0.1);'
    code = f"function main() {{ function setup() {{ {body} }} }}"
    assert codes(code) == ["missing_entry_points"]


@pytest.mark.parametrize(
    "canvas, ok",
    [
        ("createCanvas(600, 600, WEBGL);", True),
        ("createCanvas(600, 600, p5.WEBGL);", True),  # WEBGL, but p5 is forbidden_api
        ('createCanvas(600, 600, "webgl");', True),
        ("createCanvas(600, 600);", False),
        ("createCanvas(600, 600, P2D);", False),
        ('createCanvas(600, 600, "WEBGL2D");', False),
        ("resizeCanvas(600, 600);", False),
    ],
)
def test_the_canvas_must_be_webgl(canvas, ok):
    found = codes(sketch("", canvas=canvas))
    assert ("not_webgl" not in found) == ok
    # P2D, p5.WEBGL and resizeCanvas are outside the allowlist as well (resizeCanvas also
    # changes the canvas: canvas_size)
    assert set(found) <= {"not_webgl", "forbidden_api", "canvas_size"}


def test_a_fill_without_a_complete_shape_cannot_paint():
    code = (
        "function setup() {\n  createCanvas(600, 600, WEBGL);\n"
        '  brush.fill("#fff", 200);\n  brush.beginShape(0.5);\n  brush.endShape(true);\n}\n'
    )
    assert codes(code) == ["no_painting_calls"]


def test_a_shape_without_any_fill_cannot_paint():
    code = (
        "function setup() {\n  createCanvas(600, 600, WEBGL);\n"
        "  brush.circle(1, 1, 9, 0.1);\n}\n"
    )
    assert codes(code) == ["no_painting_calls"]


@pytest.mark.parametrize(
    "broken",
    [
        HIBISCUS[: len(HIBISCUS) // 2],
        HIBISCUS + "\n}\n",
        HIBISCUS.replace('brush.fill("#b8324a", 190);', 'brush.fill("#b8324a, 190);'),
        HIBISCUS + "\nconst t = `unterminated ${1}\n",
        HIBISCUS + "\n/* unterminated comment\n",
        HIBISCUS.replace("brush.vertex(300, 300);", "brush.vertex(300, 300;"),
        HIBISCUS.replace("const petals = 5;", "const petals = [5;"),
    ],
    ids=["cut", "extra-brace", "string", "template", "comment", "paren", "bracket"],
)
def test_it_reports_truncated_and_unbalanced_code(broken):
    assert codes(broken) == ["truncated"]


def test_truncation_still_reports_what_is_present():
    # absence checks are skipped on a broken tree, presence checks are not
    assert codes(sketch("  rect(1, 2, 3, 4);")[:-3]) == ["bare_primitives", "truncated"]


def test_too_long_input_is_rejected_without_parsing():
    verdict = gate_source("//" + "x" * MAX_SOURCE_CHARS)
    assert verdict.codes == ["too_long"]


# ---------------------------------------------------------------------------------------
# Reporting: every violation, positions, caps, stats


def test_it_reports_every_violation_not_only_the_first():
    body = '  rect(1, 2, 3, 4);\n  text("x", 1, 1);\n  fetch("/x");\n  brush.bleed(1);\n  brush.set("HB");'
    verdict = gate_source(sketch(body))
    assert verdict.codes == [
        "bare_primitives", "disallowed_brush_method", "external_access", "text_label",
        "unknown_brush_method",
    ]


def test_violations_carry_one_based_line_and_column():
    code = "function setup() {\n  createCanvas(600, 600, WEBGL);\n    rect(1, 2, 3, 4);\n}\n"
    rect = next(v for v in gate_source(code).violations if v.code == "bare_primitives")
    assert (rect.line, rect.col) == (3, 5)


def test_columns_count_characters_not_bytes():
    code = sketch('  const s = "péché 🌺"; rect(1, 2, 3, 4);')
    rect = next(v for v in gate_source(code).violations if v.code == "bare_primitives")
    line = code.splitlines()[rect.line - 1]
    assert line[rect.col - 1:].startswith("rect(")


def test_member_violations_point_at_the_property():
    code = sketch("  brush.watercolor(1);")
    v = gate_source(code).violations[0]
    assert code.splitlines()[v.line - 1][v.col - 1:].startswith("watercolor")


def test_sketch_wide_violations_have_no_position():
    v = gate_source("function setup() {}").violations
    assert {x.code for x in v} == {"not_webgl", "no_painting_calls"}
    assert all(x.line is None and x.col is None for x in v)


def test_repeats_of_one_code_are_capped_but_counted():
    body = "\n".join(f"  rect({i}, 0, 1, 1);" for i in range(100))
    verdict = gate_source(sketch(body))
    assert len(verdict.violations) == MAX_VIOLATIONS_PER_CODE
    assert verdict.stats["violation_counts"] == {"bare_primitives": 100}


def test_stats_count_the_hibiscus_statically():
    stats = gate_source(HIBISCUS).stats
    assert stats["shapes"] == 3
    assert stats["vertices"] == 12
    assert stats["circles"] == 2
    assert stats["fills"] == 4
    assert stats["brush_methods_used"] == sorted(ALLOWED_BRUSH_METHODS)
    assert stats["code_chars"] == len(HIBISCUS)
    # static: the render's coverage (what ran) comes later
    assert stats["estimated_tokens"] == painting_tokens(HIBISCUS) < estimate_tokens(HIBISCUS) < len(HIBISCUS) // 4
    assert stats["lines"] == len(HIBISCUS.splitlines())


def test_a_verdict_serialises_to_plain_json():
    verdict = gate_source(sketch("  rect(1, 2, 3, 4);"))
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["passed"] is False
    assert data["codes"] == ["bare_primitives"]
    assert data["violations"][0]["code"] == "bare_primitives"
    assert isinstance(data["violations"][0]["line"], int)


def test_violation_str_names_the_position_and_code():
    assert str(Violation("truncated", "x", 3, 7)) == "3:7 truncated: x"


# ---------------------------------------------------------------------------------------
# Replies


def test_gate_reply_returns_the_extracted_code_and_its_verdict():
    code, verdict = gate_reply("Sure!\n```js\n" + HIBISCUS + "```\nEnjoy.")
    assert code == HIBISCUS
    assert verdict.passed


def test_a_prose_only_reply_has_no_sketch():
    code, verdict = gate_reply("I would paint soft peach petals with a crimson throat.")
    assert code is None
    assert verdict.codes == ["no_sketch_in_response"]


def test_a_reply_with_only_other_languages_has_no_sketch():
    assert gate_reply("```python\nprint(1)\n```")[1].codes == ["no_sketch_in_response"]


def test_line_numbers_refer_to_the_extracted_sketch():
    reply = "Line one\nLine two\n```js\n" + sketch("  rect(1, 2, 3, 4);") + "```"
    rect = next(v for v in gate_reply(reply)[1].violations if v.code == "bare_primitives")
    assert rect.line == 7


# ---------------------------------------------------------------------------------------
# Robustness and speed


def _mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(6)
        i = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(i, len(chars) - 1)]
        elif op == 1:
            chars.insert(i, rng.choice("{}()[]`'\"/\\*;,.=+\n\x00\ud800é🌺"))
        elif op == 2:
            j = rng.randrange(len(chars) + 1)
            chars[i:i] = chars[min(i, j):max(i, j)][:200]
        elif op == 3:
            chars = chars[:i]
        elif op == 4:
            chars.insert(i, "".join(chr(rng.randrange(0, 0x2FFF)) for _ in range(rng.randint(1, 30))))
        else:
            chars.insert(i, rng.choice(["rect(", "brush[", "window.", "`${", "/*", "=>", "import("]))
    return "".join(chars)


def test_it_never_raises_on_hundreds_of_mutated_sketches():
    rng = random.Random(20260903)
    sources = [p.read_text() for p in GOOD]
    for _ in range(400):
        text = _mutate(rng, rng.choice(sources))
        for strictness in ("allowlist", "known"):
            verdict = gate_source(text, strictness=strictness)
            assert isinstance(verdict, GateVerdict)
            assert set(verdict.codes) <= set(VIOLATION_CODES)
            assert "gate_error" not in verdict.codes, verdict.violations
        code, verdict = gate_reply("```js\n" + text + "\n```")
        assert "gate_error" not in verdict.codes


@pytest.mark.parametrize(
    "garbage",
    [
        "\x00" * 1000,
        bytes(range(256)).decode("latin-1") * 20,
        "\ud800\udfff lone surrogates",
        "(" * 50_000,
        "[" * 30_000 + "]" * 30_000,
        "{" * 50_000,
        "a." * 50_000 + "b",
        "`${" * 20_000,
        "/*" + "x" * 150_000,
        "x" * (MAX_SOURCE_CHARS + 1),
        "x" * 1_000_000,
    ],
    ids=["nul", "bytes", "surrogates", "parens", "brackets", "braces", "chain", "templates",
         "comment", "just-over", "one-mb"],
)
def test_it_never_raises_on_garbage(garbage):
    verdict = gate_source(garbage)
    assert not verdict.passed
    assert "gate_error" not in verdict.codes
    assert gate_reply(garbage)[1].passed is False
    assert extract_sketch(garbage) is None or isinstance(extract_sketch(garbage), str)


def test_non_string_input_is_a_verdict_not_an_exception():
    assert gate_source(None).codes == ["no_sketch_in_response"]  # type: ignore[arg-type]
    assert gate_source(HIBISCUS.encode()).passed  # type: ignore[arg-type]
    assert gate_reply(12345)[1].codes == ["no_sketch_in_response"]  # type: ignore[arg-type]


def test_the_environment_imports_no_django():
    # paintapp/__init__.py loads the Celery app (a project concern); stand in an empty
    # package for it so only what paintenv itself imports is measured.
    probe = (
        "import sys, types; pkg = types.ModuleType('paintapp'); pkg.__path__ = ['paintapp']; "
        "sys.modules['paintapp'] = pkg; "
        "import paintenv.gate, paintenv.extraction, paintenv.length, "
        "paintenv.prompts, paintenv.brush_api; "
        "print(any(m == 'django' or m.startswith(('django.', 'celery')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


PAINTS = 'createCanvas(600, 600, WEBGL); brush.fill("#e0857a", 180); brush.circle(1, 1, 9, 0.1);'


def test_a_var_in_a_class_static_block_does_not_declare_a_top_level_name():
    code = f"class A {{ static {{ var self; }} }}\nfunction setup() {{ {PAINTS} self.document; }}"
    assert "external_access" in codes(code)


def test_a_function_followed_by_a_slash_is_refused_because_the_browser_reads_a_regex():
    # tree-sitter: `noop = (() => {}) / 1; var self; ...`; V8: `noop = () => {}` then a
    # regular expression that swallows the `var self` the gate would have believed.
    code = (f"let g = 1;\nlet noop = () => {{}}\n/ 1; var self; /.test(1) /g\n"
            f"function setup() {{ {PAINTS} self.document; }}")
    assert "external_access" in codes(code)
