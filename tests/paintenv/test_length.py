"""Length score: tokens of painting code ≈ its characters / 4 (comments dropped, blank runs as
one character, a token at most 32 characters; code that never ran, names nothing reads, data
tables and repeats left out); 0 below low and above high, 1 from full to high."""

from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.length import (
    DATA_CAP,
    MAX_TOKEN_CHARS,
    REPEAT_CAP,
    code_chars,
    estimate_tokens,
    length_score,
    painting_chars,
    painting_tokens,
    score_tokens,
)
from paintenv.paint import paint_source
from paintenv.reward import PRESETS
from tests.paintenv.adversarial.legit import LEGIT
from tests.paintenv.adversarial.length_padding import BASELINES, KINDS, SIZES, corpus, unrolled

ROSE = (Path(__file__).parent / "corpus" / "good" / "rose.js").read_text()
# How much length score padding may still buy: 0.02 of the length part, 0.001 of a reward.
TOLERANCE = 0.02
# The padding kinds the static rules alone answer; dead functions and dead branches need the
# render's coverage (the slow tests below).
STATIC_KINDS = ("number_table", "noop_brush_calls", "string_array", "unrolled_loops")
PAINT = "brush.circle(x, 2, 3, 0.1);\n"


def test_tokens_of_all_code_are_its_characters_divided_by_four_rounded_down():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 0
    assert estimate_tokens("abc;") == 1
    assert estimate_tokens("abc;" * 1000 + "ab") == 1000


def test_comments_and_blank_runs_do_not_count():
    plain = "let x = 1;\nbrush.circle(x, 2, 3, 0.1);\n"
    padded = ("// a long explanation\n/* " + "words " * 500 + "*/\n\n\n   let x   =   1;   // note\n"
              "\n\t\tbrush.circle(x, 2, 3, 0.1); /* another */\n" + "// pad\n" * 200)
    expected = len("let x = 1; brush.circle(x, 2, 3, 0.1);")
    assert code_chars(padded) == code_chars(plain) == expected
    assert painting_chars(padded) == painting_chars(plain) == expected
    assert length_score(padded) == length_score(plain)


def test_comment_padding_no_longer_buys_the_length_score():
    # the adversarial sweep: a 0.065 sketch padded with comments scored 1.0
    padded = ROSE + "\n/*" + "x" * 12_000 + "*/\n" + "// keep going\n" * 1000
    assert len(padded) // 4 > 3000  # the old estimate: full marks
    assert length_score(padded) == length_score(ROSE) < 0.2


def test_a_token_counts_at_most_thirty_two_characters():
    long_string = 'const notes = "' + "x" * 50_000 + '"; brush.circle(notes.length, 1, 1);'
    long_name = "const " + "n" * 50_000 + " = 1; brush.circle(" + "n" * 50_000 + ", 1, 1);"
    assert code_chars(long_string) == len('const notes = ""; brush.circle(notes.length, 1, 1);') + MAX_TOKEN_CHARS
    assert painting_chars(long_name) == len("const  = 1; brush.circle(, 1, 1);") + 2 * MAX_TOKEN_CHARS


def test_strings_keep_their_characters_and_a_broken_sketch_is_still_measured():
    assert painting_chars('brush.fill("#e0857a", 180);') == len('brush.fill("#e0857a", 180);')
    assert painting_chars("function setup() { brush.fill(") > 0


def test_a_declaration_nothing_reads_counts_nothing_nor_the_statements_that_only_assign_to_it():
    plain = "let x = 1;\n" + PAINT
    unread = "const unused = 42 * 7;\nlet total = 0;\ntotal += 5;\ntotal++;\nlet x = 1;\n" + PAINT
    assert painting_chars(unread) == painting_chars(plain)


def test_a_table_read_only_by_code_that_counts_nothing_counts_nothing_too():
    plain = "let x = 1;\n" + PAINT
    chained = ("const TABLE = [1, 2, 3, 4];\nlet sum = 0;\nfor (const v of TABLE) { sum += v; }\n"
               "let x = 1;\n" + PAINT)
    assert painting_chars(chained) == painting_chars(plain)


