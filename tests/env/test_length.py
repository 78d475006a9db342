"""Length score: tokens ≈ chars / 4; 0 below low and above high, 1 from full to high."""

from __future__ import annotations

import pytest

from paintapp.env.length import estimate_tokens, length_score


def code_of(tokens: int) -> str:
    return "x" * (tokens * 4)


def test_tokens_are_characters_divided_by_four_rounded_down():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("x" * 4003) == 1000


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
        length_score("x" * 100, **kwargs)


def test_a_real_sketch_scores_between_zero_and_one():
    from pathlib import Path

    code = (Path(__file__).parent / "corpus" / "good" / "rose.js").read_text()
    assert 0.0 < length_score(code) < 1.0
