"""The Upload page in a real browser: the report lists every file, and every error the server
answers (no file, nothing importable) reaches the page."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import Reference
from tests.curation.factories import png_bytes, zip_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def upload(page, live_server, files: list[tuple[str, bytes]]):
    page.goto(f"{live_server.url}{reverse('curation:upload')}")
    if files:
        page.set_input_files("#files", files=[{"name": n, "mimeType": "application/octet-stream", "buffer": b} for n, b in files])
    page.click("#upload-form button[type=submit]")


def outcomes(page) -> dict[str, str]:
    rows = page.locator("#report tbody tr")
    return {rows.nth(i).locator("code").first.inner_text(): rows.nth(i).get_attribute("data-outcome") for i in range(rows.count())}


def test_a_text_file_inside_a_zip_is_listed_as_ignored_beside_the_imported_images(
    signed_in_page, live_server, screenshot
):
    page = signed_in_page
    archive = zip_of({"roses/a.png": png_bytes(size=96), "roses/notes.txt": "shot in June", "roses/bad.png": "no pixels"})
    upload(page, live_server, [("roses.zip", archive), ("peony.png", png_bytes(size=96))])
    page.wait_for_selector("#report[data-status=done]")
    assert outcomes(page) == {
        "roses.zip:roses/a.png": "imported", "roses.zip:roses/bad.png": "rejected",
        "roses.zip:roses/notes.txt": "ignored", "peony.png": "imported",
    }
    assert "not_an_image" in page.locator("#report tr[data-outcome=rejected]").inner_text()
    assert page.locator("#report b").first.inner_text() == "2 imported, 0 duplicates, 0 graded, 1 rejected, 1 ignored"
    assert Reference.objects.count() == 2
    screenshot(page, "upload-report")


def test_a_zip_with_nothing_importable_is_an_error_on_the_page(signed_in_page, live_server):
    page = signed_in_page
    upload(page, live_server, [("notes.zip", zip_of({"notes.txt": "to do"}))])
    page.wait_for_selector("#report[data-status=error]")
    assert "Nothing importable" in page.locator("#upload-error").inner_text()
    assert outcomes(page) == {"notes.zip:notes.txt": "ignored"}
    assert not Reference.objects.exists()


def test_an_empty_submission_shows_the_servers_message(signed_in_page, live_server):
    page = signed_in_page
    upload(page, live_server, [])
    page.wait_for_selector("#report[data-status=error]")
    assert page.locator("#upload-error").inner_text() == "Choose or drop at least one image or zip."
