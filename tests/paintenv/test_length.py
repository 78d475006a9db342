"""Length score: tokens of code ≈ code characters / 4 (comments dropped, blank runs as one
character, a token at most 32 characters); 0 below low and above high, 1 from full to high."""

from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.length import MAX_TOKEN_CHARS, code_chars, estimate_tokens, length_score

ROSE = (Path(__file__).parent / "corpus" / "good" / "rose.js").read_text()


def code_of(tokens: int) -> str:
    """Code of exactly `tokens` tokens: `abc;` is four characters of code."""
    return "abc;" * tokens


def test_tokens_are_code_characters_divided_by_four_rounded_down():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 0
    assert estimate_tokens("abc;") == 1
    assert estimate_tokens("abc;" * 1000 + "ab") == 1000


def test_comments_and_blank_runs_do_not_count():
    plain = "let x = 1;\nbrush.circle(x, 2, 3, 0.1);\n"
    padded = ("// a long explanation\n/* " + "words " * 500 + "*/\n\n\n   let x   =   1;   // note\n"
              "\n\t\tbrush.circle(x, 2, 3, 0.1); /* another */\n" + "// pad\n" * 200)
    assert code_chars(padded) == code_chars(plain) == len("let x = 1; brush.circle(x, 2, 3, 0.1);")
    assert length_score(padded) == length_score(plain)


def test_comment_padding_no_longer_buys_the_length_score():
    # the adversarial sweep: a 0.065 sketch padded with comments scored 1.0
    padded = ROSE + "\n/*" + "x" * 12_000 + "*/\n" + "// keep going\n" * 1000
    assert len(padded) // 4 > 3000  # the old estimate: full marks
    assert length_score(padded) == length_score(ROSE) < 0.2


def test_a_token_counts_at_most_thirty_two_characters():
    long_string = 'const notes = "' + "x" * 50_000 + '";'
    long_name = "const " + "n" * 50_000 + " = 1;"
    assert code_chars(long_string) == len('const notes = "";') + MAX_TOKEN_CHARS
    assert code_chars(long_name) == len("const  = 1;") + MAX_TOKEN_CHARS


def test_strings_keep_their_characters_and_a_broken_sketch_is_still_measured():
    assert code_chars('brush.fill("#e0857a", 180);') == len('brush.fill("#e0857a", 180);')
    assert code_chars("function setup() { brush.fill(") > 0


def test_a_real_sketch_counts_less_than_its_characters_and_scores_between_zero_and_one():
    assert estimate_tokens(ROSE) < len(ROSE) // 4
    assert 0.0 < length_score(ROSE) < 1.0


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
    assert length_score(code_of(tokens)) == pytest.approx(expected)


def test_the_score_rises_monotonically_between_low_and_full():
    scores = [length_score(code_of(t)) for t in range(150, 3001, 50)]
    assert scores == sorted(scores)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_thresholds_are_configurable():
    kwargs = dict(low_tokens=10, full_tokens=20, high_tokens=30)
    assert length_score(code_of(9), **kwargs) == 0.0
    assert length_score(code_of(15), **kwargs) == pytest.approx(0.5)
    assert length_score(code_of(20), **kwargs) == 1.0
    assert length_score(code_of(30), **kwargs) == 1.0
    assert length_score(code_of(31), **kwargs) == 0.0


def test_equal_low_and_full_thresholds_make_a_step():
    assert length_score(code_of(99), low_tokens=100, full_tokens=100) == 0.0
    assert length_score(code_of(100), low_tokens=100, full_tokens=100) == 1.0


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
        length_score("abc;" * 100, **kwargs)
