"""Flawed drafts for the revision warm start: the real gate and renderer show each flaw, and
an example is the trainer's turn-two chat with the studio's real feedback on its draft."""
from __future__ import annotations

import pytest

from paintenv import seedgen
from paintenv.extraction import KEEP_REPLY, is_keep_reply
from paintenv.feedback import REVISE_INSTRUCTION, Turn, feedback_text, revision_messages
from paintenv.gate import gate_reply
from paintenv.paint import paint_reply
from paintenv.prompts import build_messages, make_subject
from paintenv.reward import DEFAULT_STUDIO_PRESET, PRESETS, combine
from paintenv.seedgen.revisions import (
    GATE_KINDS,
    KEEP,
    RENDER_KINDS,
    RENDER_SIZE,
    REVISION_KINDS,
    QualityPairJudge,
    Revision,
    RevisionScoring,
    keeps,
    revision_examples,
    revisions,
    shows_flaw,
)

BASES = seedgen.generate_pool(2 * len(REVISION_KINDS), seed=seedgen.WARM_START_SEED, weak_share=0.0)


def test_drafts_are_seeded_deterministic_and_deal_every_kind_in_turn():
    drafts = revisions(BASES, seed=1)
    assert drafts == revisions(BASES, seed=1)
    assert [d.kind for d in drafts[: len(REVISION_KINDS)]] == [d.kind for d in drafts[len(REVISION_KINDS):]]
    assert sorted(d.kind for d in drafts[: len(REVISION_KINDS)]) == sorted(REVISION_KINDS)
    assert [d.kind for d in revisions(BASES, seed=2)] != [d.kind for d in drafts]
    for draft, base in zip(drafts, BASES):
        assert draft.target == base and draft.draft != base.code


def test_every_gate_kind_is_refused_by_the_real_gate_and_its_answer_passes_it():
    drafts = [d for d in revisions(BASES, seed=1) if d.kind in GATE_KINDS]
    assert {d.kind for d in drafts} == set(GATE_KINDS)
    for draft in drafts:
        painting = paint_reply(draft.draft_reply, renderer=None)
        assert not painting.gate.passed, draft.kind
        assert shows_flaw(draft.kind, painting)
        assert gate_reply(draft.target.reply)[1].passed


def test_a_revision_example_is_the_trainers_turn_two_chat_with_the_real_verdicts_feedback():
    drafts = [d for d in revisions(BASES, seed=1) if d.kind in GATE_KINDS]
    rows = revision_examples(drafts)  # gate kinds only: judged in-process, no renderer opened
    assert len(rows) == len(drafts)
    for row, draft in zip(rows, drafts):
        feedback = feedback_text(Turn(painting=paint_reply(draft.draft_reply, renderer=None)))
        subject = make_subject(draft.target.subject_text)
        assert row["prompt"] == revision_messages(build_messages(subject), draft.draft_reply, feedback)
        assert row["prompt"][2] == {"role": "assistant", "content": draft.draft_reply}
        assert row["prompt"][3]["content"].startswith("The static check refused the sketch, so it was not painted")
        assert row["prompt"][3]["content"].endswith(REVISE_INSTRUCTION)
        assert row["completion"] == [{"role": "assistant", "content": draft.target.reply}]


@pytest.mark.slow
def test_the_run_time_and_weak_kinds_get_the_rendered_verdict_as_feedback(renderer):
    drafts = revisions(BASES, seed=1)
    # one of each kind that needs a render, the slowest (overfilled) left to the build
    chosen = [next(d for d in drafts if d.kind == kind) for kind in RENDER_KINDS if kind not in ("overfilled", KEEP)]
    rows = revision_examples(chosen, renderer=renderer)
    assert len(rows) == len(chosen)
    for row, draft in zip(rows, chosen):
        painting = paint_reply(draft.draft_reply, renderer=renderer, seed=draft.seed, size=RENDER_SIZE)
        assert painting.gate.passed and painting.render is not None
        assert row["prompt"][3]["content"] == feedback_text(Turn(painting=painting))
    by_kind = {d.kind: row["prompt"][3]["content"] for d, row in zip(chosen, rows)}
    assert "When it ran it raised 1 error:" in by_kind["const_reassign"]
    assert "TypeError" in by_kind["undefined_member"]
    assert "near-empty: paint the subject larger" in by_kind["near_empty"]


