"""The taste judge's added image features (paintenv.features.TASTE_EXTRA_NAMES), each on
constructed images whose answer is known."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from paintenv.features import TASTE_EXTRA_NAMES, image_features

PAPER = (250, 246, 238)
SIZE = 256


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture."""


def _sheet() -> Image.Image:
    return Image.new("RGB", (SIZE, SIZE), PAPER)


def _stripes(colours) -> Image.Image:
    """Equal vertical bands of `colours` across the middle of the sheet."""
    img = _sheet()
    draw = ImageDraw.Draw(img)
    width = (SIZE - 64) // len(colours)
    for i, colour in enumerate(colours):
        draw.rectangle([32 + i * width, 64, 32 + (i + 1) * width - 1, 192], fill=colour)
    return img


def _disc(centre, radius, colour=(200, 80, 100), blur: float = 0.0) -> Image.Image:
    img = _sheet()
    ImageDraw.Draw(img).ellipse([centre[0] - radius, centre[1] - radius, centre[0] + radius, centre[1] + radius],
                                fill=colour)
    return img.filter(ImageFilter.GaussianBlur(blur)) if blur else img


def test_an_analogous_palette_is_more_harmonious_than_hues_all_round_the_wheel():
    analogous = image_features(np.asarray(_stripes([(220, 60, 60), (230, 110, 60), (225, 80, 110)])))
    complementary = image_features(np.asarray(_stripes([(220, 60, 60), (60, 200, 200)])))
    clashing = image_features(np.asarray(_stripes([(220, 60, 60), (60, 200, 60), (60, 60, 220), (220, 220, 60)])))
    assert analogous["hue_harmony"] == pytest.approx(1.0)
    assert complementary["hue_harmony"] == pytest.approx(1.0)
    assert clashing["hue_harmony"] < 0.6


def test_a_blurred_edge_is_soft_and_a_cut_edge_is_not():
    hard = image_features(np.asarray(_disc((128, 128), 60)))
    soft = image_features(np.asarray(_disc((128, 128), 60, blur=6.0)))
    assert hard["soft_edge_share"] < 0.1
    assert soft["soft_edge_share"] > 0.8


def test_a_pale_wash_is_translucent_and_a_deep_one_is_not():
    pale = image_features(np.asarray(_disc((128, 128), 60, colour=(235, 200, 200))))
    deep = image_features(np.asarray(_disc((128, 128), 60, colour=(150, 20, 40))))
    assert pale["translucent_share"] > 0.95
    assert deep["translucent_share"] < 0.05


def test_a_motif_on_a_thirds_point_is_near_it_and_a_centred_one_is_not():
    on_thirds = image_features(np.asarray(_disc((SIZE // 3, SIZE // 3), 25)))
    centred = image_features(np.asarray(_disc((SIZE // 2, SIZE // 2), 25)))
    assert on_thirds["thirds_distance"] < 0.05
    assert centred["thirds_distance"] == pytest.approx(1 / 2, abs=0.03)  # (1/6·√2) / (√2/3)


def test_a_centred_motif_is_balanced_and_one_in_a_corner_is_not():
    centred = image_features(np.asarray(_disc((SIZE // 2, SIZE // 2), 40)))
    cornered = image_features(np.asarray(_disc((48, 48), 30)))
    assert centred["mass_balance"] > 0.97
    assert cornered["mass_balance"] < 0.05


def test_one_small_motif_leaves_open_space_and_dots_scattered_everywhere_leave_little():
    small = image_features(np.asarray(_disc((64, 64), 40)))
    scattered = _sheet()  # less paint than the motif, but no quiet area anywhere
    draw = ImageDraw.Draw(scattered)
    for y in range(8, SIZE, 24):
        for x in range(8, SIZE, 24):
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=(60, 90, 160))
    dots = image_features(np.asarray(scattered))
    assert dots["paint_fraction"] < small["paint_fraction"]
    assert small["open_space"] > 0.6
    assert dots["open_space"] < 0.07


def test_a_blank_sheet_reads_as_balanced_open_paper_with_no_harmony_to_measure():
    f = image_features(np.asarray(_sheet()))
    assert {name: f[name] for name in TASTE_EXTRA_NAMES} == {
        "hue_harmony": 0.0, "soft_edge_share": 0.0, "translucent_share": 0.0, "thirds_distance": 0.0,
        "mass_balance": 1.0, "open_space": 1.0,
    }
