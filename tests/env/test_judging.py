"""judge_against_references: both orders, dropped references, None when nothing resolved."""
from __future__ import annotations

import pytest

from paintapp.env.judges import judge_against_references, load_judge


class ScriptedJudge:
    """A real Judge implementation whose answers are given per (reference, order)."""

    name = "scripted"

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def compare(self, candidate_png, reference_png, *, prompt, candidate_first=True):
        self.calls.append((reference_png, candidate_first))
        answer = self.answers[(reference_png, candidate_first)]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_every_reference_is_judged_in_both_orders_and_averaged():
    judge = ScriptedJudge({(b"r1", True): 1.0, (b"r1", False): 0.0, (b"r2", True): 1.0, (b"r2", False): 1.0})
    result = judge_against_references(judge, b"cand", [(1, b"r1"), (2, b"r2")], prompt="a rose")
    assert sorted(judge.calls) == [(b"r1", False), (b"r1", True), (b"r2", False), (b"r2", True)]
    assert [r.score for r in result.references] == [0.5, 1.0]
    assert result.score == pytest.approx(0.75)


def test_a_reference_whose_judgement_failed_in_either_order_is_dropped():
    judge = ScriptedJudge({
        (b"r1", True): 1.0, (b"r1", False): (None, "timeout"),
        (b"r2", True): 0.0, (b"r2", False): 0.0,
    })
    result = judge_against_references(judge, b"cand", [(1, b"r1"), (2, b"r2")], prompt="a rose")
    assert result.dropped == 1
    assert result.score == 0.0
    assert result.to_dict()["references"][0]["orders"][1]["reason"] == "timeout"


def test_the_judge_part_is_none_when_no_reference_resolved_even_if_the_judge_raises():
    judge = ScriptedJudge({(b"r1", True): RuntimeError("boom"), (b"r1", False): 1.0})
    result = judge_against_references(judge, b"cand", [(1, b"r1")], prompt="a rose")
    assert result.score is None
    assert "RuntimeError: boom" in result.references[0].orders[0].reason


def test_unknown_backends_get_a_clear_error():
    with pytest.raises(ValueError, match="unknown backend"):
        load_judge("nonsense")
    with pytest.raises(ValueError, match="cannot load backend"):
        load_judge("paintapp.env.judges.nope.Judge")
