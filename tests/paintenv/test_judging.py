"""judge_against_references: both orders, dropped references, None when nothing resolved, and
one painting's calls run concurrently (bounded) with the same results."""
from __future__ import annotations

import threading
import time

import pytest

from paintenv.judges import judge_against_references, load_judge


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
        load_judge("paintenv.judges.nope.Judge")


class SlowJudge:
    """A real Judge that takes its time and records how many of its calls are inside it at
    once. Each call waits at a barrier of `together` callers, so calls that were not running
    side by side break it (a failed judgement) instead of making a timing assertion."""

    name = "slow"

    def __init__(self, together: int, fail: set[tuple[bytes, bool]] = frozenset(), pause: float = 0.0):
        self.barrier = threading.Barrier(together, timeout=20)
        self.pause = pause
        self.fail = fail
        self.lock = threading.Lock()
        self.inside = 0
        self.most_inside = 0

    def compare(self, candidate_png, reference_png, *, prompt, candidate_first=True):
        with self.lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            self.barrier.wait()
            time.sleep(self.pause)
            if (reference_png, candidate_first) in self.fail:
                raise ConnectionError("endpoint down")
            return (1.0 if candidate_first else 0.5), f"{reference_png.decode()} {candidate_first}"
        finally:
            with self.lock:
                self.inside -= 1


FOUR_REFERENCES = [(i, f"r{i}".encode()) for i in range(1, 5)]


def test_one_paintings_eight_judge_calls_run_at_once():
    judge = SlowJudge(together=8)
    result = judge_against_references(judge, b"cand", FOUR_REFERENCES, prompt="a rose", concurrency=8)
    assert judge.most_inside == 8
    assert result.dropped == 0 and result.score == pytest.approx(0.75)


def test_concurrent_judging_keeps_the_order_of_references_and_presentations():
    result = judge_against_references(SlowJudge(together=8), b"cand", FOUR_REFERENCES, prompt="a rose")
    assert [r.reference_id for r in result.references] == [1, 2, 3, 4]
    assert [[(o.candidate_first, o.reason) for o in r.orders] for r in result.references] == [
        [(True, f"r{i} True"), (False, f"r{i} False")] for i in range(1, 5)
    ]


def test_the_bound_caps_how_many_calls_run_at_once():
    judge = SlowJudge(together=2)
    result = judge_against_references(judge, b"cand", FOUR_REFERENCES, prompt="a rose", concurrency=2)
    assert judge.most_inside == 2 and result.dropped == 0


def test_concurrent_calls_that_fail_still_drop_their_reference_and_none_when_all_fail():
    judge = SlowJudge(together=8, fail={(b"r2", False), (b"r3", True)})
    result = judge_against_references(judge, b"cand", FOUR_REFERENCES, prompt="a rose", concurrency=8)
    assert [r.score for r in result.references] == [0.75, None, None, 0.75]
    assert result.dropped == 2 and result.score == pytest.approx(0.75)
    assert result.references[1].orders[1].reason == "ConnectionError: endpoint down"
    everything = {(png, first) for _, png in FOUR_REFERENCES for first in (True, False)}
    assert judge_against_references(SlowJudge(together=8, fail=everything), b"cand", FOUR_REFERENCES,
                                    prompt="a rose").score is None


def test_a_judge_that_caps_its_concurrency_is_called_one_at_a_time():
    judge = SlowJudge(together=1, pause=0.01)
    judge.max_concurrency = 1  # as the taste judge: CPU-bound, threads would only cost
    result = judge_against_references(judge, b"cand", FOUR_REFERENCES, prompt="a rose", concurrency=8)
    assert judge.most_inside == 1 and result.dropped == 0 and result.score == pytest.approx(0.75)
