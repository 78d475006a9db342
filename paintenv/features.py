"""Watercolour-craft image features (numpy + Pillow + scikit-image/scipy, no Django).

`image_features(png_or_array)` measures a painting on a downscaled copy (longest side
`WORK_SIZE` = 256 px, so a 384 or 600 px render of the same sketch measures alike; ~10–30
ms) and returns a dict in the fixed order of `FEATURE_NAMES`. Every feature is a finite
float; on a blank sheet the paint features are 0 and margin is 0.5.

Terms used below:
  paper    the dominant colour (image.background_colour on the working copy)
  paint    pixels farther than 32 RGB from the paper (as image.paint_fraction)
  density  Euclidean RGB distance from the paper / (255·√3), 0..1: how much pigment a
           pixel carries. Translucent washes sit low, layered glazes step up, opaque
           dark blobs sit high.
  chroma   max(R,G,B) − min(R,G,B) in 0..1 (HSV saturation is unstable near white)

Features (all over paint pixels unless said otherwise):
  palette      hue_entropy        entropy of the 12-bin hue histogram of chromatic pixels, /log 12
               hue_clusters       peaks (≥ 5% of chromatic pixels) in the smoothed circular 36-bin hue histogram
               dominant_hue_share share of chromatic pixels in the largest 30° hue bin
               chromatic_share    share of paint with chroma ≥ 0.08
  sat./value   saturation_mean, saturation_std   HSV saturation
               value_contrast     luminance p98 − p2 over the whole sheet
               value_std          std of paint luminance
               muddy_share        dull and dark: chroma < 0.22 and value (max channel) < 0.62
               colour_purity      chroma / (RGB distance from paper / 255), averaged with weight
                                  distance² (= Σ chroma·dist / Σ dist²): how much of the paint's
                                  departure from the paper is colour rather than greying, where the
                                  pigment lies thickest (clean glazes ≈ 0.6–0.9, overmixed mud ≈ 0.3,
                                  grey ink 0)
               dark_share         near-black: luminance < 0.2
  edges        edge_share         share of the sheet on a paint boundary (local density range ≥ 0.08, gradient ridge)
               edge_sharpness     median over boundary pixels of gradient / local range
                                  (≈0.5 for a one-pixel step, ≈1/width for a soft bleed)
               hard_edge_share    boundary pixels with sharpness ≥ 0.3 (transition ≲ 2 px at 256 px)
  translucency density_mean, density_p90
               density_levels     0.05-wide density bins holding ≥ 2% of paint
               density_entropy    entropy of the 20-bin density histogram, /log 20
               layer_overlap      share of paint denser than 1.6 × its median (glazes over glazes)
  texture      texture_energy     mean |luminance − gaussian(σ=1)| inside washes (off the edges), ×10
  paper        paper_value        the paper's value (max channel), 0..1
  placement    paint_fraction     image.paint_fraction at full resolution
               coverage_deviation |ln(paint_fraction / 0.25)|: distance from a balanced quarter of the sheet
               centroid_offset    paint centroid's distance from the centre / (√2/2)
               spread             paint radius of gyration / that of a full sheet (1 = everywhere)
               margin             smallest gap between the paint's 1–99 % extent and the sheet's edge (sheet = 1)
               border_paint       share of the outer 4% frame that is paint (0 = breathing room)
               bbox_fill          paint share of the 1–99 % bounding box
               blob_count         connected paint regions of ≥ 0.05% of the sheet
               largest_blob_share largest region / all paint

Taste features (TASTE_EXTRA_NAMES, after the above; what the taste judge adds to them, each a
few ms at 256 px; FEATURE_NAMES stays the set that diversity distances and stored version-2
taste models use):
  colour       hue_harmony        best share of chromatic paint inside a harmonic hue template
                                  (one 90° arc, or two 45° arcs 180° apart), over all rotations:
                                  1 = analogous or complementary, low = hues all round the wheel
  edges        soft_edge_share    boundary pixels with sharpness < 0.18 (a bleed ≳ 4 px wide at 256 px)
  layering     translucent_share  paint lighter than density 0.25 (paper still shows through)
  composition  thirds_distance    density-weighted paint centroid's distance to the nearest
                                  rule-of-thirds point / (√2/3) (0 = on a thirds point)
               mass_balance       1 − |left − right| and |top − bottom| density mass asymmetry,
                                  averaged (1 = balanced about both axes)
  negative     open_space         radius of the largest paint-free disc / the short side, at most 1
  space                           (high = a big quiet area, 0 = no room anywhere)

`feature_vector` orders a dict into an array; `pairwise_distance` is a standardised
Euclidean distance (differences divided by FEATURE_SCALES, typical spreads measured on
the seed pool) for measuring how different the paintings of a group are.
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
from PIL import Image
from scipy import ndimage

from paintenv.image import PAINT_DISTANCE, as_array, paint_fraction

__all__ = [
    "FEATURE_NAMES",
    "TASTE_EXTRA_NAMES",
    "TASTE_FEATURE_NAMES",
    "MEASUREMENT_VERSION",
    "FEATURE_SCALES",
    "WORK_SIZE",
    "image_features",
    "cached_image_features",
    "clear_feature_cache",
    "feature_vector",
    "pairwise_distance",
    "mean_pairwise_distance",
]

WORK_SIZE = 256
BALANCED_COVERAGE = 0.25  # the centre of "balanced" coverage for coverage_deviation
CHROMATIC = 0.08  # chroma below this is grey: its hue is noise
EDGE_RANGE = 0.08  # a boundary needs at least this much local density range
HARD_SHARPNESS = 0.3
# A ramp across the 7-px range window reads about 1/7: below this a transition is ≳ 4 px wide.
SOFT_SHARPNESS = 0.18
TRANSLUCENT_DENSITY = 0.25

FEATURE_NAMES: tuple[str, ...] = (
    # palette
    "hue_entropy", "hue_clusters", "dominant_hue_share", "chromatic_share",
    # saturation and value
    "saturation_mean", "saturation_std", "value_contrast", "value_std", "muddy_share", "dark_share",
    "colour_purity",
    # edges
    "edge_share", "edge_sharpness", "hard_edge_share",
    # translucency and layering
    "density_mean", "density_p90", "density_levels", "density_entropy", "layer_overlap",
    # texture and paper
    "texture_energy", "paper_value",
    # coverage and placement
    "paint_fraction", "coverage_deviation", "centroid_offset", "spread", "margin", "border_paint",
    "bbox_fill", "blob_count", "largest_blob_share",
)

# Added for the taste judge (see the docstring); not in FEATURE_NAMES, so diversity distances
# and the taste models stored before them are unchanged.
TASTE_EXTRA_NAMES: tuple[str, ...] = (
    "hue_harmony", "soft_edge_share", "translucent_share", "thirds_distance", "mass_balance", "open_space",
)
TASTE_FEATURE_NAMES: tuple[str, ...] = FEATURE_NAMES + TASTE_EXTRA_NAMES
# Raise when a feature's measurement changes under the same name: measurements kept for an
# image (curation.measuring) name the set and this version, and are measured again otherwise.
MEASUREMENT_VERSION = 1

# Typical spread (std) of each feature over 200 rendered seed sketches at 384 px, good and
# weak together, rounded (dark_share, 0 there, gets a floor); the unit of
# pairwise_distance. Fixed, so distances compare across runs and pools.
FEATURE_SCALES: dict[str, float] = {
    "hue_entropy": 0.14, "hue_clusters": 0.5, "dominant_hue_share": 0.18, "chromatic_share": 0.16,
    "saturation_mean": 0.1, "saturation_std": 0.045, "value_contrast": 0.12, "value_std": 0.03,
    "muddy_share": 0.05, "dark_share": 0.05, "colour_purity": 0.17,
    "edge_share": 0.0035, "edge_sharpness": 0.04, "hard_edge_share": 0.09,
    "density_mean": 0.05, "density_p90": 0.08, "density_levels": 1.7, "density_entropy": 0.1,
    "layer_overlap": 0.075, "texture_energy": 0.022, "paper_value": 0.04,
    "paint_fraction": 0.18, "coverage_deviation": 0.7, "centroid_offset": 0.1, "spread": 0.17,
    "margin": 0.09, "border_paint": 0.2, "bbox_fill": 0.19, "blob_count": 2.5, "largest_blob_share": 0.23,
}


def image_features(image: bytes | np.ndarray | Image.Image) -> dict[str, float]:
    """The TASTE_FEATURE_NAMES (FEATURE_NAMES, then TASTE_EXTRA_NAMES) of one painting (PNG
    bytes, Pillow image or RGB(A) array)."""
    full = as_array(image)
    if full.size == 0:
        raise ValueError("empty image")
    small = _downscale(full)
    rgb = small.astype(np.float32) / 255.0
    h, w = rgb.shape[:2]

    paper = _paper(small)
    dist = np.sqrt(((rgb - paper) ** 2).sum(axis=-1)) * 255.0
    paint = dist > PAINT_DISTANCE
    density = dist / (255.0 * math.sqrt(3.0))
    n_paint = int(paint.sum())

    mx, mn = rgb.max(axis=-1), rgb.min(axis=-1)
    chroma = mx - mn
    sat = np.where(mx > 1e-6, chroma / np.maximum(mx, 1e-6), 0.0)
    lum = rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32)

    f: dict[str, float] = {name: 0.0 for name in TASTE_FEATURE_NAMES}
    pf = paint_fraction(full)
    f["paint_fraction"] = pf
    f["coverage_deviation"] = abs(math.log(max(pf, 1e-4) / BALANCED_COVERAGE))
    lo, hi = np.percentile(lum, [2, 98])
    f["value_contrast"] = float(hi - lo)
    f["paper_value"] = float(paper.max())
    if n_paint == 0:  # a blank sheet: nothing else to measure
        f["margin"] = 0.5
        f["mass_balance"] = f["open_space"] = 1.0
        return f

    # --- palette: hue over chromatic paint
    chromatic = paint & (chroma >= CHROMATIC)
    f["chromatic_share"] = float(chromatic.sum()) / n_paint
    if chromatic.any():
        hue = _hue(rgb[chromatic], mx[chromatic], chroma[chromatic])
        f.update(_hue_stats(hue))
        f["hue_harmony"] = _hue_harmony(hue)

    # --- saturation and value
    s, v, y = sat[paint], mx[paint], lum[paint]
    f["saturation_mean"] = float(s.mean())
    f["saturation_std"] = float(s.std())
    f["value_std"] = float(y.std())
    # Mud is dull AND dark: a pale grey wash is fine, a saturated deep crimson is fine.
    f["muddy_share"] = float(((chroma[paint] < 0.22) & (v < 0.62)).mean())
    f["dark_share"] = float((y < 0.2).mean())
    dp = dist[paint] / 255.0
    f["colour_purity"] = float((chroma[paint] * dp).sum() / max(float((dp * dp).sum()), 1e-9))

    # --- edges: gradient of density relative to the local density range
    f.update(_edge_stats(density, paint))

    # --- translucency and layering
    d = density[paint]
    f["density_mean"] = float(d.mean())
    f["density_p90"] = float(np.percentile(d, 90))
    hist = np.bincount(np.minimum((d / 0.05).astype(np.int32), 19), minlength=20) / d.size
    f["density_levels"] = float((hist >= 0.02).sum())
    f["density_entropy"] = _entropy(hist) / math.log(20)
    f["layer_overlap"] = float((d > 1.6 * np.median(d)).mean())
    f["translucent_share"] = float((d < TRANSLUCENT_DENSITY).mean())

    # --- texture: high-frequency energy inside washes, away from their boundaries
    interior = ndimage.minimum_filter(paint.view(np.uint8), size=5) > 0  # 2 px in from any edge
    grad = _gradient(lum)
    calm = interior & (grad < 0.03)
    if calm.sum() >= 20:
        residual = np.abs(lum - ndimage.gaussian_filter(lum, 1.0))
        f["texture_energy"] = float(residual[calm].mean()) * 10.0

    # --- placement
    f.update(_placement(paint, h, w))
    f.update(_composition(density * paint, paint))
    return f


_CACHE_SIZE = 512
_cache: OrderedDict[bytes, dict[str, float]] = OrderedDict()
_cache_lock = threading.Lock()


def cached_image_features(png: bytes) -> dict[str, float]:
    """image_features of PNG bytes, memoised by SHA-1 (bounded LRU, thread-safe).

    A rollout's painting is measured by both the quality scorer and the taste judge, and
    a group's references by every rollout of the group: measure each image once.
    """
    key = hashlib.sha1(png).digest()
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return dict(_cache[key])
    features = image_features(png)  # outside the lock: ~10-30 ms
    with _cache_lock:
        _cache[key] = features
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return dict(features)


def clear_feature_cache() -> None:
    with _cache_lock:
        _cache.clear()


def feature_vector(features: Mapping[str, float], names: Sequence[str] = FEATURE_NAMES) -> np.ndarray:
    """The features in `names` order as float64 (a missing name is an error, not a 0)."""
    return np.array([float(features[n]) for n in names], dtype=np.float64)


def pairwise_distance(
    a: Mapping[str, float] | np.ndarray,
    b: Mapping[str, float] | np.ndarray,
    *,
    scales: Mapping[str, float] | np.ndarray | None = None,
) -> float:
    """Standardised Euclidean distance: sqrt(Σ ((a_i − b_i) / scale_i)²) over FEATURE_NAMES.

    Scales default to FEATURE_SCALES (fixed, so a group's diversity is comparable across
    runs); pass a std vector to standardise against a particular population instead.
    """
    va = a if isinstance(a, np.ndarray) else feature_vector(a)
    vb = b if isinstance(b, np.ndarray) else feature_vector(b)
    if scales is None:
        s = feature_vector(FEATURE_SCALES)
    elif isinstance(scales, np.ndarray):
        s = scales.astype(np.float64)
    else:
        s = feature_vector(scales)
    s = np.where(s > 1e-12, s, 1.0)
    return float(np.sqrt((((va - vb) / s) ** 2).sum()))


def mean_pairwise_distance(group: Sequence[Mapping[str, float] | np.ndarray]) -> float:
    """A group's diversity: mean pairwise_distance over all pairs (0 for fewer than two)."""
    pairs = list(combinations(group, 2))
    if not pairs:
        return 0.0
    return float(np.mean([pairwise_distance(a, b) for a, b in pairs]))


