"""Frozen pools: tiers copied at freeze time, versioned names, stratified seeded splits, diffs."""
from __future__ import annotations

import pytest

from curation.errors import CurationError
from curation.models import Pool
from curation.selectors import ReferenceFilter, pool_balance, pool_diff, pool_get
from curation.services import grade_set, pool_freeze
from tests.curation.factories import make_reference

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(curator):
    refs = {"love": [], "okay": [], "reject": []}
    for tier, n in (("love", 10), ("okay", 15), ("reject", 5)):
        for i in range(n):
            reference = make_reference(subject="a rose" if i % 2 else "a peach hibiscus")
            grade_set(reference=reference, curator=curator, tier=tier)
            refs[tier].append(reference)
    return refs


def test_freezing_copies_tiers_so_later_grades_never_change_the_pool(curator, graded):
    pool = pool_freeze(name="Hibiscus taste", curator=curator)
    assert pool.label == "hibiscus-taste:v1"
    before = dict(pool.members.values_list("reference_id", "tier"))
    for reference in graded["love"]:
        grade_set(reference=reference, curator=curator, tier="reject")
    assert dict(pool.members.values_list("reference_id", "tier")) == before
    assert pool_balance(pool).by_tier == {"love": 10, "okay": 15, "reject": 0}


def test_the_split_is_stratified_by_tier_and_reproducible_from_the_seed(curator, graded):
    a = pool_freeze(name="p", curator=curator, eval_share=0.2, seed=7)
    b = pool_freeze(name="p", curator=curator, eval_share=0.2, seed=7)
    c = pool_freeze(name="p", curator=curator, eval_share=0.2, seed=8)
    balance = pool_balance(a)
    assert balance.by_split["eval"] == {"love": 2, "okay": 3}
    assert balance.by_split["train"] == {"love": 8, "okay": 12}
    split = lambda pool: dict(pool.members.values_list("reference__sha256", "split"))  # noqa: E731
    assert split(a) == split(b)
    assert split(a) != split(c)


def test_each_freeze_of_a_name_is_a_new_version(curator, graded):
    assert [pool_freeze(name="p", curator=curator).version for _ in range(3)] == [1, 2, 3]
    assert pool_get("p").version == 3
    assert pool_get("p:2").version == 2
    assert pool_get("p:v1").version == 1
    with pytest.raises(Pool.DoesNotExist):
        pool_get("nope")


def test_the_filter_and_tiers_choose_members(curator, graded):
    pool = pool_freeze(name="roses", curator=curator, tiers=["love"], flt=ReferenceFilter(subject="a rose"))
    assert pool.members.count() == 5
    assert set(pool.members.values_list("tier", flat=True)) == {"love"}
    assert pool.filters["subject"] == "a rose"


def test_the_freeze_pool_command_reads_its_filter_like_the_pages_and_refuses_a_bad_one(curator, graded):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("freeze_pool", "roses", tiers="love", subject="a rose", provenance="upload")
    assert pool_get("roses").members.count() == 5
    with pytest.raises(CommandError, match="provenance: Select a valid choice"):
        call_command("freeze_pool", "roses", provenance="stolen")
    assert pool_get("roses").version == 1


def test_a_diff_lists_added_removed_and_tier_changed_members(curator, graded):
    v1 = pool_freeze(name="p", curator=curator)
    grade_set(reference=graded["love"][0], curator=curator, tier="okay")
    grade_set(reference=graded["okay"][0], curator=curator, tier="reject")
    newcomer = make_reference(subject="a tulip")
    grade_set(reference=newcomer, curator=curator, tier="love")
    v2 = pool_freeze(name="p", curator=curator)
    diff = pool_diff(v1, v2)
    assert [m.reference_id for m in diff.added] == [newcomer.id]
    assert [m.reference_id for m in diff.removed] == [graded["okay"][0].id]
    assert [(o.tier, n.tier) for o, n in diff.tier_changed] == [("love", "okay")]
    assert diff.unchanged == 23


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "!!!"}, "needs a name"),
        ({"name": "p", "tiers": []}, "at least one tier"),
        ({"name": "p", "eval_share": 1.0}, "eval share"),
        ({"name": "p", "flt": ReferenceFilter(subject="a lotus")}, "no graded reference"),
    ],
)
def test_bad_freeze_requests_get_clear_errors(curator, graded, kwargs, message):
    with pytest.raises(CurationError, match=message):
        pool_freeze(curator=curator, **kwargs)
    assert not Pool.objects.exists()


def test_group_references_are_half_love_half_okay_from_train_and_reproducible(curator, graded):
    from curation.selectors import group_references

    pool = pool_freeze(name="p", curator=curator, eval_share=0.2, seed=3)
    first = group_references(pool, count=4, key=(7, 1, 0))
    assert [m.tier for m in first] == ["love", "love", "okay", "okay"]
    assert {m.split for m in first} == {"train"}
    assert [m.id for m in group_references(pool, count=4, key=(7, 1, 0))] == [m.id for m in first]
    draws = {tuple(m.id for m in group_references(pool, count=4, key=(7, step, 0))) for step in range(10)}
    assert len(draws) > 1
