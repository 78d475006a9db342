"""The taste judge: a Bradley–Terry model on feature differences learned from graded
paintings. Fit and evaluation on synthetic feature data with a known preference; the
judge on synthetic images (no browser)."""
from __future__ import annotations

import dataclasses
import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from paintenv import features as features_module
from paintenv.features import FEATURE_NAMES, image_features
from paintenv.judges import judge_against_references, load_judge
from paintenv.judges.taste import (
    TasteJudge,
    TasteModel,
    evaluate_taste_model,
    fit_taste_model,
    fit_temperature,
)
from tests.paintenv.test_features import hard_painting, muddy_painting, near_empty_painting, soft_painting


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture."""


def synthetic_pool(n: int, seed: int, true_w: np.ndarray, noise: float = 0.3):
    """Random feature dicts graded by a hidden utility: top third love, bottom third reject."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(FEATURE_NAMES))) * 0.2 + 0.5
    utility = (X - 0.5) / 0.2 @ true_w + rng.normal(scale=noise, size=n)
    lo, hi = np.quantile(utility, [1 / 3, 2 / 3])
    tiers = ["reject" if u < lo else "love" if u > hi else "okay" for u in utility]
    return [(dict(zip(FEATURE_NAMES, row.tolist())), tier) for row, tier in zip(X, tiers)]


@pytest.fixture(scope="module")
def true_w() -> np.ndarray:
    w = np.zeros(len(FEATURE_NAMES))
    w[FEATURE_NAMES.index("texture_energy")] = 1.5
    w[FEATURE_NAMES.index("edge_sharpness")] = -1.0
    w[FEATURE_NAMES.index("muddy_share")] = -0.7
    return w


@pytest.fixture(scope="module")
def fitted(true_w) -> TasteModel:
    return fit_taste_model(synthetic_pool(240, 1, true_w), held_out=synthetic_pool(60, 16, true_w), seed=0)


def test_the_fit_recovers_a_known_preference(fitted, true_w):
    w = np.array(fitted.weights)
    cosine = w @ true_w / (np.linalg.norm(w) * np.linalg.norm(true_w))
    assert cosine > 0.95
    assert np.argmax(w) == FEATURE_NAMES.index("texture_energy")


def test_held_out_pairs_are_ordered_like_the_hidden_curator(fitted, true_w):
    report = evaluate_taste_model(fitted, synthetic_pool(90, 2, true_w))
    for kind in ("love_vs_okay", "okay_vs_reject", "love_vs_reject"):
        assert report[kind]["pairs"] == 30 * 30
        assert report[kind]["accuracy"] > 0.8, (kind, report[kind])
    assert report["love_vs_reject"]["accuracy"] > 0.97
    assert report["all"]["pairs"] == 3 * 900


def test_the_model_counts_its_training_pairs_and_paintings(fitted):
    assert fitted.pair_counts == {"love>okay": 80 * 80, "okay>reject": 80 * 80, "love>reject": 80 * 80}
    assert fitted.item_counts == {"love": 80, "okay": 80, "reject": 80}
    assert fitted.feature_names == list(FEATURE_NAMES)


def test_the_stored_dict_names_its_kind_and_total_pairs(fitted):
    d = fitted.to_dict()
    assert d["kind"] == "bradley-terry-features"
    assert d["trained_pairs"] == 3 * 80 * 80 == fitted.trained_pairs
    assert d["version"] == 3 and d["l2"] == pytest.approx(0.01)
    assert d["temperature"] == fitted.temperature and d["calibration"]["method"] == "temperature"


def test_a_model_round_trips_through_json(fitted, true_w):
    restored = TasteModel.from_dict(json.loads(json.dumps(fitted.to_dict())))
    assert restored == fitted
    a, b = (f for f, _ in synthetic_pool(2, 5, true_w))
    assert restored.prob(a, b) == fitted.prob(a, b)
    assert TasteModel.from_dict(json.loads(fitted.to_json())).weights == fitted.weights


def test_a_model_stored_before_calibration_reads_as_temperature_one(fitted, true_w):
    data = {k: v for k, v in fitted.to_dict().items() if k not in ("temperature", "calibration")} | {"version": 1}
    old = TasteModel.from_dict(data)
    assert old.temperature == 1.0 and old.calibration == {}
    a, b = (f for f, _ in synthetic_pool(2, 5, true_w))
    margin = float((old.standardise(a) - old.standardise(b)) @ np.array(old.weights))
    assert old.prob(a, b) == pytest.approx(1 / (1 + math.exp(-margin)))