# ---------------------------------------------------------------------------------------


def _downscale(arr: np.ndarray) -> np.ndarray:
    h, w = arr.shape[:2]
    scale = WORK_SIZE / max(h, w)
    if scale >= 1.0:
        return arr
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    # BOX averages every source pixel: thin dark lines and granulation survive as tone.
    return np.asarray(Image.fromarray(arr).resize(size, Image.Resampling.BOX))


def _paper(small: np.ndarray) -> np.ndarray:
    from paintenv.image import background_colour

    return np.array(background_colour(small), dtype=np.float32) / 255.0


def _hue(rgb: np.ndarray, mx: np.ndarray, chroma: np.ndarray) -> np.ndarray:
    """HSV hue in [0, 1) for chromatic pixels (chroma > 0)."""
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    c = np.maximum(chroma, 1e-6)
    hue = np.where(mx == r, ((g - b) / c) % 6.0, np.where(mx == g, (b - r) / c + 2.0, (r - g) / c + 4.0))
    return (hue / 6.0) % 1.0


def _hue_stats(hue: np.ndarray) -> dict[str, float]:
    h12 = np.bincount((hue * 12).astype(np.int32) % 12, minlength=12) / hue.size
    h36 = np.bincount((hue * 36).astype(np.int32) % 36, minlength=36) / hue.size
    # Circular smoothing, then peaks that carry at least 5% of the chromatic paint.
    kernel = np.array([1, 2, 3, 2, 1], dtype=np.float64) / 9.0
    padded = np.concatenate([h36[-2:], h36, h36[:2]])
    smooth = np.convolve(padded, kernel, mode="valid")
    mass = np.convolve(np.concatenate([h36[-2:], h36, h36[:2]]), np.ones(5), mode="valid")
    left, right = np.roll(smooth, 1), np.roll(smooth, -1)
    peaks = (smooth > left) & (smooth >= right) & (mass >= 0.05)
    return {
        "hue_entropy": _entropy(h12) / math.log(12),
        "hue_clusters": float(peaks.sum()),
        "dominant_hue_share": float(h12.max()),
    }