def test_a_draft_whose_verdict_does_not_show_its_flaw_is_left_out():
    base = BASES[0]
    unflawed = Revision(kind="text", draft=base.code, target=base)  # passes the gate: nothing to revise
    assert revision_examples([unflawed]) == []


def test_a_keep_is_a_good_sketch_as_its_own_draft_answered_keep_and_revisions_never_deal_one():
    kept = keeps(BASES[:3])
    assert [(k.kind, k.draft, k.target) for k in kept] == [(KEEP, b.code, b) for b in BASES[:3]]
    assert all(k.answer == KEEP_REPLY and is_keep_reply(k.answer) for k in kept)
    assert all(d.answer == d.target.reply for d in revisions(BASES, seed=1))
    assert KEEP not in REVISION_KINDS and all(d.kind != KEEP for d in revisions(BASES, seed=1))


@pytest.mark.slow
def test_the_quality_pair_judge_prefers_the_better_scored_image_in_either_order_and_never_guesses(renderer):
    good, weak = BASES[0], seedgen.generate(BASES[0].seed, style="near_empty", subject_slug=BASES[0].subject_slug)
    good_png = renderer.render(good.code, seed=good.seed, size=RENDER_SIZE).png
    weak_png = renderer.render(weak.code, seed=good.seed, size=RENDER_SIZE).png
    judge = QualityPairJudge()
    for first in (True, False):
        assert judge.compare(good_png, weak_png, candidate_first=first) > 0.5
        assert judge.compare(weak_png, good_png, candidate_first=first) < 0.5
    assert judge.compare(good_png, good_png) == 0.5
    assert judge.compare(b"not a png", good_png) is None


@pytest.mark.slow
def test_with_scoring_feedback_has_the_judge_and_reward_sections_the_trainers_pipeline_gives(renderer):
    # a hibiscus: the warm start's subject, painted well inside the balanced coverage band
    keep = keeps([next(b for b in BASES if "hibiscus" in b.subject_slug)])[0]
    refused = next(d for d in revisions(BASES, seed=1) if d.kind == "text")
    renderer = _Remembering(renderer)  # the same render twice: Chromium's pixels vary by a hair between renders
    reference = BASES[-1]
    reference_png = renderer.render(reference.code, seed=reference.seed, size=RENDER_SIZE).png
    scoring = RevisionScoring(references=((reference.id, reference_png),))
    rows = revision_examples([keep, refused], renderer=renderer, scoring=scoring)
    assert len(rows) == 2
    recipe = PRESETS[DEFAULT_STUDIO_PRESET]
    kept_feedback, refused_feedback = (row["prompt"][3]["content"] for row in rows)

    painting = paint_reply(keep.draft_reply, renderer=renderer, seed=keep.seed, size=RENDER_SIZE)
    turn = scoring.turn(painting, prompt=keep.target.subject_text)
    assert turn.judge.score is not None and len(turn.judge.references) == 1
    # The reward is the recipe's combination of the same parts, as painting.pipeline.reward_of makes it.
    expected = combine(recipe, True, recipe.length_part(painting.painting_tokens), turn.judge.score, turn.reward.quality)
    assert turn.reward == expected and expected.reward > recipe.w_gate
    assert kept_feedback == feedback_text(turn)
    assert "The judge compared your painting with 1 reference watercolour" in kept_feedback
    assert f"Reward: {expected.reward:.3f} (gate passed" in kept_feedback
    assert rows[0]["completion"][0]["content"] == KEEP_REPLY

    assert "The judge" not in refused_feedback
    refused_length = recipe.length_part(paint_reply(refused.draft_reply, renderer=None).painting_tokens)
    assert f"Reward: 0.000 (gate failed, length {refused_length:.2f})." in refused_feedback


class _Remembering:
    """A renderer that paints each (code, seed, size) once and gives the same Render after."""

    def __init__(self, renderer):
        self.renderer, self.renders = renderer, {}

    def render(self, code: str, *, seed: int = 0, size: int = RENDER_SIZE, twin: bool = False):
        key = (code, seed, size, twin)
        if key not in self.renders:
            self.renders[key] = self.renderer.render(code, seed=seed, size=size, twin=twin)
        return self.renders[key]