def test_a_model_from_a_newer_version_is_refused(fitted):
    data = fitted.to_dict() | {"version": 99}
    with pytest.raises(ValueError, match="newer"):
        TasteModel.from_dict(data)


def test_stronger_regularisation_shrinks_the_weights(true_w):
    pool = synthetic_pool(150, 3, true_w)
    loose, tight = fit_taste_model(pool, l2=0.01, calibration_folds=0), fit_taste_model(pool, l2=10.0, calibration_folds=0)
    assert np.linalg.norm(tight.weights) < 0.5 * np.linalg.norm(loose.weights)


def test_the_fit_caps_the_pairs_and_keeps_every_kind(true_w):
    model = fit_taste_model(synthetic_pool(120, 4, true_w), max_pairs=900, seed=7)
    assert set(model.pair_counts) == {"love>okay", "okay>reject", "love>reject"}
    assert sum(model.pair_counts.values()) == pytest.approx(900, abs=3)
    again = fit_taste_model(synthetic_pool(120, 4, true_w), max_pairs=900, seed=7)
    assert again == model  # deterministic for a seed, temperature included


def test_the_fit_refuses_a_zero_penalty(true_w):
    with pytest.raises(ValueError, match="l2"):
        fit_taste_model(synthetic_pool(30, 9, true_w), l2=0.0)


def test_a_constant_feature_gets_no_weight_and_breaks_nothing(true_w):
    pool = [(dict(f, dark_share=0.0), t) for f, t in synthetic_pool(60, 10, true_w)]
    model = fit_taste_model(pool)
    assert model.weights[FEATURE_NAMES.index("dark_share")] == pytest.approx(0.0, abs=1e-9)
    assert all(math.isfinite(w) for w in model.weights)


def test_the_fit_needs_two_tiers_and_known_tier_names(true_w):
    pool = synthetic_pool(30, 6, true_w)
    with pytest.raises(ValueError, match="two different tiers"):
        fit_taste_model([(f, "love") for f, _ in pool])
    with pytest.raises(ValueError, match="unknown tiers"):
        fit_taste_model([(pool[0][0], "meh"), (pool[1][0], "love")])


def test_evaluation_reports_no_accuracy_for_a_missing_kind(fitted, true_w):
    only_two = [(f, t) for f, t in synthetic_pool(30, 8, true_w) if t != "okay"]
    report = evaluate_taste_model(fitted, only_two)
    assert report["love_vs_okay"] == {"accuracy": None, "log_loss": None, "log_loss_uncalibrated": None, "pairs": 0}
    assert report["love_vs_reject"]["pairs"] == 100


# ---------------------------------------------------------------------------------------
# Calibration


def overconfident_pool(n: int, seed: int, true_w: np.ndarray):
    """Grades with much noise: an almost unpenalised fit on few of them is far too sure."""
    return synthetic_pool(n, seed, true_w, noise=2.0)


def test_fit_temperature_recovers_the_scale_of_overconfident_margins():
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=2.0, size=4000)
    first_wins = rng.random(4000) < 1 / (1 + np.exp(-logits))
    margins = np.where(first_wins, logits, -logits)  # winner minus loser, on the true scale
    assert fit_temperature(margins) == pytest.approx(1.0, abs=0.1)
    assert fit_temperature(5.0 * margins) == pytest.approx(5.0, rel=0.1)
    assert fit_temperature(20.0 * margins) == pytest.approx(20.0, rel=0.1)


def test_fit_temperature_never_sharpens():
    rng = np.random.default_rng(1)
    logits = rng.normal(scale=2.0, size=4000)
    margins = np.where(rng.random(4000) < 1 / (1 + np.exp(-logits)), logits, -logits)
    assert fit_temperature(0.5 * margins) == 1.0  # underconfident: left as the L2 penalty set it
    assert fit_temperature(np.array([1.0, 2.0, 3.0])) == 1.0  # perfectly ordered pairs
    assert fit_temperature(np.zeros(3)) == 1.0 and fit_temperature(np.zeros(0)) == 1.0


