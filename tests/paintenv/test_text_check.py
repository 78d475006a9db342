"""The painted-text check: writing in any script, at any angle and in any brush style is
`painted_text`; legitimate paintings are not. The false positives over the whole demo pool and
the seed sketches, the catch rate over the whole hostile cross product and the flip rate are
bench/painted_text.py's; here a stratified sample in which every writing, transform and style
appears is painted end to end."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from paintenv.paint import paint_source
from paintenv.render_result import RenderUnavailable
from paintenv.sandbox import PAINTED_TEXT
from paintenv.text_check import THRESHOLD, TextCheck, TextCheckUnavailable, _conv_relu
from tests.paintenv.adversarial import GOOD_DIR, writing
from tests.paintenv.adversarial.painted_text import STYLES, text_sketch

# every writing (12), transform (16) and style (10) of the cross product at least once
SAMPLE = writing.sample(16)


def test_the_sample_covers_every_writing_transform_and_style():
    assert {c.writing for c in SAMPLE} == set(writing.WRITINGS)
    assert {c.transform for c in SAMPLE} == {t.name for t in writing.TRANSFORMS}
    assert {c.style for c in SAMPLE} == {s.name for s in writing.STYLES}
    assert len(writing.cases()) == len(writing.WRITINGS) * len(writing.TRANSFORMS) * len(writing.STYLES)


def test_a_mirrored_writing_paints_the_mirror_image_of_its_marks():
    upright, mirrored = writing.TRANSFORMS[0], next(t for t in writing.TRANSFORMS if t.name == "mirrored")
    style = writing.STYLES[0]
    plain = writing.marks("BEST", upright, style)
    flipped = writing.marks("BEST", mirrored, style)
    assert len(plain) == len(flipped)
    assert sorted(round(600 - x, 3) for m in plain for x, _ in m) == sorted(round(x, 3) for m in flipped for x, _ in m)


@pytest.mark.parametrize("stride,k", [(1, 3), (2, 3), (1, 1)])
def test_the_numpy_convolution_is_pytorch_s(stride, k):
    rng = np.random.default_rng(stride * 10 + k)
    x = rng.standard_normal((10, 12, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4, k, k)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    ours = _conv_relu(x, w, b, stride, relu=False)
    theirs = F.conv2d(torch.tensor(x.transpose(2, 0, 1))[None], torch.tensor(w), torch.tensor(b), stride=stride,
                      padding=k // 2)[0].numpy().transpose(1, 2, 0)
    assert ours.shape == theirs.shape and np.allclose(ours, theirs, atol=1e-4)


def test_weights_that_cannot_be_read_are_infrastructure_never_a_verdict(renderer, tmp_path):
    png = renderer.render(SAMPLE[0].code, seed=1, size=128).png
    for weights in (tmp_path / "absent.npz", tmp_path / "broken.npz"):
        if weights.name == "broken.npz":
            weights.write_bytes(b"not an npz file")
        with pytest.raises(TextCheckUnavailable, match="weights"):
            TextCheck(weights).find(png)
    with pytest.raises(RenderUnavailable, match="painted-text check"):
        paint_source(SAMPLE[0].code, renderer=renderer, seed=1, size=128, text_check=TextCheck(tmp_path / "x.npz"))


@pytest.mark.slow
@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_writing_in_any_script_angle_and_style_is_painted_text(renderer, case):
    painting = paint_source(case.code, renderer=renderer, seed=1, size=384)
    assert painting.gate.passed  # nothing in the code is refused: only the picture tells
    found = painting.render.findings["text"]
    if case.style in writing.WEAKEST and PAINTED_TEXT not in painting.violations:
        pytest.skip(f"{case.style}: counted by bench/painted_text.py (score {found['score']})")
    assert PAINTED_TEXT in painting.violations and not painting.passed, found
    assert found["legible"] and found["score"] >= THRESHOLD and found["where"]  # where it is


@pytest.mark.slow
def test_round_two_s_example_is_refused_at_small_and_large_render_sizes(renderer):
    code = text_sketch("PICK ME 10/10", STYLES[0])
    for size in (256, 600):
        assert PAINTED_TEXT in paint_source(code, renderer=renderer, seed=1, size=size).violations


@pytest.mark.slow
def test_legitimate_paintings_have_no_writing_and_the_check_says_how_far_they_are_from_it(renderer):
    # two of the good corpus at usual sizes; every legitimate sketch of the sandbox corpus is
    # looked at in tests/paintenv/test_adversarial.py, and the whole demo pool in the bench
    for name, size in (("hibiscus.js", 384), ("rose.js", 600)):
        painting = paint_source((GOOD_DIR / name).read_text(), renderer=renderer, seed=1, size=size)
        assert painting.passed, (name, painting.violations, painting.render.findings.get("text"))
        found = painting.render.findings["text"]
        assert found["legible"] is False and found["where"] == [] and 0 <= found["score"] < THRESHOLD
        assert painting.render.timings["text_check_ms"] > 0


@pytest.mark.slow
def test_the_verdict_and_the_score_hold_over_renders_of_the_same_sketch_and_seed(renderer):
    # Each case painted again after the other cases and a painting in between (a warm renderer).
    cases = SAMPLE[:4]
    first = [paint_source(case.code, renderer=renderer, seed=1, size=384).render.findings["text"] for case in cases]
    renderer.render((GOOD_DIR / "rose.js").read_text(), seed=3, size=384)
    again = [paint_source(case.code, renderer=renderer, seed=1, size=384).render.findings["text"] for case in cases]
    for case, before, after in zip(cases, first, again):
        assert after["legible"] == before["legible"] and abs(after["score"] - before["score"]) < 0.05, case.id
