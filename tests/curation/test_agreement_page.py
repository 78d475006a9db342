"""The Agreement page and `manage.py agreement`: real curators grade through the grade
endpoint, then the page and the command show how far they agree."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from curation.services import pool_freeze
from tests.curation.factories import grade_as, make_reference
from tests.curation.test_agreement import TEN_A, TEN_B, TEN_CONFUSION, TEN_KAPPA, TEN_WEIGHTED_KAPPA

pytestmark = pytest.mark.django_db



@pytest.fixture
def roses():
    return [make_reference(subject="a rose") for _ in range(10)]


@pytest.fixture
def three_curators(django_user_model, roses):
    """mara and jonas grade the ten roses as the hand-worked example's A and B; ines grades three."""
    mara = grade_as(django_user_model, "mara", dict(zip(roses, TEN_A, strict=True)))
    grade_as(django_user_model, "jonas", dict(zip(roses, TEN_B, strict=True)))
    grade_as(django_user_model, "ines", {roses[0]: "love", roses[3]: "okay", roses[7]: "okay"})
    return mara


def test_curators_who_graded_through_the_views_see_their_agreement(three_curators):
    response = three_curators.get(reverse("curation:agreement"))
    assert response.status_code == 200
    report = response.context["report"]
    assert [(c.name, c.graded) for c in report.curators] == [("ines", 3), ("jonas", 10), ("mara", 10)]
    pairs = {(p.a, p.b): p for p in report.overall.pairs}
    jonas_mara = pairs["jonas", "mara"]  # rows jonas (B), columns mara (A): the hand-worked table transposed
    assert jonas_mara.n == 10
    assert jonas_mara.kappa.value == pytest.approx(TEN_KAPPA)
    assert jonas_mara.weighted_kappa.value == pytest.approx(TEN_WEIGHTED_KAPPA)
    assert jonas_mara.confusion == tuple(zip(*TEN_CONFUSION, strict=True))
    assert jonas_mara.kappa.has_interval and jonas_mara.kappa.low <= TEN_KAPPA <= jonas_mara.kappa.high
    assert pairs["ines", "mara"].kappa.value is None
    assert report.overall.alpha.value is not None and report.overall.alpha.has_interval
    html = response.content.decode()
    assert "<b>jonas</b> · <b>mara</b>" in html and "<b>0.55</b>" in html and "<b>70%</b>" in html
    assert "Only 3 references graded by both ines and mara; needs at least 5" in html
    assert 'aria-label="jonas against mara"' in html  # the confusion table
    assert "a rose" in html  # its subject row


def test_with_one_curator_the_page_says_what_is_needed(django_user_model, roses):
    client = grade_as(django_user_model, "mara", {roses[0]: "love", roses[1]: "okay"})
    response = client.get(reverse("curation:agreement"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Agreement needs at least two curators" in html
    assert "only mara has graded these references" in html
    assert "mara: 2 graded" in html


def test_the_chosen_curators_are_the_only_ones_compared(three_curators):
    response = three_curators.get(reverse("curation:agreement"), {"curator": ["mara", "jonas"]})
    assert [(p.a, p.b) for p in response.context["report"].overall.pairs] == [("jonas", "mara")]


def test_the_subject_filter_narrows_the_references(three_curators, django_user_model):
    tulips = [make_reference(subject="a tulip") for _ in range(2)]
    for name in ("mara", "jonas"):
        client = Client()
        client.force_login(django_user_model.objects.get(username=name))
        for tulip in tulips:
            client.post(reverse("curation:grade", args=[tulip.id]), {"tier": "love"})
    everything = three_curators.get(reverse("curation:agreement")).context["report"]
    assert [g.subject for g in everything.subjects] == ["a rose", "a tulip"]
    assert everything.subjects[1].alpha.value is None  # two shared tulips: too few
    tulip_only = three_curators.get(reverse("curation:agreement"), {"subject": "a tulip"})
    report = tulip_only.context["report"]
    assert report.overall.references == 2 and [g.subject for g in report.subjects] == ["a tulip"]
    assert "Only 2 references graded by two or more curators; needs at least 5" in tulip_only.content.decode()


def test_a_pool_scope_compares_the_live_grades_on_its_members(three_curators, django_user_model):
    pool = pool_freeze(name="roses", curator=django_user_model.objects.get(username="mara"), tiers=["love", "okay"])
    response = three_curators.get(reverse("curation:agreement"), {"pool": pool.label})
    pair = {(p.a, p.b): p for p in response.context["report"].overall.pairs}["jonas", "mara"]
    # mara's love and okay roses (the first seven): jonas agrees on 5 of them
    assert pair.n == 7 and pair.percent.value == pytest.approx(5 / 7)


def test_htmx_gets_only_the_agreement_fragment(three_curators):
    response = three_curators.get(reverse("curation:agreement"), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="agreement">') and "<html" not in html
    assert "<b>0.55</b>" in html


@pytest.mark.parametrize("params, message", [
    ({"pool": "nope:v3"}, "No pool &#x27;nope:v3&#x27;"),
    ({"curator": ["mara", "ghost"]}, "No curator named &#x27;ghost&#x27;"),
])
def test_an_unknown_pool_or_curator_is_a_400_that_says_which(three_curators, params, message):
    response = three_curators.get(reverse("curation:agreement"), params)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_the_curation_navigation_links_to_the_agreement_page(signed_in):
    html = signed_in.get(reverse("curation:pools")).content.decode()
    assert f'href="{reverse("curation:agreement")}"' in html


def test_the_command_prints_the_same_figures(three_curators, capsys):
    call_command("agreement", "--resamples", "200")
    out = capsys.readouterr().out
    assert "Agreement on all references (10 references). Curators (graded): ines 3, jonas 10, mara 10." in out
    assert "jonas · mara: n=10" in out and "kappa 0.55 [" in out and "weighted kappa (linear) 0.52 [" in out
    assert "ines · mara: n=3  — only 3 references graded by both ines and mara; needs at least 5" in out
    assert "rows jonas, columns mara:" in out


def test_the_command_writes_json_with_the_hand_worked_figures(three_curators, capsys):
    call_command("agreement", "--json", "--resamples", "0", "--curator", "mara", "--curator", "jonas", "--subject", "a rose")
    data = json.loads(capsys.readouterr().out)
    (pair,) = data["overall"]["pairs"]
    assert pair["kappa"]["value"] == pytest.approx(TEN_KAPPA)
    assert pair["weighted_kappa"]["value"] == pytest.approx(TEN_WEIGHTED_KAPPA)
    assert data["overall"]["alpha"]["value"] == pytest.approx(0.525)
    assert data["resamples"] == 0


@pytest.mark.parametrize("args, message", [
    (["--pool", "nope"], "no pool 'nope'"),
    (["--curator", "ghost"], "no curator named 'ghost'"),
    (["--resamples", "-1"], "resamples must be 0 or more"),
])
def test_the_command_refuses_bad_input_clearly(three_curators, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("agreement", *args)
