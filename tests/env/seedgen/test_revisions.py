"""Flawed drafts for the revision warm start: the real gate and renderer show each flaw, and
an example is the trainer's turn-two chat with the studio's real feedback on its draft."""
from __future__ import annotations

import pytest

from paintapp.env import seedgen
from paintapp.env.feedback import REVISE_INSTRUCTION, Turn, feedback_text, revision_messages
from paintapp.env.gate import gate_reply
from paintapp.env.painting import paint_reply
from paintapp.env.prompts import build_messages, make_subject
from paintapp.env.seedgen.revisions import (
    GATE_KINDS,
    RENDER_KINDS,
    RENDER_SIZE,
    REVISION_KINDS,
    Revision,
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
    chosen = [next(d for d in drafts if d.kind == kind) for kind in RENDER_KINDS if kind != "overfilled"]
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
