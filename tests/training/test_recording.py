"""What a judged sketch becomes (training/recording.py): a multi-turn rollout's reward from its
turns, and a step's revision figures."""
from __future__ import annotations

import pytest

from paintenv.paint import paint_reply
from painting.pipeline import JudgedSketch, PaintJob
from tests.training.factories import BARE_RECT, GOOD
from training import metrics as keys
from training.recording import TurnOutcome, revision_metrics, rollout_reward


def test_a_rollouts_reward_is_its_final_painting_plus_the_weighted_gain_and_none_when_any_turn_is_none():
    assert rollout_reward([0.2, 0.6], gain_weight=0.0) == 0.6
    assert rollout_reward([0.2, 0.6], gain_weight=0.5) == pytest.approx(0.8)
    assert rollout_reward([0.6, 0.2], gain_weight=0.5) == pytest.approx(0.0)
    assert rollout_reward([0.0, 0.4, 0.5], gain_weight=1.0) == pytest.approx(1.0)
    assert rollout_reward([None, 0.6], gain_weight=0.5) is None
    assert rollout_reward([0.6, None], gain_weight=0.0) is None
    assert rollout_reward([], gain_weight=0.0) is None


def painted(code: str, reward: float | None) -> JudgedSketch:
    """A turn's outcome as the pipeline gives it: the real gate's verdict on `code`, and a
    render (passed) only for a sketch the gate let through."""
    reply = f"```js\n{code}```"
    painting = paint_reply(reply, renderer=None)
    render = {"passed": True, "paint_fraction": 0.3} if painting.gate.passed else None
    return JudgedSketch(job=PaintJob(reply=reply, prompt="a peach hibiscus"), painting=painting, render=render, reward=reward)


def chain(*turns: tuple[str, float | None]) -> list[TurnOutcome]:
    return [TurnOutcome(reply=f"```js\n{code}```", painted=painted(code, reward)) for code, reward in turns]


def kept(turns: list[TurnOutcome]) -> list[TurnOutcome]:
    """`turns` and a KEEP after them: the last painting again."""
    return [*turns, TurnOutcome(reply="KEEP", painted=turns[-1].painted, kept=True)]


def test_the_revision_figures_count_turn_rewards_gain_improved_and_fixed_and_leave_out_what_has_nothing_to_count():
    figures = revision_metrics([
        chain((GOOD, 0.4), (GOOD, 0.7)),  # improved
        chain((BARE_RECT, 0.0), (GOOD, 0.5)),  # fixed from a gate failure
        chain((BARE_RECT, 0.0), (BARE_RECT, 0.0)),  # not fixed
        chain((GOOD, 0.6), (GOOD, 0.5)),  # worse
        chain((GOOD, None)),  # infrastructure failure at turn 1: out of gain, improved and fixed
        kept(chain((GOOD, 0.6))),  # KEEP: the same painting, no gain
    ])
    assert figures[keys.turn_reward(1)] == pytest.approx((0.4 + 0.0 + 0.0 + 0.6 + 0.6) / 5)
    assert figures[keys.turn_reward(2)] == pytest.approx((0.7 + 0.5 + 0.0 + 0.5 + 0.6) / 5)
    assert figures[keys.REVISION_GAIN] == pytest.approx((0.3 + 0.5 + 0.0 - 0.1 + 0.0) / 5)
    assert figures[keys.IMPROVED_SHARE] == pytest.approx(2 / 5)
    assert figures[keys.KEPT_SHARE] == pytest.approx(1 / 5)
    assert figures[keys.FIXED_SHARE] == pytest.approx(1 / 2)
    no_gate_failure = revision_metrics([chain((GOOD, 0.4), (GOOD, 0.7))])
    assert keys.FIXED_SHARE not in no_gate_failure  # nothing to fix is not "0% fixed"
    assert revision_metrics([chain((GOOD, None))]) == {}
