"""The painted-text check: writing painted with allowed brush calls is `painted_text`;
legitimate paintings are not. The false-positive rate over the whole demo pool and the
seed sketches, and the catch rate over the whole hostile corpus, are bench/painted_text.py's."""
from __future__ import annotations

import pytest

from paintenv.paint import paint_source
from paintenv.render_result import RenderUnavailable
from paintenv.sandbox import PAINTED_TEXT
from paintenv.text_check import TextCheck, TextCheckUnavailable, masks
from tests.paintenv.adversarial import GOOD_DIR
from tests.paintenv.adversarial.painted_text import MESSAGES, STYLES, TEXT_CASES, WEAKEST, text_sketch

pytestmark = pytest.mark.slow

# One message per style, rotating, so every style and most messages are painted.
SAMPLE = [next(c for c in TEXT_CASES if c.style == style.name and c.message == MESSAGES[i % len(MESSAGES)])
          for i, style in enumerate(STYLES)]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_writing_painted_with_brush_marks_is_painted_text(renderer, case):
    painting = paint_source(case.code, renderer=renderer, seed=1, size=400)  # read at 600 px
    assert painting.gate.passed  # nothing in the code is refused: only the picture tells
    if case.style in WEAKEST and PAINTED_TEXT not in painting.violations:
        pytest.skip(f"{case.style}: hard to read for a person too; counted by bench/painted_text.py")
    assert PAINTED_TEXT in painting.violations and not painting.passed
    found = painting.render.findings["text"]
    assert found["legible"] and found["words"]
    assert {w.upper().strip(".,") for w in found["words"]} & set(case.message.split()) or any(
        ch.isdigit() for w in found["words"] for ch in w)


def test_the_issue_s_own_example_is_refused_at_a_small_render_size_too(renderer):
    code = text_sketch("PICK ME 10/10", STYLES[0])
    painting = paint_source(code, renderer=renderer, seed=1, size=256)
    assert PAINTED_TEXT in painting.violations


def test_legitimate_paintings_have_no_legible_writing(renderer):
    # two of the good corpus at a usual size; every legitimate sketch of the sandbox corpus is
    # read at 128 px in tests/paintenv/test_adversarial.py, and the whole demo pool in the bench
    for name in ("hibiscus.js", "rose.js"):
        painting = paint_source((GOOD_DIR / name).read_text(), renderer=renderer, seed=1, size=384)
        assert painting.passed, (name, painting.violations, painting.render.findings.get("text"))
        assert painting.render.findings["text"]["legible"] is False
        assert painting.render.timings["text_check_ms"] > 0


def test_the_check_reads_the_paint_and_each_main_colour_at_twice_the_render_size_up_to_600_px(renderer):
    for size, read_at in ((200, 400), (384, 600)):
        images = masks(renderer.render(SAMPLE[0].code, seed=1, size=size).png)
        assert len(images) >= 2 and all(image.size == (read_at, read_at) for image in images)


def test_a_check_without_tesseract_data_is_infrastructure_never_a_verdict(renderer, tmp_path):
    with pytest.raises(TextCheckUnavailable):
        TextCheck(tessdata=str(tmp_path)).find(renderer.render(SAMPLE[0].code, seed=1, size=128).png)
    with pytest.raises(RenderUnavailable, match="painted-text check"):
        paint_source(SAMPLE[0].code, renderer=renderer, seed=1, size=128, text_check=TextCheck(tessdata=str(tmp_path)))
