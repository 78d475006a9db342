"""The palette-harmony grading rule (paintenv.seedgen.harmony): hand-worked hue spans, and
on the 200 references of the demo pool (tests/paintenv/data/demo_pool_features.json, rendered at
512 px) grades that do not follow paint coverage, unlike the demo's coverage rule."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from paintenv.seedgen import generate_pool
from paintenv.seedgen.harmony import harmony_tier, palette_hue_span, sketch_palette
from paintenv.seedgen.tables import Palette

DEMO_POOL = Path(__file__).parent.parent / "data" / "demo_pool_features.json"
RANK = {"love": 2, "okay": 1, "reject": 0}


@pytest.fixture(autouse=True)
def _media_root():
    """paintenv uses no Django: shadow the project-wide MEDIA_ROOT fixture."""


def test_the_hue_span_is_the_widest_circular_gap_between_chromatic_colours():
    assert palette_hue_span(["#ff0000", "#ffff00"]) == pytest.approx(60.0)  # red 0°, yellow 60°
    assert palette_hue_span(["#ff0000", "#ff00ff", "#ffff00"]) == pytest.approx(120.0)  # magenta 300° round to yellow
    assert palette_hue_span(["#ff0000", "#f0f0f0", "#0000ff"]) == pytest.approx(120.0)  # the near-grey is left out
    assert palette_hue_span(["#f0f0f0", "#ff0000"]) == 0.0


def test_close_hues_are_loved_a_moderate_spread_is_okay_and_contrast_is_rejected():
    def palette(petal: str, centre: str, dots: str) -> Palette:
        return Palette(name="p", petals=("#ffffff", petal), centre=centre, dots=dots)

    assert harmony_tier(palette("#ff0000", "#ff2000", "#ff1010")) == "love"  # within 10°
    assert harmony_tier(palette("#ff0000", "#ffff00", "#ff8000")) == "okay"  # 60°
    assert harmony_tier(palette("#8000ff", "#ffd000", "#ffd000")) == "reject"  # violet and yellow


def test_a_sketch_palette_is_found_by_subject_style_and_name():
    sketch = generate_pool(1)[0]
    assert sketch_palette(subject_slug=sketch.subject_slug, style=sketch.style, name=sketch.palette).name == sketch.palette
    with pytest.raises(KeyError, match="no palette"):
        sketch_palette(subject_slug=sketch.subject_slug, style="good", name="no-such-palette")


def test_on_the_demo_pool_the_harmony_grades_are_uncorrelated_with_coverage_and_the_demo_grades_are_not():
    paintings = json.loads(DEMO_POOL.read_text(encoding="utf-8"))["paintings"]
    sketches = {s.id: s for s in generate_pool(len(paintings))}
    harmony, demo, fraction, deviation = [], [], [], []
    for p in paintings:
        s = sketches[p["name"].removesuffix(".png")]
        harmony.append(RANK[harmony_tier(sketch_palette(subject_slug=s.subject_slug, style=s.style, name=s.palette))])
        demo.append(RANK[p["tier"]])
        fraction.append(p["features"]["paint_fraction"])
        deviation.append(p["features"]["coverage_deviation"])
    assert set(harmony) == {0, 1, 2}

    def r(a, b) -> float:
        return float(np.corrcoef(a, b)[0, 1])

    # Measured: harmony vs paint fraction −0.027, vs coverage deviation +0.040, vs the demo grades −0.037;
    # the demo grades vs coverage deviation −0.587 (love sits at a balanced coverage).
    assert abs(r(harmony, fraction)) < 0.1 and abs(r(harmony, deviation)) < 0.1
    assert abs(r(harmony, demo)) < 0.1
    assert r(demo, deviation) < -0.5
