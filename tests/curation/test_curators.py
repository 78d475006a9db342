"""Several curators on one library, through the views: one curator's grades, all of them side
by side, only the disagreements (with counts, among chosen curators), the focus walk in each
mode, and blind grading in every place that shows another curator's tier."""
from __future__ import annotations

import pytest
from django.urls import reverse

from tests.curation.factories import grade_as, make_reference

pytestmark = pytest.mark.django_db


@pytest.fixture
def roses():
    return [make_reference(subject=f"a rose {i}") for i in range(5)]


@pytest.fixture
def mara(django_user_model, roses):
    """mara, jonas and ines grade the roses through the grade endpoint; mara's client is returned.

    rose 0: love, love, –      (agree)
    rose 1: okay, reject, okay (disagree; mara and jonas disagree, jonas and ines too)
    rose 2: reject, reject, –  (agree)
    rose 3: love, –, okay      (disagree, mara and ines only)
    rose 4: –, okay, –         (one curator)
    """
    r = roses
    client = grade_as(django_user_model, "mara", {r[0]: "love", r[1]: "okay", r[2]: "reject", r[3]: "love"})
    grade_as(django_user_model, "jonas", {r[0]: "love", r[1]: "reject", r[2]: "reject", r[4]: "okay"})
    grade_as(django_user_model, "ines", {r[1]: "okay", r[3]: "okay"})
    return client


def ids_of(response) -> list[int]:
    return [reference.id for reference in response.context["page"].object_list]


def chip(name: str, tier: str) -> str:
    return f'data-curator="{name}" data-tier="{tier}"'


def test_the_grid_shows_one_curators_grades_unless_asked_for_all_side_by_side(mara, roses):
    one = mara.get(reverse("curation:grid")).content.decode()
    assert "curatorchips" not in one
    every = mara.get(reverse("curation:grid"), {"show": "all"})
    assert ids_of(every) == [r.id for r in roses]
    rose1 = every.context["page"].object_list[1]
    assert [(g.curator, g.tier) for g in rose1.curator_grades] == [("mara", "okay"), ("ines", "okay"), ("jonas", "reject")]
    html = every.content.decode()
    card = html[html.index(f'id="ref-{roses[1].id}"'):html.index(f'id="ref-{roses[2].id}"')]
    assert all(chip(*g) in card for g in (("mara", "okay"), ("ines", "okay"), ("jonas", "reject")))
    assert "curators disagree on <b>2</b> of 4 references graded by two or more" in html


def test_only_disagreements_lists_the_references_graded_differently_among_the_chosen_curators(mara, roses):
    everyone = mara.get(reverse("curation:grid"), {"show": "disagree"})
    assert ids_of(everyone) == [roses[1].id, roses[3].id]
    assert everyone.context["disagreement"] == {"disagree": 2, "shared": 4}
    assert everyone.context["result_count"] == 2
    pair = mara.get(reverse("curation:grid"), {"show": "disagree", "among": ["jonas", "mara"]})
    assert ids_of(pair) == [roses[1].id]
    assert pair.context["disagreement"] == {"disagree": 1, "shared": 3}
    assert "curators disagree on <b>1</b> of 3 references graded by two or more of jonas, mara" in pair.content.decode()
    agreeing = mara.get(reverse("curation:grid"), {"show": "disagree", "among": ["jonas", "mara"], "tier": "love"})
    assert ids_of(agreeing) == []  # mara loved roses 0 and 3: jonas agreed on 0 and never graded 3


def test_the_focus_walk_and_its_links_follow_the_mode(mara, roses):
    response = mara.get(reverse("curation:focus", args=[roses[1].id]), {"show": "disagree", "among": ["ines", "mara"]})
    assert response.context["ids"] == [roses[1].id, roses[3].id]
    assert response.context["next_id"] == roses[3].id and response.context["previous_id"] is None
    html = response.content.decode()
    assert f'href="{reverse("curation:focus", args=[roses[3].id])}?show=disagree&amp;among=ines&amp;among=mara"' in html
    assert chip("jonas", "reject") in html  # the focus view shows every curator's tier too
    every = mara.get(reverse("curation:focus", args=[roses[4].id]), {"show": "all"})
    assert every.context["ids"] == [r.id for r in roses] and chip("jonas", "okay") in every.content.decode()


