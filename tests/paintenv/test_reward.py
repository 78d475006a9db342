"""Recipes and combine(): published presets, 0 on a failed gate, None on infrastructure failure."""
from __future__ import annotations

import pytest

from paintenv.reward import PRESETS, Recipe, combine

WEIGHTS = {"hps-only": (0.05, 0.05, 0.0, 0.90), "judge-led": (0.05, 0.05, 0.60, 0.30), "hps-led": (0.05, 0.05, 0.30, 0.60)}


def test_the_published_presets_are_the_vlm_judge_and_hpsv3_with_the_published_weights():
    published = {name: PRESETS[name] for name in WEIGHTS}
    assert {name: (r.w_gate, r.w_length, r.w_judge, r.w_quality) for name, r in published.items()} == WEIGHTS
    assert {(r.judge, r.quality) for r in published.values()} == {("vlm", "hpsv3")}


def test_the_studio_presets_weigh_the_same_parts_with_the_embedded_judge_and_scorer():
    studio = {name: PRESETS[f"studio-{name}"] for name in WEIGHTS}
    assert {name: (r.w_gate, r.w_length, r.w_judge, r.w_quality) for name, r in studio.items()} == WEIGHTS
    assert {(r.judge, r.quality) for r in studio.values()} == {("taste", "features")}
    assert set(PRESETS) == {*WEIGHTS, *(f"studio-{name}" for name in WEIGHTS)}
    assert all(recipe.name == name for name, recipe in PRESETS.items())


def test_a_failed_gate_is_a_zero_whatever_the_parts():
    breakdown = combine(PRESETS["judge-led"], passed=False, length=1.0, judge=None, quality=None)
    assert breakdown.reward == 0.0 and breakdown.gate == 0.0


def test_a_passing_rollout_sums_the_weighted_parts():
    breakdown = combine(PRESETS["judge-led"], passed=True, length=0.5, judge=0.75, quality=0.4)
    assert breakdown.reward == pytest.approx(0.05 + 0.05 * 0.5 + 0.60 * 0.75 + 0.30 * 0.4)
    assert breakdown.unavailable == []


def test_an_unavailable_weighted_part_makes_the_reward_none_with_the_reason():
    breakdown = combine(
        PRESETS["judge-led"], passed=True, length=1.0, judge=None, quality=0.5, reasons={"judge": "endpoint down"}
    )
    assert breakdown.reward is None
    assert breakdown.unavailable == ["judge: endpoint down"]


def test_an_unavailable_part_with_zero_weight_does_not_matter():
    breakdown = combine(PRESETS["hps-only"], passed=True, length=1.0, judge=None, quality=0.5)
    assert breakdown.reward == pytest.approx(0.05 + 0.05 + 0.45)


def test_recipes_round_trip_through_dicts_and_validate():
    recipe = Recipe("mine", w_judge=0.5, w_quality=0.4, judge="vlm", references_per_group=6)
    assert Recipe.from_dict(recipe.to_dict() | {"unknown": 1}) == recipe
    with pytest.raises(ValueError, match="negative"):
        Recipe("bad", w_quality=-1)
    with pytest.raises(ValueError, match="even"):
        Recipe("bad", references_per_group=3)
    with pytest.raises(ValueError, match="references_per_group > 0"):
        Recipe("bad", w_judge=0.5, references_per_group=0)