def test_a_declaration_whose_value_calls_something_still_counts():
    # `const mark = petal(...)` paints even if `mark` is never read
    assert painting_chars("const mark = petal(1, 2);\n") == len("const mark = petal(1, 2);")


def test_a_table_of_literals_counts_at_most_the_data_cap():
    table = "const P = [" + ", ".join(str(i * 1.5) for i in range(400)) + "];\n"
    code = table + "brush.circle(P[0], P[1], 3, 0.1);\n"
    short = "const P = [1, 2];\nbrush.circle(P[0], P[1], 3, 0.1);\n"
    tail = len(" brush.circle(P[0], P[1], 3, 0.1);")
    assert painting_chars(code) == len("const P = ;") + DATA_CAP + tail
    assert painting_chars(short) == code_chars(short)  # a palette-sized table counts whole


def test_an_expression_statement_that_does_nothing_counts_nothing():
    assert painting_chars('"use strict";\n1 + 2;\nwidth * 3;\n' + PAINT) == painting_chars(PAINT)


def test_a_statement_repeated_up_to_its_literals_counts_its_literals_up_to_the_repeat_cap():
    once = "brush.circle(10, 20, 3, 0.1);\n"
    many = "".join(f"brush.circle({10 + i}, {20 * i}, 3, 0.1);\n" for i in range(300))
    identical = "brush.noStroke();\n" * 660
    assert painting_chars(many) <= painting_chars(once) + 1 + REPEAT_CAP
    assert painting_chars(identical) == len("brush.noStroke();")


def test_numbered_names_count_as_one_name_when_statements_repeat():
    code = "".join(f"const petal{i} = {i} * 0.7;\nbrush.circle(petal{i}, 1, 2);\n" for i in range(50))
    first = "const petal0 = 0 * 0.7;\nbrush.circle(petal0, 1, 2);\n"
    assert painting_chars(code) <= painting_chars(first) + 2 * (1 + REPEAT_CAP)


def test_code_outside_the_executed_ranges_counts_nothing():
    dead = "function neverCalled(a) {\n  brush.circle(a, a, 10);\n}\n"
    branch = "if (width < 0) {\n  brush.circle(1, 2, 3);\n}\n"
    code = "let x = 1;\n" + dead + PAINT + branch
    ran = [(0, code.index("function")), (code.index(PAINT), code.index("{\n  brush.circle(1"))]
    # the test of an `if` none of whose branches ran decided only that nothing paints
    assert painting_chars(code, ran) == len("let x = 1; brush.circle(x, 2, 3, 0.1);")
    assert painting_chars(code, []) == 0
    assert painting_chars(code) > painting_chars(code, ran)  # without coverage: the static rules alone


def test_an_if_whose_else_ran_keeps_its_test_and_its_else():
    code = "if (width < 0) {\n  brush.circle(1, 2, 3);\n} else {\n  brush.circle(4, 5, 6);\n}\n"
    ran = [(0, code.index("{")), (code.index("} else"), len(code))]
    assert painting_chars(code, ran) == len("if (width < 0) } else { brush.circle(4, 5, 6); }")


def test_a_name_read_only_in_code_that_never_ran_is_unread():
    code = "const T = [1, 2, 3];\nfunction never() { brush.circle(T[0], 1, 1); }\n" + "let x = 1;\n" + PAINT
    ran = [(0, code.index("function")), (code.index("let x"), len(code))]
    assert painting_chars(code, ran) == painting_chars("let x = 1;\n" + PAINT)


@pytest.mark.parametrize("kind", STATIC_KINDS)
def test_padding_the_static_rules_answer_buys_no_length_over_its_baseline(kind):
    base = {name: length_score(code) for name, code in BASELINES.items()}
    for case in corpus(kinds=(kind,)):
        assert code_chars(case.code) > code_chars(BASELINES[case.baseline]), case.name  # it is padding
        assert length_score(case.code) <= base[case.baseline] + TOLERANCE, case.name


def test_the_padding_corpus_is_every_kind_times_every_baseline_times_every_size():
    cases = corpus()
    assert len(cases) == len(KINDS) * len(BASELINES) * len(SIZES)
    assert len({c.name for c in cases}) == len(cases)
    assert all(unrolled(code) != code for code in BASELINES.values())  # each has a loop to unroll


