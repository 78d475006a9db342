"""In a browser: the export page follows a build by itself (htmx polling) and then offers
the download, and the pool page's Export button works without JavaScript."""
from __future__ import annotations

import pytest

from curation.models import PoolExport
from curation.tasks import build_pool_export
from tests.curation.factories import make_pool

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="roses", love=3, okay=3, reject=0, eval_share=0.2, subject="a rose {i}")


def test_the_export_page_shows_the_download_once_the_build_is_done(signed_in_page, live_server, pool):
    page = signed_in_page
    page.goto(f"{live_server.url}/pools/roses/v1/")
    page.click("text=Export (imagefolder + parquet)")
    page.wait_for_url(f"{live_server.url}/pools/roses/v1/export/")
    assert page.locator("#export-status").get_attribute("data-status") == "queued"
    assert page.locator("#export-status").inner_text().count("Waiting for a score worker") == 1

    build_pool_export(PoolExport.objects.get(pool=pool).id)  # what the score worker does
    page.wait_for_selector("#export-status[data-status=ready]", timeout=10_000)  # no reload: htmx polled
    with page.expect_download() as caught:
        page.click("text=Download roses-v1.zip")
    assert caught.value.suggested_filename == "roses-v1.zip"


def test_the_export_button_works_without_javascript(chromium, live_server, pool):
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "watercolour-2026")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/pools/roses/v1/")
    page.click("text=Export (imagefolder + parquet)")
    page.wait_for_url(f"{live_server.url}/pools/roses/v1/export/")
    build_pool_export(PoolExport.objects.get(pool=pool).id)
    # The page refreshes itself (<noscript> meta refresh) until the build is done.
    page.wait_for_selector("#export-status[data-status=ready]", timeout=10_000)
    assert page.locator("a", has_text="Download roses-v1.zip").count() == 1
    context.close()
