"""Grades: idempotent upserts, full history, undo, bulk over the whole filter result and its undo."""
from __future__ import annotations

import pytest

from curation.errors import CurationError
from curation.models import Grade, GradeEvent
from curation.selectors import ReferenceFilter, reference_list, tier_counts
from curation.services import grade_bulk, grade_bulk_undo, grade_set
from tests.curation.factories import make_reference

pytestmark = pytest.mark.django_db


def test_grading_twice_with_the_same_tier_keeps_one_grade_and_one_event(curator):
    reference = make_reference()
    grade_set(reference=reference, curator=curator, tier="love")
    grade_set(reference=reference, curator=curator, tier="love")
    assert Grade.objects.get(reference=reference).tier == "love"
    assert GradeEvent.objects.filter(reference=reference).count() == 1


def test_every_change_is_kept_in_the_history(curator):
    reference = make_reference()
    for tier in ("okay", "love", "reject"):
        grade_set(reference=reference, curator=curator, tier=tier, source="keyboard")
    history = list(GradeEvent.objects.filter(reference=reference).order_by("id").values_list("previous_tier", "tier"))
    assert history == [("", "okay"), ("okay", "love"), ("love", "reject")]


def test_undo_puts_back_the_previous_tier_or_clears_the_grade(curator):
    # The focus view keeps an undo stack of (reference, previous tier) and sends it back.
    reference = make_reference()
    grade_set(reference=reference, curator=curator, tier="okay")
    grade_set(reference=reference, curator=curator, tier="love")
    assert grade_set(reference=reference, curator=curator, tier="okay", source="undo").tier == "okay"
    assert grade_set(reference=reference, curator=curator, tier=None, source="undo") is None
    assert not Grade.objects.filter(reference=reference).exists()
    events = GradeEvent.objects.filter(reference=reference).order_by("id").values_list("previous_tier", "tier", "source")
    assert list(events)[-2:] == [("love", "okay", "undo"), ("okay", "", "undo")]


def test_an_unknown_tier_is_refused(curator):
    with pytest.raises(CurationError, match="unknown tier"):
        grade_set(reference=make_reference(), curator=curator, tier="meh")


def test_grades_are_per_curator(curator, django_user_model):
    other = django_user_model.objects.create_user("grace", password="x" * 12)
    reference = make_reference()
    grade_set(reference=reference, curator=curator, tier="love")
    grade_set(reference=reference, curator=other, tier="reject")
    assert reference_list(curator=curator, flt=ReferenceFilter(tier="love")).count() == 1
    assert reference_list(curator=other, flt=ReferenceFilter(tier="love")).count() == 0


def test_bulk_grading_applies_to_the_whole_filter_result_not_a_page(curator):
    roses = [make_reference(subject="a rose") for _ in range(30)]
    make_reference(subject="a poppy")
    grade_set(reference=roses[0], curator=curator, tier="okay")
    batch = grade_bulk(curator=curator, flt=ReferenceFilter(subject="a rose", tier="ungraded"), tier="reject")
    assert (batch.matched, batch.changed) == (29, 29)
    counts = tier_counts(curator=curator)
    assert counts == {"love": 0, "okay": 1, "reject": 29, "ungraded": 1, "all": 31}
    assert GradeEvent.objects.filter(source="bulk").count() == 29


def test_undoing_a_bulk_action_puts_back_exactly_the_grades_it_replaced(curator, django_user_model):
    refs = [make_reference(subject="a rose") for _ in range(5)]
    before = ["love", None, "reject", "okay", None]
    for reference, tier in zip(refs, before):
        if tier:
            grade_set(reference=reference, curator=curator, tier=tier)
    other = django_user_model.objects.create_user("grace")
    grade_set(reference=refs[1], curator=other, tier="love")  # another curator's grade is not touched
    batch = grade_bulk(curator=curator, flt=ReferenceFilter(subject="a rose"), tier="okay")
    assert (batch.matched, batch.changed) == (5, 4)
    grade_set(reference=refs[4], curator=curator, tier="love")  # changed again after the bulk action

    undone = grade_bulk_undo(batch=batch, curator=curator)
    assert (undone.restored, undone.kept) == (3, 1)
    now = dict(Grade.objects.filter(curator=curator).values_list("reference_id", "tier"))
    assert [now.get(r.id) for r in refs] == ["love", None, "reject", "okay", "love"]
    assert Grade.objects.get(curator=other).tier == "love"
    assert GradeEvent.objects.filter(source="undo").count() == 3
    with pytest.raises(CurationError, match="already undone"):
        grade_bulk_undo(batch=batch, curator=curator)
    with pytest.raises(CurationError, match="only the curator"):
        grade_bulk_undo(batch=grade_bulk(curator=curator, flt=ReferenceFilter(), tier=None), curator=other)
