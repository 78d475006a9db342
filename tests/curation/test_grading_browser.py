"""Grading in a real browser: keyboard sequences (at human speed and faster) with undo, the focus
view's navigation, history and session counter, a failed save retried, bulk and its undo, freeze."""
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


def focus_url(live_server, reference) -> str:
    return f"{live_server.url}{reverse('curation:focus', args=[reference.id])}"


def wait_subject(page, subject):
    page.wait_for_function(f"document.getElementById('focus-subject').textContent === '{subject}'")


def wait_saved(page, count):
    page.wait_for_function(
        f"document.querySelectorAll('#recent li[data-status=saved]').length >= {count}", timeout=10_000
    )


def test_a_curator_grades_a_sequence_with_the_keyboard_and_undoes(signed_in_page, live_server, curator):
    refs = [make_reference(subject=f"flower {i}") for i in range(5)]
    page = signed_in_page
    page.goto(focus_url(live_server, refs[0]))
    for key, shown in zip("123", refs[1:4]):  # at human speed: each painting is seen before the key
        page.keyboard.press(key)
        wait_subject(page, shown.subject)
        assert page.url == focus_url(live_server, shown)  # the address is the painting on screen
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


def test_bulk_grading_a_filter_result_from_the_grid_and_undoing_it(signed_in_page, live_server, curator):
    roses = [make_reference(subject="a rose") for _ in range(65)]
    make_reference(subject="a poppy")
    before = [None] * 65
    for i, tier in ((0, "love"), (1, "okay"), (2, "reject"), (3, "okay")):
        grade_set(reference=roses[i], curator=curator, tier=tier)
        before[i] = tier
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:grid')}?subject=a+rose")
    assert page.locator("[data-result-count]").get_attribute("data-result-count") == "65"
    page.select_option("select[name=bulk_tier]", "okay")
    page.click("text=Review…")
    page.click("button:has-text('Mark 65 as okay')")
    page.wait_for_selector("text=Graded 63 references as okay (2 already were)")
    assert tiers_of(curator, roses) == ["okay"] * 65

    page.click("#bulk-undo button:has-text('Undo it')")
    page.wait_for_selector("text=Undid the bulk action: 63 grades put back as they were.")
    assert tiers_of(curator, roses) == before  # exactly as before, ungraded ones included
    assert page.locator("#bulk-undo").count() == 0


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


def test_three_grade_presses_faster_than_the_paintings_appear_grade_three_paintings_once_each(
    signed_in_page, live_server, curator
):
    refs = [make_reference(subject=f"flower {i}") for i in range(5)]
    page = signed_in_page
    page.goto(focus_url(live_server, refs[0]))
    for key in "123":  # no wait between the presses
        page.keyboard.press(key)
    wait_subject(page, "flower 3")
    wait_saved(page, 3)
    assert tiers_of(curator, refs) == ["love", "okay", "reject", None, None]
    assert [GradeEvent.objects.filter(reference=r).count() for r in refs] == [1, 1, 1, 0, 0]
    assert page.url == focus_url(live_server, refs[3])
    assert page.locator("#session").inner_text().startswith("graded 3 of 5")


def test_fast_presses_past_the_last_painting_never_grade_it_twice(signed_in_page, live_server, curator):
    refs = [make_reference(subject=f"flower {i}") for i in range(2)]
    page = signed_in_page
    page.goto(focus_url(live_server, refs[0]))
    for key in "1232":
        page.keyboard.press(key)
    page.locator("#notice:has-text('last painting of this list')").wait_for()
    wait_saved(page, 2)
    assert tiers_of(curator, refs) == ["love", "okay"]
    assert GradeEvent.objects.count() == 2


def test_the_focus_view_walks_back_shows_each_paintings_history_and_counts_the_session(
    signed_in_page, live_server, curator, screenshot
):
    refs = [make_reference(subject=f"flower {i}", size=480) for i in range(4)]
    grade_set(reference=refs[3], curator=curator, tier="okay", source="import")
    page = signed_in_page
    page.goto(focus_url(live_server, refs[0]))
    assert page.locator("#prev-link").get_attribute("aria-disabled") == "true"  # nothing before the first
    assert page.locator("#session").inner_text().strip() == "graded 1 of 4"

    page.keyboard.press("j")  # skip flower 0
    wait_subject(page, "flower 1")
    page.keyboard.press("1")
    wait_subject(page, "flower 2")
    wait_saved(page, 1)
    assert page.locator("#session").inner_text().startswith("graded 2 of 4, 1 skipped")

    page.click("#prev-link")  # Previous works although the page was first rendered for the first item
    wait_subject(page, "flower 1")
    assert page.url == focus_url(live_server, refs[1])
    page.locator("#history-panel summary").click()
    history = page.locator(f"#history[data-reference='{refs[1].id}']")
    history.wait_for()
    assert "ada · ungraded → love (keyboard)" in history.inner_text()
    screenshot(page, "focus-view")

    page.keyboard.press("s")  # to the skipped one
    wait_subject(page, "flower 0")
    assert page.url == focus_url(live_server, refs[0])
    page.locator(f"#history[data-reference='{refs[0].id}']:has-text('No grade yet')").wait_for()
    page.keyboard.press("3")
    wait_subject(page, "flower 1")
    wait_saved(page, 2)
    assert page.locator("#session").inner_text().strip() == "graded 3 of 4"
    assert tiers_of(curator, refs) == ["reject", "love", None, "okay"]


def test_the_selected_tier_keeps_its_key_hint_readable_and_help_opens_in_the_middle(
    signed_in_page, live_server, curator
):
    reference = make_reference()
    grade_set(reference=reference, curator=curator, tier="love")
    page = signed_in_page
    page.goto(focus_url(live_server, reference))
    hint = page.evaluate(
        "(() => { const s = getComputedStyle(document.querySelector('.grade.current kbd'));"
        " return [s.color, s.backgroundColor]; })()"
    )
    assert hint[0] != hint[1] and hint[0] != "rgb(255, 255, 255)"
    page.keyboard.press("?")
    box = page.locator("#shortcuts").bounding_box()
    viewport = page.viewport_size
    assert abs(box["x"] + box["width"] / 2 - viewport["width"] / 2) < 2
    assert abs(box["y"] + box["height"] / 2 - viewport["height"] / 2) < 2
