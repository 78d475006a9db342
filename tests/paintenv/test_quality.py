"""Single-image quality scorers: the fixed watercolour-craft score (`features`) on
synthetic paintings and (slow) on rendered seed sketches (HPSv3: test_hpsv3.py)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from paintenv.features import image_features
from paintenv.quality import load_quality
from paintenv.quality.features import (
    WEIGHTS,
    FeatureQualityScorer,
    coverage_score,
    quality_breakdown,
    ramp,
)
from tests.paintenv.test_features import (
    hard_painting,
    muddy_painting,
    near_empty_painting,
    overfilled_painting,
    soft_painting,
)
from tests.support.rendering import render_many

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture."""


# ---------------------------------------------------------------------------------------
# The features scorer


def test_ramp_is_linear_between_its_ends_and_clipped_either_way():
    assert ramp(0.5, 0.0, 1.0) == 0.5
    assert ramp(-1.0, 0.0, 1.0) == 0.0 and ramp(2.0, 0.0, 1.0) == 1.0
    assert ramp(0.3, 0.45, 0.2) == pytest.approx(0.6)  # reversed: lower is better


def test_coverage_is_full_in_the_balanced_band_and_falls_off_to_zero_outside():
    assert coverage_score(0.10) == coverage_score(0.25) == coverage_score(0.45) == 1.0
    assert coverage_score(0.02) == 0.0 and coverage_score(0.001) == 0.0 and coverage_score(0.95) == 0.0
    assert 0.0 < coverage_score(0.05) < coverage_score(0.08) < 1.0
    assert 1.0 > coverage_score(0.6) > coverage_score(0.8) > 0.0


def test_soft_translucent_washes_outscore_hard_muddy_empty_and_overfilled_sheets():
    scorer = FeatureQualityScorer()
    soft = [scorer.score(soft_painting(seed), prompt="a peony") for seed in range(3)]
    for painter in (hard_painting, muddy_painting, near_empty_painting, overfilled_painting):
        worse = [scorer.score(painter(seed), prompt="a peony") for seed in range(2)]
        assert min(soft) > max(worse) + 0.1, (painter.__name__, soft, worse)


def test_each_sub_score_blames_the_right_fault():
    soft = quality_breakdown(image_features(soft_painting(0)))
    hard = quality_breakdown(image_features(hard_painting(0)))
    mud = quality_breakdown(image_features(muddy_painting(0)))
    empty = quality_breakdown(image_features(near_empty_painting(0)))
    full = quality_breakdown(image_features(overfilled_painting(0)))
    assert hard.edges < soft.edges and hard.texture < soft.texture
    assert mud.palette < soft.palette - 0.4
    assert empty.coverage == 0.0 and empty.presence < 0.2
    assert full.breathing < 0.2 < soft.breathing


def test_the_score_is_presence_times_the_weighted_sub_scores():
    b = quality_breakdown(image_features(soft_painting(4)))
    parts = {"composition": b.composition, "edges": b.edges, "texture": b.texture, "palette": b.palette,
             "layering": b.layering}
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)
    assert b.score == pytest.approx(b.presence * sum(WEIGHTS[k] * v for k, v in parts.items()))
    assert 0.0 <= b.score <= 1.0


def test_the_score_ignores_the_prompt_and_stays_within_zero_and_one():
    scorer = FeatureQualityScorer()
    png = soft_painting(5)
    assert scorer.score(png, prompt="a rose") == scorer.score(png, prompt="a lotus")
    for painter in (soft_painting, hard_painting, muddy_painting, near_empty_painting, overfilled_painting):
        assert 0.0 <= scorer.score(painter(0), prompt="") <= 1.0


def test_an_undecodable_image_scores_none_and_never_raises():
    scorer = FeatureQualityScorer()
    assert scorer.score(b"not a png at all", prompt="x") is None
    assert scorer.score(b"", prompt="x") is None
    assert scorer.breakdown(b"\x89PNG broken") is None


def test_load_quality_builds_the_features_scorer_by_name():
    scorer = load_quality("features")
    assert scorer.name == "features"
    assert isinstance(scorer, FeatureQualityScorer)


# ---------------------------------------------------------------------------------------
# Rendered seed sketches (slow: real Chromium renders)

SEED_CACHE = REPO / "bench" / "out" / "seeds"


def _auc(positives: list[float], negatives: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _rendered(sketches, size: int) -> list[bytes]:
    """PNG per sketch from bench/out/seeds (same key as bench/score.py), rendering what is
    missing two at a time."""
    paths = []
    for sk in sketches:
        key = hashlib.sha1(f"{sk.seed}:{size}:{sk.code}".encode()).hexdigest()[:12]
        paths.append(SEED_CACHE / f"s{size}" / f"{sk.id}-{key}.png")
    missing = [(sk, path) for sk, path in zip(sketches, paths) if not path.exists()]
    renders = render_many([sk.code for sk, _ in missing], seeds=[sk.seed for sk, _ in missing],
                          timeout_s=60, size=size) if missing else []
    for (sk, path), render in zip(missing, renders):
        assert render.png is not None, (sk.id, render.violations, render.errors)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render.png)
    return [path.read_bytes() for path in paths]


@pytest.mark.slow
def test_the_features_scorer_ranks_good_seed_sketches_above_weak_ones():
    from paintenv.seedgen import WEAK_STYLES, generate_pool

    sketches = generate_pool(24, seed=1, weak_share=0.5)
    assert {sk.style for sk in sketches} == {"good", *WEAK_STYLES}
    scorer = FeatureQualityScorer()
    scores = [scorer.score(png, prompt=sk.prompt) for sk, png in zip(sketches, _rendered(sketches, 256))]
    good = [s for sk, s in zip(sketches, scores) if sk.style == "good"]
    weak = [s for sk, s in zip(sketches, scores) if sk.style != "good"]
    assert _auc(good, weak) >= 0.8, (good, weak)
