"""The login form in a real browser: the other browser tests start signed in by cookie
(`signed_in_page`), so this is where the form itself is sent."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_curator_signs_in_through_the_form_and_lands_on_the_pools(chromium, live_server, curator):
    context = chromium.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "not-the-password")
    page.click("button[type=submit]")
    assert page.get_by_role("alert").inner_text() == "That user name and password did not match. Try again."
    assert page.url == f"{live_server.url}/login/"
    page.fill("input[name=password]", "watercolour-2026")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/pools/")
    assert page.get_by_role("button", name="Sign out").is_visible()
    context.close()
