"""Watercolour-craft image features on synthetic Pillow paintings (no browser): each
feature moves the way its name says. The painters here are shared with the taste and
quality tests."""
from __future__ import annotations

import colorsys
import io
import math
from functools import cache

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from paintenv.features import (
    FEATURE_NAMES,
    FEATURE_SCALES,
    TASTE_FEATURE_NAMES,
    cached_image_features,
    clear_feature_cache,
    feature_vector,
    image_features,
    mean_pairwise_distance,
    pairwise_distance,
)
from paintenv.image import paint_fraction


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture (it needs
    pytest-django's `settings`) so these tests also run with `-p no:django`."""


# ---------------------------------------------------------------------------------------
# Synthetic paintings

PAPER = (250, 246, 238)
FLOWER = [(236, 120, 140), (245, 170, 120), (120, 170, 110), (200, 90, 120)]
MUD = [(110, 90, 70), (90, 80, 60), (100, 100, 70), (90, 70, 80), (70, 75, 65)]


def to_png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _glaze(img: Image.Image, box, colour, alpha: int, blur: float) -> Image.Image:
    """One translucent ellipse of colour laid over `img`, its edge bled by `blur` px."""
    mask = Image.new("L", img.size, 0)
    ImageDraw.Draw(mask).ellipse(box, fill=alpha)
    if blur:
        mask = mask.filter(ImageFilter.GaussianBlur(blur))
    return Image.composite(Image.new("RGB", img.size, colour), img, mask)


def _granulate(img: Image.Image, rng: np.random.Generator, amount: float = 6.0) -> Image.Image:
    """Pigment granulation: fine noise on the painted pixels only."""
    arr = np.asarray(img).astype(np.float32)
    painted = np.abs(arr - np.array(PAPER, np.float32)).sum(axis=-1) > 20
    noise = rng.normal(0.0, amount, arr.shape[:2])[..., None]
    arr = np.where(painted[..., None], arr + noise, arr)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


@cache  # the painters are deterministic: paint each picture once per session
def soft_painting(seed: int = 0, size: int = 256, spread: float = 0.15, blobs: int = 7) -> bytes:
    """Soft, bled, translucent overlapping blobs with granulation: a loose watercolour."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), PAPER)
    c = size / 2
    for i in range(blobs):
        r = size * rng.uniform(0.08, 0.14)
        x, y = c + rng.uniform(-spread, spread) * size, c + rng.uniform(-spread, spread) * size
        img = _glaze(img, (x - r, y - r * 0.8, x + r, y + r * 0.8), FLOWER[i % 4], 90, size / 60)
    return to_png(_granulate(img, rng))


@cache
def hard_painting(seed: int = 0, size: int = 256) -> bytes:
    """Flat, opaque, hard-edged polygons in the same colours and place."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), PAPER)
    draw = ImageDraw.Draw(img)
    c = size / 2
    for i in range(7):
        r = size * rng.uniform(0.08, 0.14)
        x, y = c + rng.uniform(-0.15, 0.15) * size, c + rng.uniform(-0.15, 0.15) * size
        turn = rng.uniform(0, 1)
        draw.polygon([(x + r * math.cos(a + turn), y + r * math.sin(a + turn)) for a in (0, 1.57, 3.14, 4.71)],
                     fill=FLOWER[i % 4])
    return to_png(img)


@cache
def near_empty_painting(seed: int = 0, size: int = 256, at: tuple[float, float] = (0.33, 0.33)) -> bytes:
    img = Image.new("RGB", (size, size), PAPER)
    x, y, r = at[0] * size, at[1] * size, 0.03 * size
    return to_png(_glaze(img, (x - r, y - r, x + r, y + r), (220, 110, 130), 170, 1))


@cache
def overfilled_painting(seed: int = 0, size: int = 256) -> bytes:
    """Heavy washes from edge to edge: the sheet is lost."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), PAPER)
    for i, colour in enumerate([(240, 170, 60), (90, 150, 80), (220, 120, 40), (200, 80, 60)]):
        y0 = (i * 0.3 - 0.25 + rng.uniform(-0.05, 0.05)) * size
        img = _glaze(img, (-0.3 * size, y0, 1.3 * size, y0 + 0.6 * size), colour, 170, size / 40)
    return to_png(img)


@cache
def muddy_painting(seed: int = 0, size: int = 256) -> bytes:
    """Dull browns, olives and greys piled up thickly on grey board."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), (228, 224, 216))
    c = size / 2
    for i in range(9):
        r = size * rng.uniform(0.08, 0.14)
        x, y = c + rng.uniform(-0.12, 0.12) * size, c + rng.uniform(-0.12, 0.12) * size
        img = _glaze(img, (x - r, y - r, x + r, y + r), MUD[i % 5], 200, size / 120)
    return to_png(img)


@cache
def flat_single_wash(size: int = 256, colour=(236, 120, 140)) -> bytes:
    """One even, fully opaque wash: a single density level."""
    img = Image.new("RGB", (size, size), PAPER)
    ImageDraw.Draw(img).ellipse((0.3 * size, 0.3 * size, 0.7 * size, 0.7 * size), fill=colour)
    return to_png(img)


@cache
def scattered_dots(size: int = 256, count: int = 12) -> bytes:
    img = Image.new("RGB", (size, size), PAPER)
    draw = ImageDraw.Draw(img)
    for i in range(count):
        a = 2 * math.pi * i / count
        x, y, r = size * (0.5 + 0.3 * math.cos(a)), size * (0.5 + 0.3 * math.sin(a)), 0.035 * size
        draw.ellipse((x - r, y - r, x + r, y + r), fill=FLOWER[0])
    return to_png(img)


@cache
def rainbow(size: int = 256) -> bytes:
    img = Image.new("RGB", (size, size), PAPER)
    draw = ImageDraw.Draw(img)
    hues = [tuple(round(255 * c) for c in colorsys.hsv_to_rgb(i / 6, 0.7, 0.9)) for i in range(6)]
    for i, colour in enumerate(hues):
        draw.rectangle((0.2 * size + i * 0.1 * size, 0.3 * size, 0.3 * size + i * 0.1 * size, 0.7 * size), fill=colour)
    return to_png(img)


PAINTERS = {
    "soft": soft_painting,
    "hard": hard_painting,
    "near_empty": near_empty_painting,
    "overfilled": overfilled_painting,
    "muddy": muddy_painting,
}


@pytest.fixture(scope="module")
def feats() -> dict[str, dict[str, float]]:
    return {name: image_features(paint()) for name, paint in PAINTERS.items()}


# ---------------------------------------------------------------------------------------
# Shape of the result


def test_features_come_in_the_documented_order_as_finite_floats_for_every_kind_of_sheet(feats):
    blank = image_features(to_png(Image.new("RGB", (256, 256), PAPER)))
    for f in [*feats.values(), blank]:
        assert tuple(f) == TASTE_FEATURE_NAMES and TASTE_FEATURE_NAMES[: len(FEATURE_NAMES)] == FEATURE_NAMES
        assert all(isinstance(v, float) and math.isfinite(v) for v in f.values())
    assert set(FEATURE_SCALES) == set(FEATURE_NAMES)


def test_a_blank_sheet_has_no_paint_edges_or_blobs():
    f = image_features(to_png(Image.new("RGB", (300, 300), PAPER)))
    assert f["paint_fraction"] == 0.0
    assert f["edge_share"] == f["blob_count"] == f["density_mean"] == 0.0


def test_png_bytes_arrays_rgba_and_pillow_images_give_the_same_features():
    png = soft_painting(3)
    arr = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    rgba = np.dstack([arr, np.full(arr.shape[:2], 255, np.uint8)])
    a, b, c = image_features(png), image_features(arr), image_features(rgba)
    d = image_features(Image.open(io.BytesIO(png)))
    assert a == b == c == d


def test_paint_fraction_is_image_paint_fraction_at_full_resolution():
    png = soft_painting(1, size=384)
    assert image_features(png)["paint_fraction"] == pytest.approx(paint_fraction(png))


def test_features_barely_change_with_the_render_size():
    small, large = image_features(soft_painting(2, size=384)), image_features(soft_painting(2, size=600))
    for name in ("paint_fraction", "centroid_offset", "spread", "margin", "density_mean", "hue_entropy"):
        assert small[name] == pytest.approx(large[name], abs=0.03), name


def test_cached_features_equal_fresh_ones_and_callers_get_private_copies():
    clear_feature_cache()
    png = soft_painting(6)
    first = cached_image_features(png)
    assert first == image_features(png)
    first["paint_fraction"] = -1.0
    assert cached_image_features(png)["paint_fraction"] > 0.0


# ---------------------------------------------------------------------------------------
# Each feature moves the right way


def test_bled_translucent_blobs_have_softer_edges_than_flat_polygons(feats):
    soft, hard = feats["soft"], feats["hard"]
    assert soft["edge_sharpness"] < 0.3 < 0.45 < hard["edge_sharpness"]
    assert soft["hard_edge_share"] < 0.3 < 0.8 < hard["hard_edge_share"]


def test_granulated_washes_carry_more_texture_than_flat_fills(feats):
    assert feats["soft"]["texture_energy"] > 5 * feats["hard"]["texture_energy"]
    assert feats["soft"]["texture_energy"] > 3 * feats["overfilled"]["texture_energy"]


def test_muddy_browns_are_muddier_and_less_pure_than_clean_glazes(feats):
    soft, mud = feats["soft"], feats["muddy"]
    assert mud["muddy_share"] > 0.5 > 0.05 > soft["muddy_share"]
    assert mud["colour_purity"] < 0.2 < 0.4 < soft["colour_purity"]
    assert mud["chromatic_share"] < soft["chromatic_share"]
    assert mud["paper_value"] < soft["paper_value"]


def test_overlapping_glazes_show_more_density_levels_than_one_flat_fill(feats):
    flat = image_features(flat_single_wash())
    assert feats["soft"]["density_levels"] > flat["density_levels"]
    assert feats["soft"]["density_entropy"] > flat["density_entropy"]
    assert feats["soft"]["layer_overlap"] > flat["layer_overlap"]


def test_translucent_washes_carry_less_density_than_opaque_ones(feats):
    assert feats["soft"]["density_p90"] < feats["hard"]["density_p90"]
    assert feats["soft"]["density_mean"] < feats["muddy"]["density_mean"]


def test_a_rainbow_has_more_hue_clusters_and_entropy_than_a_single_hue():
    many, one = image_features(rainbow()), image_features(flat_single_wash())
    assert many["hue_clusters"] >= 5 > 1 == one["hue_clusters"]
    assert many["hue_entropy"] > 0.6 > 0.1 > one["hue_entropy"]
    assert many["dominant_hue_share"] < 0.3 < 0.9 < one["dominant_hue_share"]


def test_saturated_paint_has_higher_saturation_than_pale_washes():
    pale = image_features(flat_single_wash(colour=(240, 215, 222)))
    strong = image_features(flat_single_wash(colour=(220, 40, 80)))
    assert strong["saturation_mean"] > pale["saturation_mean"] + 0.3
    assert strong["value_contrast"] > pale["value_contrast"]


def test_near_black_paint_counts_as_dark():
    dark = image_features(flat_single_wash(colour=(25, 20, 30)))
    assert dark["dark_share"] > 0.9
    assert image_features(flat_single_wash())["dark_share"] == 0.0


def test_coverage_separates_near_empty_balanced_and_overfilled_sheets(feats):
    empty, soft, full = feats["near_empty"], feats["soft"], feats["overfilled"]
    assert empty["paint_fraction"] < 0.02 < 0.1 < soft["paint_fraction"] < 0.4 < 0.6 < full["paint_fraction"]
    assert soft["coverage_deviation"] < empty["coverage_deviation"]
    assert soft["coverage_deviation"] < full["coverage_deviation"]
    assert empty["spread"] < soft["spread"] < full["spread"]


def test_an_overfilled_sheet_has_no_breathing_room_and_a_vignette_has_plenty(feats):
    assert feats["overfilled"]["border_paint"] > 0.5
    assert feats["overfilled"]["margin"] < 0.02
    assert feats["soft"]["border_paint"] == 0.0
    assert feats["soft"]["margin"] > 0.15


def test_an_off_centre_mark_sits_farther_from_the_centre():
    centred = image_features(near_empty_painting(at=(0.5, 0.5)))
    corner = image_features(near_empty_painting(at=(0.2, 0.2)))
    assert centred["centroid_offset"] < 0.02
    assert corner["centroid_offset"] == pytest.approx(math.hypot(0.3, 0.3) / math.sqrt(0.5), abs=0.03)


def test_scattered_dots_are_many_small_blobs_in_a_sparse_bounding_box(feats):
    dots = image_features(scattered_dots(count=12))
    assert dots["blob_count"] == 12
    assert dots["largest_blob_share"] == pytest.approx(1 / 12, abs=0.02)
    assert dots["bbox_fill"] < 0.3 < feats["soft"]["bbox_fill"]
    assert feats["soft"]["blob_count"] == 1


# ---------------------------------------------------------------------------------------
# Vectors and distances


def test_feature_vector_follows_feature_names_and_refuses_a_missing_feature(feats):
    v = feature_vector(feats["soft"])
    assert v.shape == (len(FEATURE_NAMES),)
    assert v[FEATURE_NAMES.index("paint_fraction")] == feats["soft"]["paint_fraction"]
    partial = dict(feats["soft"])
    partial.pop("margin")
    with pytest.raises(KeyError):
        feature_vector(partial)


def test_pairwise_distance_is_a_symmetric_standardised_euclidean_distance(feats):
    soft, hard, mud = feats["soft"], feats["hard"], feats["muddy"]
    assert pairwise_distance(soft, soft) == 0.0
    assert pairwise_distance(soft, hard) == pytest.approx(pairwise_distance(hard, soft))
    # by hand: one feature apart by two of its scales is distance 2
    moved = dict(soft, texture_energy=soft["texture_energy"] + 2 * FEATURE_SCALES["texture_energy"])
    assert pairwise_distance(soft, moved) == pytest.approx(2.0)
    assert pairwise_distance(soft, mud, scales=np.ones(len(FEATURE_NAMES))) == pytest.approx(
        float(np.linalg.norm(feature_vector(soft) - feature_vector(mud))))


def test_a_varied_group_is_more_diverse_than_near_copies(feats):
    copies = [image_features(soft_painting(seed)) for seed in (0, 0, 0)]
    varied = list(feats.values())
    assert mean_pairwise_distance(copies) == 0.0
    assert mean_pairwise_distance(varied) > 3.0
    assert mean_pairwise_distance(varied[:1]) == 0.0
