"""Which parts of a sketch ran (paintenv/coverage.py): markers placed in the sketch alone, what
each covers, the columns of errors mapped back, and that no sketch can set a marker itself.
(What length makes of the ranges: test_length.py.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from paintenv import render_worker, seedgen
from paintenv.coverage import MAX_MARKERS, executed_ranges, instrument
from paintenv.determinism import compare_paintings
from paintenv.js_syntax import parse_js
from paintenv.length import painting_chars
from paintenv.paint import paint_source
from tests.paintenv.adversarial import CASES, LEGIT
from tests.paintenv.adversarial import probes as probe_corpus
from tests.paintenv.adversarial.length_padding import corpus as padding_corpus
from tests.paintenv.sketches import sketch

CORPUS = Path(__file__).parent / "corpus"
PAINT = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.circle(0, 0, 40);\n}\n"


def ran(code: str, dead: tuple[str, ...] = ()) -> list[tuple[int, int]] | None:
    """The executed ranges a render reports when every marker ran except those of regions
    that start with one of `dead`, and those inside them."""
    marked = instrument(code)
    assert marked is not None
    regions = sorted(marked.regions, key=lambda r: r[2])
    dead_spans = [(a, b) for a, b, _ in regions if dead and code[a:b].startswith(dead)]
    flags = "".join("0" if any(da <= a and b <= db for da, db in dead_spans) else "1" for a, b, _ in regions)
    return marked.executed(flags)


def is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def test_markers_only_insert_and_keep_every_line_where_it_was():
    code = "let a = 1\nif (a) brush.circle(a, 2, 3)\nelse a = a && b || c\nconst f = x => x ? 1 : 2\n"
    marked = instrument(code)
    assert marked is not None and marked.markers > 0
    assert is_subsequence(code, marked.code)
    assert marked.code.count("\n") == code.count("\n")
    assert not parse_js(marked.code.encode()).has_error


def test_a_function_never_called_counts_nothing_header_included():
    code = PAINT + "function neverCalled(a) {\n  brush.circle(a, a, 10);\n}\n"
    executed = ran(code, dead=("function neverCalled",))
    assert executed == [(0, len(PAINT) - 1)]
    assert painting_chars(code, executed) == painting_chars(PAINT)


def test_a_branch_never_taken_and_the_code_after_a_return_count_nothing():
    code = "function setup() {\n  if (width < 0) {\n    brush.circle(1, 2, 3);\n  }\n  return;\n  brush.fill(1);\n}\n"
    executed = ran(code, dead=("{\n    brush", "brush.circle", "brush.fill"))
    text = "".join(code[a:b] for a, b in executed)
    assert "brush.circle" not in text and "brush.fill" not in text and "return;" in text


def test_single_statement_bodies_are_wrapped_and_a_directive_stays_first():
    marked = instrument('function f() {\n  "use strict";\n  for (;;) g();\n  do h(); while (0)\n}\n')
    assert marked is not None
    body = marked.code.split("{", 1)[1]
    assert body.lstrip().startswith('"use strict";')  # a directive must come first to be one
    assert re.search(r"for \(;;\) \{__paintRan_\w+\(\d+\);g\(\);\}", marked.code)
    assert re.search(r"do \{__paintRan_\w+\(\d+\);h\(\);\} while \(0\)", marked.code)


def test_a_labelled_loop_keeps_its_label_on_the_loop():
    marked = instrument("outer: for (let i = 0; i < 3; i++) for (;;) continue outer;\n")
    assert marked is not None
    assert re.search(r"outer: for \(let i = 0; i < 3; i\+\+\) \{", marked.code)


def test_branches_of_conditionals_and_logical_operators_are_regions_of_their_own():
    code = "let v = a ? b : c;\nv ||= d;\nlet w = e && f ?? g;\n"
    marked = instrument(code)
    assert marked is not None
    covered = {code[a:b] for a, b, _ in marked.regions}
    assert {"b", "c", "d", "f", "g"} <= covered


def test_an_error_column_inside_the_instrumented_line_maps_back_to_the_sketch():
    code = "let q = 1; if (q) { q.x.y; }\n"
    marked = instrument(code)
    assert marked is not None
    line = marked.code.split("\n")[0]
    col = line.index("q.x.y") + 1
    assert marked.original_column(1, col) == code.index("q.x.y") + 1
    assert marked.original_column(2, 5) == 5  # a line without markers
    assert marked.original_column(None, None) is None


def test_wide_characters_keep_ranges_in_characters():
    code = 'brush.fill("🌸", 1);\nfunction dead() { brush.circle(1, 2, 3); }\n'
    executed = ran(code, dead=("function dead",))
    assert executed == [(0, code.index("\n"))]


def test_the_page_saying_nothing_or_nothing_running_is_unknown_not_nothing():
    marked = instrument(PAINT)
    assert marked is not None
    assert marked.executed(None) is None
    assert marked.executed("1") is None or marked.markers == 1  # a wrong length
    assert marked.executed("0" * marked.markers) is None  # the module never ran
    assert marked.executed("2" * marked.markers) is None


def test_sketches_the_gates_parser_cannot_read_or_too_many_markers_are_left_alone():
    assert instrument("function setup( {") is None
    assert instrument("x();" * (MAX_MARKERS + 1)) is None


def test_innermost_ranges_decide_what_ran():
    assert executed_ranges([(0, 10, 1), (2, 8, 0), (4, 6, 3)], 10) == [(0, 2), (4, 6), (8, 10)]


def test_every_sketch_of_every_corpus_is_instrumented_and_still_parses():
    sketches = [path.read_text() for path in sorted(CORPUS.rglob("*.js"))] + [code for _, code in LEGIT]
    sketches += [seedgen.generate(s).code for s in range(0, 100, 7)]
    sketches += [case.code for case in CASES] + [case.code for case in padding_corpus()]
    sketches += [case.code for case in probe_corpus.cases()[::10]]
    checked, unreadable = 0, 0
    for code in sketches:
        if parse_js(code.encode("utf-8", "surrogatepass")).has_error:
            assert instrument(code) is None
            unreadable += 1
            continue
        marked = instrument(code)
        assert marked is not None and marked.markers > 0, code[:200]
        assert not parse_js(marked.code.encode("utf-8", "surrogatepass")).has_error
        assert is_subsequence(code, marked.code)
        checked += 1
    assert checked > 500 and unreadable < 10  # the hostile corpus's few broken sketches


# ---------------------------------------------------------------- rendered
@pytest.mark.slow
def test_markers_change_no_painting_and_no_error_position(renderer, monkeypatch):
    sketches = [code for name, code in LEGIT if name.startswith(("good/", "seedgen/"))][:3]
    broken = sketch("  if (width) { let q = 1; q.x.y; }")
    marked = [paint_source(c, renderer=renderer, seed=3, size=256) for c in [*sketches, broken]]
    monkeypatch.setattr(render_worker, "instrument", lambda code: None)
    plain = [paint_source(c, renderer=renderer, seed=3, size=256) for c in [*sketches, broken]]
    for with_markers, without in zip(marked[:-1], plain[:-1], strict=True):
        assert with_markers.passed and without.passed
        assert with_markers.painting_tokens is not None and without.painting_tokens is None
        assert compare_paintings(with_markers.render.png, [], without.render.png, []).same
    errors = [(e.line, e.col) for e in marked[-1].render.errors]
    assert errors and errors == [(e.line, e.col) for e in plain[-1].render.errors]


@pytest.mark.slow
def test_a_sketch_that_reaches_the_page_modules_cannot_mark_code_that_never_ran(renderer):
    # past the gate (which refuses import()), the renderer alone: the claim is already taken
    code = sketch(
        "  const mine = __paintClaimRan();\n"
        "  import('/shadows.js').then((m) => { const r = m.__paintClaimRan();"
        " for (let k = 0; r && k < 500; k++) r(k); });\n"
        "  if (mine) for (let k = 0; k < 500; k++) mine(k);") + (
        "function neverCalled(a) {\n  brush.circle(a, a, 10);\n  brush.circle(a, a, 20);\n}\n")
    painting = paint_source(code, renderer=renderer, render_failed_gate=True, seed=1, size=256)
    assert painting.render is not None and painting.render.executed is not None
    dead_at = code.index("function neverCalled")
    assert all(b <= dead_at for _, b in painting.render.executed)
