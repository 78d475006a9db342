"""The revision turn's feedback message and the next turn's chat (paintenv/feedback.py).

The sketches are real: the seed generator's, broken by hand where a test needs a gate
failure, gated by the real gate and (where the painting matters) rendered by the shared
renderer. Judge verdicts and reward breakdowns are written out as the judge and combine()
return them.
"""
from __future__ import annotations

import pytest
from trl.data_utils import prepare_multimodal_messages

from paintenv.feedback import (
    MAX_FEEDBACK_CHARS,
    REVISE_INSTRUCTION,
    Turn,
    feedback_text,
    revision_messages,
    turn_from_records,
)
from paintenv.gate import gate_source
from paintenv.judges import JudgeResult, OrderVerdict, ReferenceVerdict
from paintenv.paint import Painting, paint_reply, paint_source
from paintenv.prompts import build_messages
from paintenv.reward import PRESETS, combine
from paintenv.seedgen import generate

GOOD = generate(3, style="good")
NEAR_EMPTY = generate(5, style="near_empty")


def broken(code: str) -> str:
    """The good sketch with p5's own fill and circle for the brush's, and text in draw()."""
    return (code.replace("brush.circle(", "circle(", 1).replace("brush.fill(", "fill(", 1)
            + 'function draw() {\n  text("signed", 10, 10);\n}\n')


def verdicts(*pairs: tuple[float | None, float | None], reasons: tuple[str, str] = ("", "")) -> JudgeResult:
    references = [
        ReferenceVerdict(f"pool/love/ref-{i:03d}.png",
                         [OrderVerdict(True, first, reasons[0]), OrderVerdict(False, second, reasons[1])])
        for i, (first, second) in enumerate(pairs)
    ]
    resolved = [r.score for r in references if r.score is not None]
    return JudgeResult(sum(resolved) / len(resolved) if resolved else None, references)


@pytest.fixture(scope="module")
def rendered(renderer):
    """Real renders: a good sketch, a near-empty one and one that throws on line 3."""
    throws = ("function setup() {\n  createCanvas(600, 600, WEBGL);\n  const petals = null; petals.length;\n"
              '  brush.fill("#c0392b", 200);\n  brush.circle(300, 300, 80);\n}\n')
    return {
        "good": paint_source(GOOD.code, renderer=renderer, seed=GOOD.seed, size=256),
        "near_empty": paint_source(NEAR_EMPTY.code, renderer=renderer, seed=NEAR_EMPTY.seed, size=256),
        "throws": paint_source(throws, renderer=renderer, size=256),
    }


def test_it_lists_each_gate_violation_with_line_col_and_the_offending_source_line():
    code = broken(GOOD.code)
    text = feedback_text(Turn(paint_source(code, renderer=None)))
    for violation in gate_source(code).violations:
        source = code.splitlines()[violation.line - 1].strip()
        assert f"- line {violation.line}:{violation.col}: {violation.message}\n    {violation.line} | {source}" in text
    assert "refused the sketch, so it was not painted (3 problems)" in text


def test_it_says_a_reply_without_a_sketch_has_none_and_still_asks_for_one():
    text = feedback_text(Turn(paint_reply("I would paint a hibiscus in soft pinks.", renderer=None)))
    assert "refused the sketch" in text and "line " not in text
    assert text.endswith(REVISE_INSTRUCTION)


def test_it_lists_a_few_violations_and_counts_the_rest():
    calls = "\n".join(f"  rect({i}, {i}, 5, 5);" for i in range(30))
    code = GOOD.code.replace("  brush.noStroke();", "  brush.noStroke();\n" + calls, 1)
    text = feedback_text(Turn(paint_source(code, renderer=None)))
    assert "(30 problems)" in text
    assert text.count("draws without the brush") == 8
    assert "- … and 22 more problems not shown." in text


def test_it_shows_runtime_errors_with_their_line_and_source(rendered):
    text = feedback_text(Turn(rendered["throws"]))
    error = rendered["throws"].render.errors[0]
    assert error.line == 3
    assert f"- line 3:{error.col}: {error.message}" in text
    assert "    3 | const petals = null; petals.length;" in text


def test_it_notes_a_near_empty_sheet_and_a_balanced_one(rendered):
    near_empty, good = rendered["near_empty"].render, rendered["good"].render
    assert f"Paint covers {near_empty.paint_fraction:.1%} of the sheet: near-empty" in feedback_text(Turn(rendered["near_empty"]))
    assert f"Paint covers {good.paint_fraction:.1%} of the sheet: a balanced share" in feedback_text(Turn(rendered["good"]))


def test_it_gives_the_judges_verdict_per_reference_in_both_orders_with_its_reasons(rendered):
    judge = verdicts((1.0, 0.0), (0.0, 0.0), reasons=("Softer edges.", "Muddier centre."))
    text = feedback_text(Turn(rendered["good"], judge=judge))
    assert "- reference 1: yours first won; yours second lost" in text
    assert "- reference 2: yours first lost; yours second lost" in text
    assert 'judge, yours first: "Softer edges."' in text and 'judge, yours second: "Muddier centre."' in text
    assert "Judge score: 0.25" in text


