"""Paint fraction and image comparison (numpy + Pillow, no browser)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from paintenv.image import (
    BLANK_THRESHOLD,
    background_colour,
    image_diff_fraction,
    image_max_diff,
    is_blank,
    paint_fraction,
    png_to_array,
)


def canvas(size: int = 100, colour=(251, 247, 239)) -> np.ndarray:
    return np.full((size, size, 3), colour, dtype=np.uint8)


def to_png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_the_blank_threshold_is_half_a_percent():
    assert BLANK_THRESHOLD == 0.005


def test_a_flat_canvas_has_no_paint():
    assert paint_fraction(canvas()) == 0.0
    assert is_blank(canvas())


def test_paint_is_every_pixel_farther_than_32_rgb_from_the_background():
    img = canvas(100, (250, 250, 250))
    img[0:10, 0:10] = (250 - 19, 250 - 19, 250 - 19)  # distance 32.9: paint
    img[20:30, 0:10] = (250 - 18, 250 - 18, 250 - 18)  # distance 31.2: still paper
    img[40:45, 0:20] = (200, 40, 60)  # plainly paint
    assert paint_fraction(img) == pytest.approx((100 + 100) / 10_000)


def test_the_background_is_the_most_common_colour_even_when_dark():
    img = canvas(100, (20, 20, 30))
    img[:30] = (250, 250, 250)
    assert background_colour(img) == pytest.approx((20, 20, 30))
    assert paint_fraction(img) == pytest.approx(0.30)


def test_a_noisy_paper_is_still_one_background():
    rng = np.random.default_rng(0)
    img = (canvas(200, (240, 235, 225)).astype(int) + rng.integers(-6, 7, (200, 200, 3))).astype(np.uint8)
    assert paint_fraction(img) < BLANK_THRESHOLD


def test_png_bytes_decode_to_rgb_and_measure_the_same():
    img = canvas(64)
    img[10:30, 10:30] = (180, 60, 70)
    png = to_png(img)
    assert png_to_array(png).shape == (64, 64, 3)
    assert paint_fraction(png) == paint_fraction(img) == pytest.approx(400 / 4096)


def test_transparent_pixels_count_as_white_paper():
    rgba = np.zeros((50, 50, 4), dtype=np.uint8)  # a canvas nobody called background() on
    rgba[:10, :10] = (200, 30, 30, 255)
    arr = png_to_array(to_png(rgba))
    assert tuple(arr[40, 40]) == (255, 255, 255)
    assert tuple(arr[5, 5]) == (200, 30, 30)
    assert paint_fraction(to_png(rgba)) == pytest.approx(100 / 2500)


def test_image_diff_fraction_counts_pixels_beyond_the_tolerance():
    a = canvas(10)
    b = a.copy()
    b[0, 0] = (a[0, 0].astype(int) + [0, 5, 0]).clip(0, 255).astype(np.uint8)
    b[1, 1] = (0, 0, 0)
    assert image_diff_fraction(a, a) == 0.0
    assert image_diff_fraction(a, b, tol=0) == pytest.approx(0.02)
    assert image_diff_fraction(a, b, tol=5) == pytest.approx(0.01)
    assert image_diff_fraction(to_png(a), to_png(b), tol=5) == pytest.approx(0.01)
    assert image_max_diff(a, b) == 251


def test_image_diff_fraction_refuses_different_sizes():
    with pytest.raises(ValueError):
        image_diff_fraction(canvas(10), canvas(11))