def test_an_unknown_curator_or_mode_is_a_clear_400(mara):
    response = mara.get(reverse("curation:grid"), {"show": "disagree", "among": ["nobody"]})
    assert response.status_code == 400 and "nobody is not one of the available choices" in response.content.decode()
    assert mara.get(reverse("curation:grid"), {"show": "everything"}).status_code == 400


def blind_client(django_user_model, name: str = "zoe"):
    client = grade_as(django_user_model, name, {})
    client.post(reverse("curation:blind"), {"blind": "on", "next": "/pools/references/"})
    return client


def everywhere(client, reference) -> dict[str, str]:
    """Every page and endpoint that can show another curator's tier of `reference`."""
    return {
        "grid": client.get(reverse("curation:grid"), {"show": "all"}).content.decode(),
        "focus": client.get(reverse("curation:focus", args=[reference.id]), {"show": "all"}).content.decode(),
        "history": client.get(reverse("curation:history", args=[reference.id])).content.decode(),
        "curators": client.get(reverse("curation:curators", args=[reference.id])).content.decode(),
        "details": str(client.get(reverse("curation:details"), {"ids": str(reference.id)}).json()),
    }


def test_a_blind_curator_sees_the_others_grades_of_a_reference_only_once_they_graded_it(mara, roses, django_user_model):
    rose1 = roses[1]
    sighted = everywhere(grade_as(django_user_model, "yann", {}), rose1)
    assert "jonas" in sighted["history"] and "'tier': 'reject'" in sighted["details"]  # not blind: all shown

    zoe = blind_client(django_user_model)
    before = everywhere(zoe, rose1)
    assert chip("jonas", "reject") not in before["grid"] and chip("jonas", "") in before["grid"]
    assert chip("jonas", "reject") not in before["focus"] and "Blind: grade it to see" in before["focus"]
    assert chip("jonas", "reject") not in before["curators"]
    assert "jonas" not in before["history"] and "ines" not in before["history"] and "No grade yet" in before["history"]
    assert "'curator': 'jonas', 'tier': None" in before["details"] and "reject" not in before["details"]
    assert "jonas" not in before["focus"][before["focus"].index('id="history"'):]

    card = zoe.post(reverse("curation:grade", args=[rose1.id]), {"tier": "love", "source": "grid"},
                    headers={"HX-Request": "true"}).content.decode()
    assert card.lstrip().startswith("<li") and chip("jonas", "reject") in card and chip("zoe", "love") in card

    after = everywhere(zoe, rose1)
    assert chip("jonas", "reject") in after["grid"] and chip("jonas", "reject") in after["focus"]
    assert chip("jonas", "reject") in after["curators"] and "Blind: grade it" not in after["focus"]
    assert "jonas · ungraded → reject" in after["history"] and "'curator': 'jonas', 'tier': 'reject'" in after["details"]
    assert chip("jonas", "") in after["grid"]  # rose 4, which zoe has not graded, stays hidden


def test_a_blind_curator_sees_anothers_grades_and_the_disagreements_only_where_they_graded(mara, roses, django_user_model):
    zoe = blind_client(django_user_model)
    theirs = {"grader": "jonas", "tier": "reject"}
    assert ids_of(zoe.get(reverse("curation:grid"), theirs)) == []  # the tier filter would tell
    assert zoe.get(reverse("curation:grid"), {"grader": "jonas"}).context["counts"]["reject"] == 0
    assert ids_of(zoe.get(reverse("curation:grid"), {"show": "disagree"})) == []
    zoe.post(reverse("curation:grade", args=[roses[1].id]), {"tier": "okay"})
    assert ids_of(zoe.get(reverse("curation:grid"), theirs)) == [roses[1].id]
    disputed = zoe.get(reverse("curation:grid"), {"show": "disagree"})
    assert ids_of(disputed) == [roses[1].id] and disputed.context["disagreement"] == {"disagree": 1, "shared": 1}
    zoe.post(reverse("curation:blind"), {"blind": "off"})
    assert ids_of(zoe.get(reverse("curation:grid"), theirs)) == [roses[1].id, roses[2].id]
    assert ids_of(zoe.get(reverse("curation:grid"), {"show": "disagree"})) == [roses[1].id, roses[3].id]


def test_the_chosen_curators_narrow_only_the_disagreement_list(mara, roses):
    every = mara.get(reverse("curation:grid"), {"show": "all", "among": ["jonas", "mara"]})
    assert every.context["view"].among == () and every.context["disagreement"] == {"disagree": 2, "shared": 4}
    assert "among=" not in every.context["query"]
