"""The pipeline's length part: the render's tokens of painting code (what ran), the static rules
for a sketch that was not rendered, and None, never 0, when a render lost its coverage."""
from __future__ import annotations

from pathlib import Path

from paintenv.length import painting_tokens
from paintenv.reward import PRESETS
from painting.pipeline import length_tokens, reward_of

GOOD = (Path(__file__).resolve().parents[1] / "paintenv" / "corpus" / "good" / "hibiscus.js").read_text()
PADDED = GOOD + "\nfunction neverCalled(x) {\n" + "  brush.circle(x, x, 3);\n  brush.fill(\"#123456\", x);\n" * 400 + "}\n"
RECIPE = PRESETS["studio-judge-led"]
SCORE = {"judge": {"score": 0.5}, "quality": 0.5, "reasons": {}}


def rendered(tokens: int | None) -> dict:
    return {"passed": True, "violations": [], "rendered": True, "painting_tokens": tokens, "length_from": "render"}


def test_the_length_part_reads_the_renders_tokens_not_the_sketchs_text():
    # the render found the dead function never ran: the padded sketch counts as its baseline
    reward, parts, _ = reward_of(RECIPE, code=PADDED, gate_passed=True, render=rendered(painting_tokens(GOOD)),
                                 score=SCORE)
    baseline, base_parts, _ = reward_of(RECIPE, code=GOOD, gate_passed=True,
                                        render=rendered(painting_tokens(GOOD)), score=SCORE)
    assert parts["length"] == base_parts["length"] and reward == baseline
    assert painting_tokens(PADDED) > painting_tokens(GOOD)  # the static rules alone would have paid


def test_a_render_that_lost_its_coverage_makes_the_reward_none_never_a_made_up_zero():
    reward, parts, failure = reward_of(RECIPE, code=GOOD, gate_passed=True, render=rendered(None), score=SCORE)
    assert reward is None and parts["length"] is None
    assert "length" in failure
    old_worker = {"passed": True, "violations": [], "rendered": True}  # a render task from before
    assert length_tokens(GOOD, old_worker) is None


def test_a_sketch_that_was_not_rendered_or_a_given_painting_gets_the_static_figure():
    gate_refused = {"passed": False, "violations": ["bare_primitives"], "rendered": False,
                    "painting_tokens": painting_tokens(GOOD), "length_from": "static"}
    assert length_tokens(GOOD, gate_refused) == painting_tokens(GOOD)
    given = {"passed": True, "violations": [], "png": b"", "findings": {}}
    assert length_tokens(GOOD, given) == painting_tokens(GOOD) == length_tokens(GOOD, None)
