"""The rollout editor in real Chromium against the live server, with real render and score workers."""
from __future__ import annotations

import os
import time

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import GOOD, LOOP_FOREVER, make_run
from training.models import Revision

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Set to a path (e.g. /tmp/editor.png) to look at the editor after a scored revision, light and dark.
SCREENSHOT = os.environ.get("PAINTAPP_EDITOR_SCREENSHOT", "")


@pytest.fixture
def rollout(curator):
    run = make_run(make_pool(curator), steps=1, generations=4, rewards=[[0.42, 0.55, 0.31, 0.6]])
    run.hyperparameters["render_size"] = 128
    run.save(update_fields=["hyperparameters"])
    return run.rollouts.get(position=1)


def open_editor(page, live_server, rollout):
    page.goto(f"{live_server.url}{reverse('training:rollout', args=[rollout.run_id, rollout.id])}")
    page.wait_for_selector(".cm-editor .cm-content")


def replace_code(page, code: str):
    """Select everything in the editor and type the new text in one input, as a paste does."""
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)


def editor_text(page) -> str:
    return page.evaluate("window.studioEditor.getCode()")


def test_it_edits_renders_and_scores_a_rollout_beside_the_original_and_keeps_the_draft(
    signed_in_page, live_server, start_worker, worker_env, rollout
):
    worker_env["RENDER_TIMEOUT_S"] = "10"
    start_worker("render")
    start_worker("score")
    page = signed_in_page
    open_editor(page, live_server, rollout)

    # The rollout's sketch passed the gate; an edit that breaks it is shown at its line:col.
    page.wait_for_selector("#lint-status[data-state=clean]")
    disallowed = GOOD.replace("brush.scaleBrushes(3);", 'brush.scaleBrushes(3);\n  brush.set("2B", "#1f2937", 1);')
    replace_code(page, disallowed)
    page.wait_for_selector("#lint-status[data-state=problems]")
    assert "7:9 disallowed_brush_method" in page.inner_text("#diagnostics")
    assert page.locator(".cm-lintRange-error", has_text="set").count() == 1

    violating = GOOD.replace("brush.scaleBrushes(3);", "brush.scaleBrushes(3);\n  rect(10, 10, 50, 50);")
    replace_code(page, violating)
    page.wait_for_function("document.getElementById('diagnostics').innerText.includes('7:3 bare_primitives')")
    assert page.locator(".cm-lintRange-error", has_text="rect").count() == 1

    replace_code(page, GOOD)
    page.wait_for_selector("#lint-status[data-state=clean]")
    assert page.inner_text("#lint-status") == "Passes the gate"

    page.click("#render-button")
    page.wait_for_selector("#revision-panel[data-status=rendering]")
    page.wait_for_selector("#revision-panel[data-status=rendered]", timeout=60_000)
    assert page.locator("#original-image").is_visible() and page.locator("#revision-image").is_visible()
    # The panel swaps in when the render is stored; the image itself loads a moment later.
    page.wait_for_function("document.getElementById('revision-image').complete"
                           " && document.getElementById('revision-image').naturalWidth > 0")
    assert page.evaluate("document.getElementById('revision-image').naturalWidth") == 128

    page.click("#score-button")
    page.wait_for_selector("#revision-panel[data-status=done]", timeout=60_000)
    revision = Revision.objects.get()
    assert revision.reward is not None and revision.created_by.username == "ada"
    summary = page.inner_text("#reward-summary")
    assert f"{revision.reward:.3f}" in summary and "0.550" in summary
    delta = revision.reward - 0.55
    assert f"{'+' if delta > 0 else ''}{delta:.3f}" in page.inner_text("#parts tr.part-reward")
    for part in ("judge", "quality"):
        cells = page.locator(f"#parts tr.part-{part} td").all_inner_texts()
        assert cells[2] == f"{revision.parts[part]:.3f}"  # weight, original, revision, Δ, Δ weighted
    assert page.locator("#revisions tr[data-revision]").count() == 1
    assert "Rev. " in page.inner_text("#references")  # the revision's verdicts beside the original's
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=SCREENSHOT.replace(".png", "-dark.png"), full_page=True)
        page.emulate_media(color_scheme="light")

    # Compare the original with the revision from the list.
    page.click("#compare-button")
    page.wait_for_selector("#compare-parts tr.part-reward")
    assert "Revision" in page.inner_text("#compare")

    # A reload (or a crashed tab) gives the draft back from localStorage.
    edited = GOOD + "\n// a note kept only in the draft\n"
    replace_code(page, edited)
    page.wait_for_function("document.getElementById('draft-status').textContent.includes('Draft kept')")
    page.reload()
    page.wait_for_selector(".cm-editor .cm-content")
    page.wait_for_selector("#draft-banner:not([hidden])")
    assert editor_text(page) == rollout.code
    assert page.locator("#revision-panel[data-status=done]").count() == 1  # the last render is still shown
    page.click("#draft-restore")
    assert editor_text(page) == edited
    assert page.locator("#draft-banner").is_hidden()


def test_it_shows_a_clear_timeout_for_an_endless_loop_while_the_page_stays_responsive(
    signed_in_page, live_server, start_worker, worker_env, rollout
):
    worker_env["RENDER_TIMEOUT_S"] = "5"
    start_worker("render")
    page = signed_in_page
    open_editor(page, live_server, rollout)

    # An empty editor is refused with a message, and nothing is queued.
    page.click(".cm-content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.click("#render-button")
    page.wait_for_selector("#editor-message:not([hidden])")
    assert "The code is empty" in page.inner_text("#editor-message")
    assert not Revision.objects.exists()

    replace_code(page, LOOP_FOREVER)
    page.wait_for_selector("#lint-status[data-state=clean]")  # the gate cannot see an endless loop
    page.keyboard.press("Control+Enter")  # the editor's shortcut for Render
    page.wait_for_selector("#revision-panel[data-status=rendering]")
    assert page.locator("#editor-message").is_hidden()  # the refusal is gone with the next render

    # While the sketch loops in the worker's browser, this page goes on working.
    started = time.monotonic()
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\n// still typing")
    assert editor_text(page).endswith("// still typing")
    page.click(".reply summary")
    assert page.locator("#reply-text").is_visible()
    assert page.locator("#revision-panel[data-status=rendering]").count() == 1
    assert time.monotonic() - started < 10  # a hung page would never get here

    page.wait_for_selector("#revision-panel[data-status=done]", timeout=60_000)
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Timed out.")
    assert "longer than 5 s" in verdict and "render_timeout" in verdict and "0" in verdict
    assert page.locator(".noimage.timeout").is_visible()
    assert "timed out" in page.inner_text("#revisions")
    assert editor_text(page).endswith("// still typing")  # the edit made meanwhile is intact
