"""The taste judge's held-out report (paintenv.judges.taste): accuracy per pair kind with
Wilson intervals and a small-sample flag, hand-worked; the reliability table; calibration on a
constructed overconfident case; older stored models still loading."""
from __future__ import annotations

import math

import numpy as np
import pytest

from paintenv.features import FEATURE_NAMES, TASTE_FEATURE_NAMES, image_features
from paintenv.judges.taste import (
    MODEL_VERSION,
    SMALL_SAMPLE_PAIRS,
    TasteModel,
    evaluate_taste_model,
    fit_temperature,
    reliability_bins,
    wilson_interval,
)


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture."""


def one_feature_model(temperature: float = 1.0) -> TasteModel:
    """u(x) = x / temperature."""
    return TasteModel(feature_names=["x"], mean=[0.0], std=[1.0], weights=[1.0], temperature=temperature)


# utilities: love 3 and 1, okay 2 and 0, reject -1 and 2.5
ITEMS = [({"x": 3.0}, "love"), ({"x": 1.0}, "love"), ({"x": 2.0}, "okay"), ({"x": 0.0}, "okay"),
         ({"x": -1.0}, "reject"), ({"x": 2.5}, "reject")]


def test_it_orders_each_kind_of_pair_as_worked_by_hand():
    report = evaluate_taste_model(one_feature_model(), ITEMS)
    # love>okay: 3>2 3>0 1<2 1>0 -> 3/4; okay>reject: 2>-1 2<2.5 0>-1 0<2.5 -> 2/4;
    # love>reject: 3>-1 3>2.5 1>-1 1<2.5 -> 3/4; all 8/12
    assert {k: (report[k]["accuracy"], report[k]["pairs"]) for k in ("love_vs_okay", "okay_vs_reject",
                                                                      "love_vs_reject", "all")} == {
        "love_vs_okay": (0.75, 4), "okay_vs_reject": (0.5, 4), "love_vs_reject": (0.75, 4), "all": (8 / 12, 12)}
    assert report["love_vs_okay"]["log_loss"] == pytest.approx(
        np.mean([math.log1p(math.exp(-m)) for m in (1.0, 3.0, -1.0, 1.0)]))


def test_it_gives_each_kind_its_wilson_interval_and_flags_small_samples():
    report = evaluate_taste_model(one_feature_model(), ITEMS)
    low, high = report["okay_vs_reject"]["interval"]
    # 2 of 4: centre (0.5 + 1.96²/8) / (1 + 1.96²/4) = 0.5, half 1.96·sqrt(1/16 + 1.96²/64) / 1.9604 = 0.3848
    assert (low, high) == (pytest.approx(0.1500, abs=1e-4), pytest.approx(0.8500, abs=1e-4))
    assert all(report[k]["small_sample"] for k in ("love_vs_okay", "okay_vs_reject", "love_vs_reject", "all"))
    assert SMALL_SAMPLE_PAIRS == 30


def test_the_wilson_interval_matches_a_hand_worked_value_and_stays_inside_0_and_1():
    # 8 of 10: centre (0.8 + 0.19208) / 1.38416 = 0.71674, half 1.96·sqrt(0.016 + 0.009604) / 1.38416 = 0.22657
    low, high = wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_many_pairs_lift_the_small_sample_flag():
    items = [({"x": float(i)}, "love") for i in range(6)] + [({"x": float(i) - 3}, "okay") for i in range(6)]
    report = evaluate_taste_model(one_feature_model(), items)
    assert report["love_vs_okay"]["pairs"] == 36 and not report["love_vs_okay"]["small_sample"]


def test_the_reliability_table_counts_each_pair_in_both_orders_and_is_symmetric():
    rows = reliability_bins(np.array([0.0, 10.0, 10.0, -10.0]))
    by_bin = {(r["low"], r["high"]): (r["count"], r["observed"]) for r in rows}
    # P = 0.5 twice (one observed 1, one 0); P ≈ 1 three times (two right, one wrong), and their mirrors
    assert by_bin[(0.5, 0.6)] == (2, 0.5)
    assert by_bin[(0.9, 1.0)] == (3, pytest.approx(2 / 3))
    assert by_bin[(0.0, 0.1)] == (3, pytest.approx(1 / 3))
    assert sum(r["count"] for r in rows) == 8
    assert reliability_bins(np.zeros(0)) == []


def test_calibration_lowers_the_log_loss_of_an_overconfident_judge_and_brings_its_bins_to_the_diagonal():
    rng = np.random.default_rng(0)
    # Two paintings with true utility gap t; the grade calls the first better with probability
    # sigmoid(t). The judge sees the gap but is 8 times too sure: its margin is 8·t.
    t = rng.normal(0.0, 2.0, size=4000)
    first_graded_better = rng.random(4000) < 1.0 / (1.0 + np.exp(-t))
    margins = 8.0 * np.where(first_graded_better, t, -t)  # better minus worse, as the judge scores it
    temperature = fit_temperature(margins)
    assert temperature == pytest.approx(8.0, rel=0.15)
    before = float(np.logaddexp(0.0, -margins).mean())
    after = float(np.logaddexp(0.0, -margins / temperature).mean())
    assert after < 0.75 * before, (before, after)
    worst_before = max(abs(r["mean_predicted"] - r["observed"]) for r in reliability_bins(margins) if r["count"] > 200)
    worst_after = max(abs(r["mean_predicted"] - r["observed"])
                      for r in reliability_bins(margins / temperature) if r["count"] > 200)
    assert worst_after < 0.06 < worst_before


def test_a_stored_version_2_model_on_the_30_old_features_loads_and_scores_new_feature_dicts():
    stored = {"version": 2, "feature_names": list(FEATURE_NAMES), "mean": [0.0] * 30, "std": [1.0] * 30,
              "weights": [0.0] * 29 + [1.0], "temperature": 2.0, "kind": "bradley-terry-features"}
    model = TasteModel.from_dict(stored)
    a = image_features(np.full((64, 64, 3), 250, np.uint8))
    assert set(TASTE_FEATURE_NAMES) == set(a) and model.feature_names == list(FEATURE_NAMES)
    b = dict(a, largest_blob_share=a["largest_blob_share"] + 2.0, hue_harmony=5.0)  # only the 30th counts
    assert model.utility(b) - model.utility(a) == pytest.approx(1.0)  # (2 / std 1) / temperature 2
    assert TasteModel.from_dict(model.to_dict()) == model


def test_a_model_newer_than_the_code_is_refused_and_new_ones_carry_the_current_version():
    assert MODEL_VERSION == 3 and one_feature_model().to_dict()["version"] == 3
    with pytest.raises(ValueError, match="newer than this code"):
        TasteModel.from_dict({**one_feature_model().to_dict(), "version": MODEL_VERSION + 1})