def _gradient(x: np.ndarray) -> np.ndarray:
    # Sobel / 8 is a per-pixel derivative: a one-pixel step of height h reads h/2.
    gx = ndimage.sobel(x, axis=1, mode="nearest") / 8.0
    gy = ndimage.sobel(x, axis=0, mode="nearest") / 8.0
    return np.hypot(gx, gy)


def _edge_stats(density: np.ndarray, paint: np.ndarray) -> dict[str, float]:
    grad = _gradient(density)
    local_range = ndimage.maximum_filter(density, size=7) - ndimage.minimum_filter(density, size=7)
    ridge = grad >= ndimage.maximum_filter(grad, size=3) - 1e-9  # the steepest line across an edge
    near_paint = ndimage.maximum_filter(paint.view(np.uint8), size=5) > 0
    edges = ridge & (local_range >= EDGE_RANGE) & (grad > 0.005) & near_paint
    n = int(edges.sum())
    if n == 0:
        return {"edge_share": 0.0, "edge_sharpness": 0.0, "hard_edge_share": 0.0, "soft_edge_share": 0.0}
    sharp = grad[edges] / np.maximum(local_range[edges], 1e-6)
    return {
        "edge_share": n / edges.size,
        "edge_sharpness": float(np.median(sharp)),
        "hard_edge_share": float((sharp >= HARD_SHARPNESS).mean()),
        "soft_edge_share": float((sharp < SOFT_SHARPNESS).mean()),
    }