def test_an_overconfident_fit_gets_a_temperature_that_lowers_the_log_loss_of_pairs_it_never_saw(true_w):
    model = fit_taste_model(overconfident_pool(60, 11, true_w), held_out=overconfident_pool(60, 12, true_w), l2=1e-4)
    calibration = model.calibration
    assert model.temperature > 1.5 and calibration["method"] == "temperature"
    assert calibration["log_loss_after"] < calibration["log_loss_before"] and calibration["pairs"] == 3 * 20 * 20
    assert calibration["out_of_fold"]["folds"] == 5 and calibration["out_of_fold"]["pairs"] > 100
    unseen = overconfident_pool(150, 13, true_w)
    report = evaluate_taste_model(model, unseen)
    for kind in ("love_vs_okay", "okay_vs_reject", "love_vs_reject", "all"):
        assert report[kind]["log_loss"] < report[kind]["log_loss_uncalibrated"], (kind, report[kind])
    raw = evaluate_taste_model(dataclasses.replace(model, temperature=1.0), unseen)
    assert raw["all"]["accuracy"] == report["all"]["accuracy"]  # a temperature never reorders pairs
    assert raw["all"]["log_loss"] == pytest.approx(report["all"]["log_loss_uncalibrated"])


def test_without_enough_held_out_pairs_the_temperature_stays_one(true_w):
    pool = synthetic_pool(60, 13, true_w)
    assert fit_taste_model(pool).calibration == {} and fit_taste_model(pool).temperature == 1.0
    few = fit_taste_model(pool, held_out=synthetic_pool(4, 14, true_w))
    assert few.temperature == 1.0 and few.calibration["skipped"] == "fewer than 10 held-out pairs"
    assert "out_of_fold" not in fit_taste_model(pool, held_out=pool, calibration_folds=0).calibration
    with pytest.raises(ValueError, match="calibration_folds"):
        fit_taste_model(pool, held_out=pool, calibration_folds=1)


def test_calibration_changes_no_weight_and_no_order(true_w):
    pool = overconfident_pool(60, 14, true_w)
    calibrated = fit_taste_model(pool, held_out=overconfident_pool(40, 15, true_w), l2=1e-4)
    plain = fit_taste_model(pool, l2=1e-4)
    assert calibrated.temperature > 1.0 and calibrated.weights == plain.weights
    features = [f for f, _ in synthetic_pool(20, 15, true_w)]
    assert np.argsort([calibrated.utility(f) for f in features]).tolist() == \
        np.argsort([plain.utility(f) for f in features]).tolist()


# The demo pool `make demo` builds, as rendered at 512 px: each seed reference's image
# features, demo grade and split in demo:v1 (bench/taste_calibration.py --save-features).
DEMO_POOL = Path(__file__).parent / "data" / "demo_pool_features.json"
BAND = (0.02, 0.98)


def _share_in_band(model: TasteModel, candidates, references) -> float:
    p = [model.prob(c, r) for c in candidates for r in references]
    return sum(BAND[0] <= x <= BAND[1] for x in p) / len(p)


def test_on_the_demo_pools_grades_calibration_takes_the_judge_off_0_and_1():
    paintings = json.loads(DEMO_POOL.read_text(encoding="utf-8"))["paintings"]
    train = [(p["features"], p["tier"]) for p in paintings if p["split"] == "train"]
    held_out = [(p["features"], p["tier"]) for p in paintings if p["split"] == "eval"]
    assert (len(train), len(held_out)) == (112, 28)
    model = fit_taste_model(train, held_out=held_out)
    uncalibrated = dataclasses.replace(model, temperature=1.0)
    assert model.temperature > 2.0

    love_vs_okay = evaluate_taste_model(model, held_out)["love_vs_okay"]
    assert love_vs_okay["pairs"] == 13 * 15
    assert love_vs_okay["log_loss"] < love_vs_okay["log_loss_uncalibrated"]

    loves = [f for f, tier in train if tier == "love"]
    others = [p["features"] for p in paintings if p["split"] != "train"]  # eval members and rejects
    before, after = _share_in_band(uncalibrated, others, loves), _share_in_band(model, others, loves)
    assert before < 0.3 and after > 0.6, (before, after)


# ---------------------------------------------------------------------------------------
# The judge on images


@pytest.fixture(scope="module")
def image_model() -> TasteModel:
    """A curator who loves soft translucent washes and rejects hard, muddy or empty sheets."""
    train = [(image_features(soft_painting(s)), "love") for s in range(4)]
    train += [(image_features(soft_painting(s, spread=0.3, blobs=3)), "okay") for s in range(4)]
    train += [(image_features(p(s)), "reject") for s in range(2) for p in (hard_painting, muddy_painting, near_empty_painting)]
    return fit_taste_model(train)


