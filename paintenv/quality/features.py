"""Feature quality scorer (name "features"): a fixed watercolour-craft score in [0, 1].

It plays the "general taste" role HPSv3 plays in the published system and is NOT fitted
to any curator's grades (the taste judge is the curator's taste). Every number below is a
written-down craft rule over `paintenv.features`, measured on a 256 px working copy:

  edges        soft, bleeding boundaries:   ramp(edge_sharpness, 0.45 → 0, 0.22 → 1)
               (sharpness ≈ 0.5 is a one-pixel step, ≈ 0.25 a transition of several pixels;
               0 when no paint boundary is found)
  texture      granulation inside washes:  ramp(texture_energy, 0.01 → 0, 0.07 → 1)
  palette      clean, not muddy colour:    0.4·ramp(colour_purity, 0.3 → 0, 0.55 → 1)
                                         + 0.3·(1 − ramp(muddy_share, 0.02 → 0, 0.2 → 1))
                                         + 0.15·chromatic_share
                                         + 0.15·(1 if hue_clusters ≤ 3 else 3 / hue_clusters)
  layering     translucent glazes:         0.5·ramp(density_entropy, 0.3 → 0, 0.6 → 1)
                                         + 0.5·(1 − ramp(density_p90, 0.5 → 0, 0.8 → 1))
  composition  balanced coverage with breathing room and one dominant mass:
               coverage  = 1 on 10–45% paint, falling linearly in log(paint) to 0 at 2% and 90%
               breathing = 1 − ramp(border_paint, 0.05 → 0, 0.4 → 1)
               unity     = ramp(largest_blob_share, 0.15 → 0, 0.6 → 1)
               composition = 0.6·coverage + 0.2·breathing + 0.2·unity

  quality = presence · (0.30·composition + 0.20·edges + 0.10·texture + 0.25·palette + 0.15·layering)
  presence = ramp(paint_fraction, 0 → 0, 0.05 → 1): a sheet with a mark or two shows too
             little craft to be judged on it.

ramp(x, a → 0, b → 1) is linear between a and b and clipped to [0, 1] (a > b reverses it).
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paintenv.features import cached_image_features
from paintenv.image import BALANCED_COVERAGE

log = logging.getLogger(__name__)

WEIGHTS: dict[str, float] = {"composition": 0.30, "edges": 0.20, "texture": 0.10, "palette": 0.25, "layering": 0.15}
COVERAGE_LIMITS = (0.02, 0.90)  # zero composition coverage outside these (full inside BALANCED_COVERAGE)


def ramp(x: float, zero_at: float, one_at: float) -> float:
    """0 at `zero_at`, 1 at `one_at`, linear between, clipped (either direction)."""
    t = (x - zero_at) / (one_at - zero_at)
    return min(1.0, max(0.0, t))


@dataclass(frozen=True)
class QualityBreakdown:
    score: float
    presence: float
    composition: float
    edges: float
    texture: float
    palette: float
    layering: float
    coverage: float
    breathing: float
    unity: float


def coverage_score(paint_fraction: float) -> float:
    """1 inside BALANCED_COVERAGE, linear in log(paint) down to 0 at COVERAGE_LIMITS."""
    pf = max(paint_fraction, 1e-6)
    (lo, hi), (zero_lo, zero_hi) = BALANCED_COVERAGE, COVERAGE_LIMITS
    if pf < lo:
        return ramp(math.log(pf), math.log(zero_lo), math.log(lo))
    if pf > hi:
        return ramp(math.log(pf), math.log(zero_hi), math.log(hi))
    return 1.0


def quality_breakdown(f: Mapping[str, float]) -> QualityBreakdown:
    """Every sub-score and the final score, from image_features()."""
    edges = ramp(f["edge_sharpness"], 0.45, 0.22) if f["edge_share"] > 0 else 0.0
    texture = ramp(f["texture_energy"], 0.01, 0.07)
    clusters = f["hue_clusters"]
    harmony = 1.0 if clusters <= 3 else 3.0 / clusters
    palette = (
        0.4 * ramp(f["colour_purity"], 0.3, 0.55)
        + 0.3 * (1.0 - ramp(f["muddy_share"], 0.02, 0.2))
        + 0.15 * f["chromatic_share"]
        + 0.15 * harmony
    )
    layering = 0.5 * ramp(f["density_entropy"], 0.3, 0.6) + 0.5 * (1.0 - ramp(f["density_p90"], 0.5, 0.8))
    coverage = coverage_score(f["paint_fraction"])
    breathing = 1.0 - ramp(f["border_paint"], 0.05, 0.4)
    unity = ramp(f["largest_blob_share"], 0.15, 0.6)
    composition = 0.6 * coverage + 0.2 * breathing + 0.2 * unity
    parts = {"composition": composition, "edges": edges, "texture": texture, "palette": palette, "layering": layering}
    presence = ramp(f["paint_fraction"], 0.0, 0.05)
    score = presence * sum(WEIGHTS[k] * v for k, v in parts.items())
    return QualityBreakdown(
        score=min(1.0, max(0.0, score)), presence=presence, coverage=coverage, breathing=breathing, unity=unity,
        **parts,
    )


def quality_from_features(f: Mapping[str, float]) -> float:
    return quality_breakdown(f).score


class FeatureQualityScorer:
    """score(png, *, prompt) -> watercolour-craft score in [0, 1]; None only if undecodable.

    The prompt is accepted for the QualityScorer protocol and ignored: the score judges
    craft, not subject. `params` is accepted for load_quality(...) symmetry (no options).
    """

    name = "features"

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        self.params = dict(params or {})

    def score(self, png: bytes, *, prompt: str = "") -> float | None:
        try:
            return quality_from_features(cached_image_features(png))
        except Exception:  # noqa: BLE001 - an image we cannot read is "no answer", never a 0
            log.warning("features quality: cannot score the image", exc_info=True)
            return None

    def breakdown(self, png: bytes) -> QualityBreakdown | None:
        """The sub-scores behind score(), for the studio's inspection views."""
        try:
            return quality_breakdown(cached_image_features(png))
        except Exception:  # noqa: BLE001
            return None
