"""Grading in a real browser: keyboard sequence with undo, a failed save retried, bulk, freeze."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import Grade, GradeEvent, Pool
from curation.services import grade_set
from tests.curation.factories import make_reference

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def tiers_of(curator, refs):
    grades = dict(Grade.objects.filter(curator=curator).values_list("reference_id", "tier"))
    return [grades.get(r.id) for r in refs]


def wait_saved(page, count):
    page.wait_for_function(
        f"document.querySelectorAll('#recent li[data-status=saved]').length >= {count}", timeout=10_000
    )


def test_a_curator_grades_a_sequence_with_the_keyboard_and_undoes(signed_in_page, live_server, curator):
    refs = [make_reference(subject=f"flower {i}") for i in range(5)]
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:focus', args=[refs[0].id])}")
    for key, subject in zip("123", ["flower 1", "flower 2", "flower 3"]):
        page.keyboard.press(key)
        page.wait_for_function(f"document.getElementById('focus-subject').textContent === '{subject}'")
    wait_saved(page, 3)
    assert tiers_of(curator, refs) == ["love", "okay", "reject", None, None]

    page.keyboard.press("u")  # back to #3 and its grade removed
    page.wait_for_function("document.getElementById('focus-subject').textContent === 'flower 2'")
    page.wait_for_function("document.getElementById('save-state').dataset.state === 'idle'", timeout=10_000)
    assert tiers_of(curator, refs) == ["love", "okay", None, None, None]

    page.keyboard.press("k")
    page.wait_for_function("document.getElementById('focus-subject').textContent === 'flower 1'")
    assert page.locator("#save-state").inner_text() == "Saved: Okay"
    page.keyboard.press("1")  # regrade okay -> love
    page.wait_for_function("document.getElementById('focus-subject').textContent === 'flower 2'")
    page.wait_for_function(
        "[...document.querySelectorAll('#recent li')].every(li => li.dataset.status === 'saved')", timeout=10_000
    )
    assert tiers_of(curator, refs) == ["love", "love", None, None, None]
    assert GradeEvent.objects.filter(curator=curator, source="undo").count() == 1
    page.keyboard.press("?")
    assert page.locator("#shortcuts").is_visible()


def test_a_failed_save_is_shown_and_retried_until_the_server_confirms(signed_in_page, live_server, curator):
    refs = [make_reference() for _ in range(2)]
    page = signed_in_page
    failures = {"left": 2}

    def flaky(route):
        if failures["left"] > 0:
            failures["left"] -= 1
            route.fulfill(status=503, body="maintenance")
        else:
            route.continue_()

    page.route("**/grade/", flaky)
    page.goto(f"{live_server.url}{reverse('curation:focus', args=[refs[0].id])}")
    page.keyboard.press("1")
    failed = page.locator(f"#recent li[data-reference='{refs[0].id}'][data-status=failed]")
    failed.wait_for(timeout=5_000)
    assert "retrying" in failed.inner_text()
    assert tiers_of(curator, refs) == [None, None]
    page.locator(f"#recent li[data-reference='{refs[0].id}'][data-status=saved]").wait_for(timeout=15_000)
    assert tiers_of(curator, refs) == ["love", None]
    assert page.evaluate("localStorage.getItem('paintapp.pendingGrades.ada')") == "{}"


def test_bulk_grading_a_filter_result_from_the_grid(signed_in_page, live_server, curator):
    roses = [make_reference(subject="a rose") for _ in range(65)]
    make_reference(subject="a poppy")
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:grid')}?subject=a+rose")
    assert page.locator("[data-result-count]").get_attribute("data-result-count") == "65"
    page.select_option("select[name=bulk_tier]", "okay")
    page.click("text=Review…")
    page.click("button:has-text('Mark 65 as okay')")
    page.wait_for_selector("text=Graded 65 references as okay")
    assert tiers_of(curator, roses) == ["okay"] * 65


def test_freezing_a_pool_from_the_builder(signed_in_page, live_server, curator):
    for tier in ["love"] * 5 + ["okay"] * 5 + ["reject"] * 2:
        grade_set(reference=make_reference(), curator=curator, tier=tier)
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:builder')}")
    page.fill("input[name=name]", "My taste")
    page.wait_for_selector("#preview .bstat.tier-love .bnum:has-text('5')")
    page.click("#freeze")
    page.wait_for_url(f"{live_server.url}/pools/my-taste/v1/")
    assert Pool.objects.get().members.count() == 10
    assert "Froze my-taste:v1 with 10 references" in page.content()