def test_legitimate_sketches_keep_a_static_length_close_to_the_old_rule():
    drops = sorted(score_tokens(painting_tokens(code)) - score_tokens(estimate_tokens(code)) for _, code in LEGIT)
    assert drops[len(drops) // 2] > -0.03  # the median sketch
    assert drops[0] > -0.12  # the worst


@pytest.mark.parametrize(
    "tokens, expected",
    [
        (0, 0.0),
        (149, 0.0),
        (150, 0.0),
        (1575, 0.5),
        (2999, (2999 - 150) / 2850),
        (3000, 1.0),
        (4500, 1.0),
        (6000, 1.0),
        (6001, 0.0),
        (20000, 0.0),
    ],
)
def test_the_default_thresholds_follow_the_published_shape(tokens, expected):
    assert score_tokens(tokens) == pytest.approx(expected)
    assert PRESETS["judge-led"].length_part(tokens) == pytest.approx(expected)


def test_the_score_rises_monotonically_between_low_and_full():
    scores = [score_tokens(t) for t in range(150, 3001, 50)]
    assert scores == sorted(scores)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_thresholds_are_configurable():
    kwargs = dict(low_tokens=10, full_tokens=20, high_tokens=30)
    assert score_tokens(9, **kwargs) == 0.0
    assert score_tokens(15, **kwargs) == pytest.approx(0.5)
    assert score_tokens(20, **kwargs) == 1.0
    assert score_tokens(30, **kwargs) == 1.0
    assert score_tokens(31, **kwargs) == 0.0


def test_equal_low_and_full_thresholds_make_a_step():
    assert score_tokens(99, low_tokens=100, full_tokens=100) == 0.0
    assert score_tokens(100, low_tokens=100, full_tokens=100) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(low_tokens=200, full_tokens=100),
        dict(full_tokens=7000, high_tokens=6000),
        dict(low_tokens=-1),
    ],
)
def test_thresholds_out_of_order_are_rejected(kwargs):
    with pytest.raises(ValueError):
        score_tokens(100, **kwargs)


def test_unknown_tokens_make_an_unknown_length_part_never_a_zero():
    assert PRESETS["judge-led"].length_part(None) is None


def test_a_sketch_judged_without_a_render_gets_the_static_figure_labelled_as_such():
    painting = paint_source(ROSE, renderer=None)
    assert painting.length_from == "static"
    assert painting.painting_tokens == painting_tokens(ROSE) == painting.gate.stats["estimated_tokens"]
    assert painting.length_score == score_tokens(painting_tokens(ROSE))


# ---------------------------------------------------------------- rendered: coverage
@pytest.mark.slow
def test_padding_of_every_kind_buys_no_length_over_its_baseline_when_rendered(renderer):
    baselines = {name: BASELINES[name] for name in ("good/rose", "seedgen/11")}
    base = {}
    for name, code in baselines.items():
        painting = paint_source(code, renderer=renderer, seed=1, size=256)
        assert painting.passed and painting.length_from == "render"
        base[name] = painting.length_score
    for case in corpus(baselines=baselines, sizes=(SIZES[1],)):
        painting = paint_source(case.code, renderer=renderer, seed=1, size=256)
        assert painting.passed, (case.name, painting.violations)
        assert painting.length_score is not None
        assert painting.length_score <= base[case.baseline] + TOLERANCE, case.name
        assert estimate_tokens(case.code) > estimate_tokens(baselines[case.baseline])  # the old rule paid


@pytest.mark.slow
def test_a_sketch_whose_module_never_ran_has_no_length_rather_than_zero(renderer):
    # a declaration twice over is an early error to V8 (not to the gate's parser): nothing runs
    painting = paint_source("let twice = 1;\nlet twice = 2;\n" + ROSE, renderer=renderer, render_failed_gate=True,
                            seed=1, size=256)
    assert painting.render is not None and "render_error" in painting.render.violations
    assert painting.length_from == "render"
    assert painting.painting_tokens is None and painting.length_score is None
