"""A second documented grading rule for the seed pool, unrelated to paint coverage.

The demo curator (demo.curator.demo_tier) grades by style and paint coverage, which the
taste judge learns almost perfectly from coverage features. This rule grades by the hues
of the sketch's *palette* (a seed-generator parameter, never the rendered image): a
curator who loves close, analogous colour and dislikes contrast. The palette's hue span is
the largest circular hue distance between its deepest petal wash, its centre colour and
its dots (colours with HSV saturation under 0.25 have no reliable hue and are left out):

  love    span <= 30°   (one family of hues: crimson with a crimson heart)
  okay    30° < span <= 90°
  reject  span > 90°    (contrast: violet petals with a yellow heart)

It ignores style and coverage, so a judge that scores well on it cannot be doing so by
coverage alone (tests/paintenv/seedgen/test_harmony.py states its correlation with coverage).
"""
from __future__ import annotations

import colorsys
from collections.abc import Sequence

from paintenv.seedgen.tables import MUDDY_PALETTES, PALETTES, Palette

__all__ = ["HARMONY_SPANS", "palette_hue_span", "harmony_tier", "sketch_palette"]

HARMONY_SPANS = (30.0, 90.0)  # degrees: love up to the first, okay up to the second
_MIN_SATURATION = 0.25


def _hue_saturation(colour: str) -> tuple[float, float]:
    r, g, b = (int(colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
    h, s, _ = colorsys.rgb_to_hsv(r, g, b)
    return h * 360.0, s


def palette_hue_span(colours: Sequence[str]) -> float:
    """The largest circular hue distance in degrees between the chromatic `colours` ("#rrggbb");
    0 when fewer than two are chromatic."""
    hues = [h for h, s in map(_hue_saturation, colours) if s >= _MIN_SATURATION]
    span = 0.0
    for i, a in enumerate(hues):
        for b in hues[i + 1:]:
            d = abs(a - b) % 360.0
            span = max(span, min(d, 360.0 - d))
    return span


def harmony_tier(palette: Palette) -> str:
    """love / okay / reject by the palette's hue span (see the module docstring)."""
    span = palette_hue_span([palette.petals[-1], palette.centre, palette.dots])
    love, okay = HARMONY_SPANS
    return "love" if span <= love else "okay" if span <= okay else "reject"


def sketch_palette(*, subject_slug: str, style: str, name: str) -> Palette:
    """The Palette a seed sketch used, from its subject, style and palette name (a muddy
    sketch draws from the muddy palettes; names repeat across subjects, not within one)."""
    candidates = MUDDY_PALETTES if style == "muddy" else PALETTES[subject_slug]
    for palette in candidates:
        if palette.name == name:
            return palette
    raise KeyError(f"no palette {name!r} for subject {subject_slug!r} in style {style!r}")
