"""Several curators in a real browser: the disagreement view, grading from its cards (htmx),
and blind grading revealing the others' grades once graded."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import Grade
from curation.services import grade_set
from tests.curation.factories import make_reference

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def card(page, reference):
    return page.locator(f"#ref-{reference.id}")


def test_three_curators_see_where_they_disagree_and_a_blind_one_sees_grades_once_graded(
    signed_in_page, live_server, curator, django_user_model, screenshot
):
    roses = [make_reference(subject=f"a rose {i}", size=256) for i in range(6)]
    mara, jonas = (django_user_model.objects.create_user(name) for name in ("mara", "jonas"))
    for reference, (a, b) in zip(roses, [("love", "love"), ("love", "reject"), ("okay", "reject"),
                                         ("okay", "okay"), ("reject", "okay")]):
        grade_set(reference=reference, curator=mara, tier=a)
        grade_set(reference=reference, curator=jonas, tier=b)
    grade_set(reference=roses[1], curator=curator, tier="love")
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:grid')}?show=disagree")
    assert page.locator("#disagreement-count").inner_text() == (
        "curators disagree on 3 of 5 references graded by two or more")
    assert page.locator(".refgrid > li").count() == 3
    assert card(page, roses[1]).locator("[data-curator=jonas]").inner_text() == "jonas reject"

    card(page, roses[2]).locator("button:has-text('Okay')").click()  # graded from the card, swapped in place
    card(page, roses[2]).locator("[data-curator=ada][data-tier=okay]").wait_for()
    assert Grade.objects.get(reference=roses[2], curator=curator).tier == "okay"
    page.locator("#tier-counts .tc-ungraded:has-text('ungraded 1')").wait_for()  # the counts follow
    assert page.locator("#tier-counts .tc-okay").inner_text() == "okay 1"
    screenshot(page, "curators-disagreements")

    page.click("#blind-toggle button:has-text('Grade blind')")
    page.locator("#blind-state").wait_for()
    assert page.locator(".refgrid > li").count() == 2  # blind: only the disagreements ada has graded
    page.goto(f"{live_server.url}{reverse('curation:grid')}?show=all")
    hidden = card(page, roses[4]).locator("[data-curator=mara]")
    assert hidden.inner_text() == "mara hidden"
    card(page, roses[4]).locator("button:has-text('Reject')").click()
    card(page, roses[4]).locator("[data-curator=mara][data-tier=reject]").wait_for()
    assert card(page, roses[4]).locator("[data-curator=jonas]").inner_text() == "jonas okay"

    # The focus view, still blind: mara's grade of rose 0 shows once ada's key press saved hers.
    page.goto(f"{live_server.url}{reverse('curation:focus', args=[roses[0].id])}?show=all")
    assert page.locator("#curators [data-curator=mara]").inner_text() == "mara hidden"
    page.keyboard.press("1")
    page.wait_for_function(f"document.getElementById('focus-subject').textContent === '{roses[1].subject}'")
    page.locator("#recent li[data-status=saved]").wait_for()
    page.keyboard.press("k")
    page.locator(f"#curators[data-reference='{roses[0].id}'] [data-curator=mara][data-tier=love]").wait_for()
    assert page.locator("#curators [data-curator=ada]").inner_text() == "ada love"