def _hue_harmony(hue: np.ndarray) -> float:
    """The largest share of hues inside one 90° arc or two 45° arcs 180° apart, over the 36
    rotations of a 10°-bin histogram (Cohen-Or et al.'s harmonic templates, two of them)."""
    h36 = np.bincount((hue * 36).astype(np.int32) % 36, minlength=36) / hue.size
    cyclic = np.concatenate([h36, h36])
    arc90 = np.array([cyclic[i:i + 9].sum() for i in range(36)])
    arc45 = np.array([cyclic[i:i + 5].sum() for i in range(36)])  # 5 bins ≈ 45° (50°)
    complementary = arc45 + np.roll(arc45, -18)
    return float(min(1.0, max(arc90.max(), complementary.max())))


def _composition(mass: np.ndarray, paint: np.ndarray) -> dict[str, float]:
    """thirds_distance, mass_balance and open_space (see the docstring) from the density of
    paint pixels (`mass`, 0 off the paint)."""
    h, w = mass.shape
    total = float(mass.sum())
    ys = (np.arange(h) + 0.5) / h
    xs = (np.arange(w) + 0.5) / w
    cx = float(mass.sum(axis=0) @ xs) / total
    cy = float(mass.sum(axis=1) @ ys) / total
    thirds = min(math.hypot(cx - tx, cy - ty) for tx in (1 / 3, 2 / 3) for ty in (1 / 3, 2 / 3))
    left, top = float(mass[:, : w // 2].sum()), float(mass[: h // 2].sum())
    right, bottom = float(mass[:, w - w // 2:].sum()), float(mass[h - h // 2:].sum())
    asymmetry = (abs(left - right) + abs(top - bottom)) / (2.0 * total)
    # Distance to the nearest paint pixel; the sheet's edge does not count as paint, so the
    # paper left round a small motif is open space too (capped at the short side).
    room = ndimage.distance_transform_edt(~paint)
    return {
        "thirds_distance": thirds / (math.sqrt(2.0) / 3.0),
        "mass_balance": 1.0 - asymmetry,
        "open_space": float(min(1.0, room.max() / min(h, w))),
    }


def _placement(paint: np.ndarray, h: int, w: int) -> dict[str, float]:
    ys, xs = np.nonzero(paint)
    x = (xs + 0.5) / w
    y = (ys + 0.5) / h
    cx, cy = float(x.mean()), float(y.mean())
    x1, x99 = np.percentile(x, [1, 99])
    y1, y99 = np.percentile(y, [1, 99])
    frame = max(1, round(0.04 * min(h, w)))
    border = np.ones_like(paint)
    border[frame:-frame, frame:-frame] = False
    box = paint[int(y1 * h): int(math.ceil(y99 * h)), int(x1 * w): int(math.ceil(x99 * w))]
    labels, count = ndimage.label(paint)
    sizes = np.bincount(labels.ravel())[1:] if count else np.zeros(0)
    big = sizes[sizes >= 0.0005 * paint.size]
    return {
        "centroid_offset": math.hypot(cx - 0.5, cy - 0.5) / math.sqrt(0.5),
        "spread": math.sqrt(float(x.var() + y.var())) / math.sqrt(1.0 / 6.0),
        "margin": float(max(0.0, min(x1, y1, 1.0 - x99, 1.0 - y99))),
        "border_paint": float(paint[border].mean()),
        "bbox_fill": float(box.mean()) if box.size else 0.0,
        "blob_count": float(big.size),
        "largest_blob_share": float(sizes.max() / paint.sum()) if sizes.size else 0.0,
    }


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())
