"""The judge audit against people: per curator, on the audited pairs they graded with two
different tiers, the share the judge orders their way, with a Wilson interval and a flag on
few pairs; figures checked against hand-worked ones."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from curation.audit import judge_audit_run, people_agreement, wilson_interval
from curation.services import grade_set
from tests.curation.factories import make_pool
from tests.curation.test_agreement_page import grade_as

pytestmark = pytest.mark.django_db

A, B, C, D = 1, 2, 3, 4
# better/worse by the pool's tiers; first and swapped are P(better wins) in both orders
ROWS = [
    {"better": A, "worse": B, "first": 0.9, "swapped": 0.7},  # judge prefers A (mean 0.8)
    {"better": A, "worse": C, "first": 0.6, "swapped": 0.2},  # prefers C (0.4)
    {"better": B, "worse": D, "first": 0.5, "swapped": 0.5},  # prefers neither (0.5)
    {"better": C, "worse": D, "first": None, "swapped": 0.9},  # a failed judging: never counted
    {"better": A, "worse": D, "first": 0.8, "swapped": 0.8},  # prefers A
]


def test_wilson_intervals_match_hand_worked_values():
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    low, high = wilson_interval(2, 4)  # centre 0.5, half-width 1.96·√(0.0625+0.0600)/1.9604 = 0.3500
    assert (round(low, 3), round(high, 3)) == (0.150, 0.850)
    low, high = wilson_interval(0, 1)  # centre = half-width = 1.9208/4.8416
    assert low == 0.0 and round(high, 4) == 0.7935
    assert wilson_interval(0, 0) is None


def test_each_curator_is_compared_on_the_pairs_they_graded_differently():
    people = {row["curator"]: row for row in people_agreement(ROWS, {
        "mara": {A: "love", B: "okay", C: "okay", D: "reject"},
        "jonas": {A: "okay", B: "love", C: "okay"},  # A=C: no order; D ungraded
        "ines": {D: "okay"},
    })}
    # mara: A>B agree, A>C the judge prefers C, B>D the judge prefers neither, A>D agree: 2 of 4
    assert (people["mara"]["agree"], people["mara"]["pairs"], people["mara"]["accuracy"]) == (2, 4, 0.5)
    assert (round(people["mara"]["low"], 3), round(people["mara"]["high"], 3)) == (0.150, 0.850)
    # jonas ranks B over A, the judge A over B: 0 of 1
    assert (people["jonas"]["agree"], people["jonas"]["pairs"], people["jonas"]["accuracy"]) == (0, 1, 0.0)
    assert people["mara"]["few"] and people["jonas"]["few"]
    assert people["ines"]["pairs"] == 0 and people["ines"]["accuracy"] is None and people["ines"]["low"] is None
    assert "no audited pair" in people["ines"]["reason"]


class PrefersThePoolsBetter:
    """A judge that always picks the reference the pool ranks higher."""

    def compare(self, a: bytes, b: bytes, *, prompt: str, candidate_first: bool) -> float:
        return 1.0


def test_the_pool_page_shows_the_judge_against_each_curator_who_graded_the_eval_references(
    signed_in, curator, django_user_model
):
    pool = make_pool(curator, name="roses", love=2, okay=2, reject=2, tiers=("love", "okay", "reject"), eval_share=0.5)
    held_out = {m.tier: m.reference for m in pool.members.filter(split="eval").select_related("reference")}
    assert sorted(held_out) == ["love", "okay", "reject"]  # one of each tier: three pairs
    # jonas turns the held-out love and reject around; ines grades only the okay one
    grade_as(django_user_model, "jonas", {held_out["love"]: "reject", held_out["okay"]: "okay", held_out["reject"]: "love"})
    grade_as(django_user_model, "ines", {held_out["okay"]: "okay"})
    grade_set(reference=held_out["okay"], curator=curator, tier="okay")  # ada's frozen grades, unchanged

    audit = judge_audit_run(pool=pool, judge=PrefersThePoolsBetter(), judge_label="fake", recipe_name="r", pairs=10)
    people = {row["curator"]: row for row in audit.results["people"]}
    assert {name: (row["agree"], row["pairs"]) for name, row in people.items()} == {
        "ada": (3, 3), "jonas": (0, 3), "ines": (0, 0)}
    assert audit.results["pool_tiers"] | {"low": None, "high": None} == {
        "consensus": False, "pairs": 3, "agree": 3, "accuracy": 1.0, "low": None, "high": None, "few": True, "reason": ""}

    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    table = page[page.index('id="audit-people"'):page.index("</table>", page.index('id="audit-people"'))]
    table = re.sub(r">\s+<", "><", table)
    rows = {chunk.split('"')[0]: chunk for chunk in table.split('<tr data-against="')[1:]}
    assert set(rows) == {"pool", "ada", "jonas", "ines"}
    assert "<td>1.000</td><td>0.44 – 1.00</td>" in rows["ada"] and "<td>3 <span" in rows["ada"]
    assert "<td>0.000</td><td>0.00 – 0.56</td>" in rows["jonas"]
    assert 'title="no audited pair this curator graded with two different tiers">–</span>' in rows["ines"]
    assert "the pool's tiers" in rows["pool"] and "<td>1.000</td>" in rows["pool"]


def test_audit_judge_prints_the_judge_against_each_curator(curator, django_user_model, capsys):
    from django.core.management import call_command

    pool = make_pool(curator, name="roses", love=2, okay=2, reject=2, tiers=("love", "okay", "reject"), eval_share=0.5)
    held_out = {m.tier: m.reference for m in pool.members.filter(split="eval").select_related("reference")}
    grade_as(django_user_model, "jonas", {held_out["love"]: "okay", held_out["okay"]: "okay"})  # a tie: no pair
    call_command("audit_judge", pool="roses", recipe="studio-judge-led", pairs=3)
    out = capsys.readouterr().out
    people = {row["curator"]: row for row in pool.judge_audits.get().results["people"]}
    assert set(people) == {"ada", "jonas"} and people["ada"]["pairs"] == 3 and people["jonas"]["pairs"] == 0
    ada = people["ada"]
    assert f"agrees with ada{' ' * 15} {ada['accuracy']:.3f} ({ada['low']:.2f}-{ada['high']:.2f}) on 3 pairs few" in out
    assert f"agrees with jonas{' ' * 13} - on 0 pairs\n" in out