def test_compare_is_a_probability_and_symmetric_in_its_two_images(image_model):
    judge = TasteJudge(model=image_model)
    a, b = soft_painting(10), hard_painting(10)
    p_ab = judge.compare(a, b, prompt="x")
    p_ba = judge.compare(b, a, prompt="x")
    assert 0.0 < p_ab < 1.0
    assert p_ab + p_ba == pytest.approx(1.0)
    assert judge.compare(a, a, prompt="x") == pytest.approx(0.5)


def test_the_presentation_order_does_not_change_the_verdict(image_model):
    judge = TasteJudge(model=image_model)
    a, b = soft_painting(11), muddy_painting(11)
    assert judge.compare(a, b, prompt="", candidate_first=True) == judge.compare(a, b, prompt="", candidate_first=False)


def test_the_judge_prefers_what_its_curator_loved_on_unseen_paintings(image_model):
    judge = TasteJudge(model=image_model)
    for seed in (20, 21):
        soft = soft_painting(seed)
        for worse in (hard_painting(seed), muddy_painting(seed), near_empty_painting(seed)):
            assert judge.compare(soft, worse, prompt="a rose") > 0.8


def test_features_are_computed_once_per_image_however_often_it_is_compared(image_model, monkeypatch):
    calls = []
    real = features_module.image_features
    monkeypatch.setattr(features_module, "image_features", lambda png: calls.append(1) or real(png))
    features_module.clear_feature_cache()
    judge = TasteJudge(model=image_model)
    refs = [soft_painting(30), hard_painting(30), muddy_painting(30), soft_painting(31)]
    candidates = [soft_painting(32), hard_painting(33)]
    for cand in candidates:
        for ref in refs:
            judge.compare(cand, ref, prompt="", candidate_first=True)
            judge.compare(cand, ref, prompt="", candidate_first=False)
    assert len(calls) == len(refs) + len(candidates)


def test_the_feature_cache_is_bounded(image_model):
    judge = TasteJudge(params={"cache_size": 2}, model=image_model)
    for seed in range(4):
        judge.utility(soft_painting(40 + seed))
    assert len(judge._cache) == 2


def test_an_undecodable_image_is_no_answer_not_a_loss(image_model):
    judge = TasteJudge(model=image_model)
    assert judge.compare(b"not a png", soft_painting(1), prompt="") is None
    assert judge.compare(soft_painting(1), b"", prompt="") is None


def test_load_judge_builds_the_taste_judge_from_a_stored_model_dict(image_model, tmp_path):
    stored = json.loads(json.dumps(image_model.to_dict()))  # as a JSONField gives it back
    judge = load_judge("taste", params=stored)
    assert judge.name == "taste" and judge.model == image_model
    assert load_judge("taste", params={"model": image_model.to_dict()}).model == image_model
    path = tmp_path / "taste.json"
    path.write_text(image_model.to_json())
    assert load_judge("taste", params={"model_path": str(path)}).model == image_model
    with pytest.raises(ValueError, match="needs a fitted model"):
        load_judge("taste")


def test_judging_against_four_references_in_both_orders_gives_a_win_rate(image_model):
    judge = TasteJudge(model=image_model)
    refs = [("love-1", soft_painting(50)), ("love-2", soft_painting(51)),
            ("okay-1", soft_painting(52, spread=0.3, blobs=3)), ("okay-2", soft_painting(53, spread=0.3, blobs=3))]
    good = judge_against_references(judge, soft_painting(54), refs, prompt="p")
    bad = judge_against_references(judge, muddy_painting(54), refs, prompt="p")
    assert good.dropped == bad.dropped == 0
    assert all(len(r.orders) == 2 for r in good.references)
    assert 0.0 <= bad.score < 0.2 < good.score <= 1.0


def test_the_taste_judge_gives_the_same_verdicts_from_concurrent_threads(image_model):
    refs = [soft_painting(60 + i, spread=0.2 + 0.05 * i, blobs=2 + i) for i in range(4)]
    candidates = [soft_painting(70), muddy_painting(71), hard_painting(72), near_empty_painting(73)]
    calls = [(c, r, first) for c in candidates for r in refs for first in (True, False)]
    alone = TasteJudge(model=image_model)
    expected = [alone.compare(c, r, prompt="p", candidate_first=first) for c, r, first in calls]
    shared = TasteJudge(model=image_model, params={"cache_size": 3})  # one judge, a cache that keeps evicting
    features_module.clear_feature_cache()
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda call: shared.compare(call[0], call[1], prompt="p", candidate_first=call[2]), calls))
    assert got == expected