def test_it_gives_the_reward_and_its_parts(rendered):
    reward = combine(PRESETS["judge-led"], True, 0.93, 0.25, 0.6)
    text = feedback_text(Turn(rendered["good"], judge=verdicts((1.0, 0.0)), reward=reward))
    assert f"Reward: {reward.reward:.3f} (gate passed, length 0.93, judge 0.25, quality 0.60)." in text


def test_it_never_shows_reference_names_failure_text_or_the_coverage_band(rendered):
    failed = "vlm judge failed after 3 attempt(s): ConnectError http://10.1.2.3:8000/v1"
    judge = verdicts((1.0, None), reasons=("Cleaner washes.", failed))
    reward = combine(PRESETS["judge-led"], True, 0.9, None, 0.5, reasons={"judge": failed})
    text = feedback_text(Turn(rendered["near_empty"], judge=judge, reward=reward))
    assert "Cleaner washes." in text and "yours second no verdict" in text
    assert "ref-000" not in text and "pool/" not in text
    assert "10.1.2.3" not in text and "ConnectError" not in text
    assert "The reward could not be computed this time" in text
    assert "10%" not in text and "45%" not in text


def test_it_is_deterministic_and_ends_with_the_request_for_a_new_sketch(rendered):
    turn = Turn(rendered["good"], judge=verdicts((1.0, 1.0)), reward=combine(PRESETS["judge-led"], True, 1.0, 1.0, 0.7))
    assert feedback_text(turn) == feedback_text(turn)
    assert feedback_text(turn).endswith(REVISE_INSTRUCTION)


def test_it_gives_the_same_text_from_the_pipelines_records(rendered):
    """The trainer holds the in-process gate verdict and the render and score tasks' dicts."""
    painting = rendered["throws"]
    gate_only = Painting(painting.code, painting.gate, None, painting.length_score)
    judge, reward = verdicts((0.0, 1.0), reasons=("Bolder.", "")), combine(PRESETS["judge-led"], False, 0.2, None, None)
    parts = {k: v for k, v in reward.to_dict().items() if k != "reward"}
    from_records = turn_from_records(gate_only, render=painting.to_dict(), score={"judge": judge.to_dict()},
                                     reward=reward.reward, parts=parts)
    assert feedback_text(from_records) == feedback_text(Turn(painting, judge=judge, reward=reward))
    good = rendered["good"]
    from_records = turn_from_records(Painting(good.code, good.gate, None, good.length_score),
                                     render=good.to_dict(), score={"judge": judge.to_dict()}, reward=None, parts=None)
    assert feedback_text(from_records) == feedback_text(Turn(good, judge=judge))


def test_it_stays_within_its_length_bound_on_the_worst_input(rendered):
    long_line = "  " + "rect(1, 1, 1, 1); " * 400
    code = GOOD.code.replace("  brush.noStroke();", "  brush.noStroke();\n" + "\n".join([long_line] * 40), 1)
    gate_failed = paint_source(code, renderer=None)
    long_reason = "The washes are muddy. " * 200
    judge = verdicts(*[(1.0, 0.0)] * 20, reasons=(long_reason, long_reason))
    worst = Turn(Painting(code, gate_failed.gate, rendered["throws"].render, 1.0), judge=judge,
                 reward=combine(PRESETS["judge-led"], True, 0.5, 0.5, 0.5))
    assert len(feedback_text(worst)) < MAX_FEEDBACK_CHARS


def test_the_next_turns_chat_is_the_prior_messages_the_reply_and_the_feedback():
    prior = build_messages("a peach hibiscus")
    chat = revision_messages(prior, GOOD.reply, "It ran without errors.")
    assert chat[:2] == prior and len(prior) == 2
    assert chat[2:] == [{"role": "assistant", "content": GOOD.reply},
                        {"role": "user", "content": "It ran without errors."}]


def test_a_vision_model_gets_the_painting_as_an_image_part_its_processor_reads(rendered, tiny_vlms):
    from transformers import AutoProcessor

    png = rendered["good"].png
    chat = revision_messages(build_messages("a peach hibiscus"), GOOD.reply, "Feedback.", painting_png=png)
    image, text = chat[-1]["content"]
    assert image["type"] == "image" and image["image"].size == (256, 256) and image["image"].mode == "RGB"
    assert text == {"type": "text", "text": "Feedback."}
    # TRL keeps an image part that holds its image; the processor turns it into pixels.
    assert prepare_multimodal_messages(chat, images=[])[-1]["content"][0]["image"] is image["image"]
    processor = AutoProcessor.from_pretrained(tiny_vlms / "judge")
    inputs = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=True, return_dict=True,
                                             return_tensors="pt")
    assert inputs["pixel_values"].shape[0] == 1


def test_a_refused_sketch_the_editor_rendered_anyway_gets_both_verdicts(renderer):
    code = GOOD.code.replace("  brush.noStroke();", "  brush.noStroke();\n  rect(10, 10, 40, 40);", 1)
    text = feedback_text(Turn(paint_source(code, renderer=renderer, seed=GOOD.seed, size=256, render_failed_gate=True)))
    assert "The static check refused the sketch (1 problem):" in text and "not painted" not in text
    assert "At run time it drew with p5 itself instead of the brush: rect." in text
    assert "Paint covers " in text
