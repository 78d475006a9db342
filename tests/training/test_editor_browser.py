"""The rollout editor in real Chromium against the live server, with real render and score workers."""
from __future__ import annotations

import io
import os
import time

import pytest
from django.urls import reverse
from PIL import Image

from tests.curation.factories import make_pool
from tests.training.factories import GOOD, LOOP_FOREVER, make_run
from training.models import Revision, Rollout

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Set to a path (e.g. /tmp/editor.png) to look at the editor after a scored revision, light and dark.
SCREENSHOT = os.environ.get("PAINTAPP_EDITOR_SCREENSHOT", "")
# Passes the gate; the render fails it (line 7 of the sketch).
THROWS = GOOD.replace("brush.scaleBrushes(3);", 'brush.scaleBrushes(3);\n  throw new Error("no paint today");')


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

    # Code the gate passes but the render fails is labelled a render failure, never a gate one.
    replace_code(page, THROWS)
    page.wait_for_selector("#lint-status[data-state=clean]")
    page.click("#render-button")
    page.wait_for_selector("#revision-panel[data-status=done]", timeout=60_000)
    assert page.inner_text("#revision-status") == "Render failed"
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Render failed — reward 0 (blank_canvas, render_error)") and "passed the gate" in verdict
    assert "7:9 Error: no paint today" in verdict
    gate_row = page.locator("#parts tr.part-gate").all_inner_texts()[0]
    assert gate_row.startswith("gate + render") and "0.000 render failed" in gate_row and "gate failed" not in gate_row
    assert "render failed" in page.inner_text("#revisions")

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
    revision = Revision.objects.get(code=GOOD)
    assert revision.reward is not None and revision.created_by.username == "ada"
    summary = page.inner_text("#reward-summary")
    assert f"{revision.reward:.3f}" in summary and "0.550" in summary
    delta = revision.reward - 0.55
    assert f"{'+' if delta > 0 else ''}{delta:.3f}" in page.inner_text("#parts tr.part-reward")
    for part in ("judge", "quality"):
        cells = page.locator(f"#parts tr.part-{part} td").all_inner_texts()
        assert cells[2] == f"{revision.parts[part]:.3f}"  # weight, original, revision, Δ, Δ weighted
    assert page.locator("#revisions tr[data-revision]").count() == 2
    assert "Rev. " in page.inner_text("#references")  # the revision's verdicts beside the original's
    page.wait_for_selector("#preview[data-state=done]")  # the preview of the same code, beside it
    if SCREENSHOT:
        # The factory's original is a stand-in image; the revision's code is the rollout's own,
        # rendered with its seed and size, so its painting is what the original looks like.
        Rollout.objects.filter(pk=rollout.pk).update(png=revision.png)
        page.route("**/*.png", lambda route: route.continue_())  # routing turns the page's cache off
        page.reload()
        page.wait_for_selector("#preview[data-state=done]")
        page.wait_for_function("[...document.images].every((image) => image.complete)")
        page.screenshot(path=SCREENSHOT)
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=SCREENSHOT.replace(".png", "-dark.png"))
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


def test_an_endless_loop_is_stopped_at_the_interactive_deadline_and_cancel_stops_a_render(
    signed_in_page, live_server, start_worker, worker_env, rollout, settings
):
    worker_env["RENDER_TIMEOUT_S"] = "60"  # training's watchdog: the editor's deadline comes first
    settings.EDITOR_PREVIEW_BUDGET_S = 1  # the page's own preview of the loop gives up quickly
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

    # A first render warms the worker's browser: the deadline is the task's time limit, so it
    # counts a cold worker's Chromium launch (seconds on a busy test machine) too.
    settings.EDITOR_RENDER_DEADLINE_S = 60
    replace_code(page, GOOD)
    page.keyboard.press("Control+Enter")  # the editor's shortcut for Render
    page.wait_for_selector("#revision-panel[data-status=rendered]", timeout=30_000)
    assert page.locator("#editor-message").is_hidden()  # the refusal is gone with the next render

    settings.EDITOR_RENDER_DEADLINE_S = 4
    replace_code(page, LOOP_FOREVER)
    page.wait_for_selector("#lint-status[data-state=clean]")  # the gate cannot see an endless loop
    started = time.monotonic()
    page.click("#render-button")
    page.wait_for_selector("#revision-panel[data-status=rendering]")
    assert "(stopped at 4 s)" in page.inner_text("#progress-text")

    # While the sketch loops in the worker's browser, this page goes on working.
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\n// still typing")
    assert editor_text(page).endswith("// still typing")
    page.click(".reply summary")
    assert page.locator("#reply-text").is_visible()
    assert page.locator("#revision-panel[data-status=rendering]").count() == 1

    page.wait_for_selector("#revision-panel[data-status=deadline]", timeout=30_000)
    # The deadline, a poll and a page swap, with slack for a busy machine: far from training's 60 s.
    assert time.monotonic() - started < 4 + 6
    assert page.inner_text("#revision-status") == "Past the deadline"
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Stopped at the 4 s deadline — no reward.")
    assert "still running after 4 s" in verdict and "Training gives a sketch 60 s" in verdict
    assert page.locator("#parts tr.part-gate td").all_inner_texts()[2] == "—"  # weight, A, B: no 0, no blame
    stopped = Revision.objects.get(code__startswith=LOOP_FOREVER)
    assert stopped.status == Revision.Status.DEADLINE and stopped.reward is None and stopped.parts == {}
    assert "past the deadline" in page.inner_text("#revisions")
    assert editor_text(page).endswith("// still typing")  # the edit made meanwhile is intact

    # With a long deadline, Cancel stops the render at once and frees the worker for the next one.
    settings.EDITOR_RENDER_DEADLINE_S = 60
    page.click("#render-button")
    page.wait_for_function("document.getElementById('progress-text')?.textContent.includes('Rendering on the server')",
                           timeout=30_000)
    cancelled_at = time.monotonic()
    page.click("#cancel-button")
    page.wait_for_selector("#revision-panel[data-status=cancelled]")
    assert time.monotonic() - cancelled_at < 3
    assert page.inner_text("#verdict").startswith("Cancelled — no reward. Cancelled by ada after")
    cancelled = Revision.objects.get(status=Revision.Status.CANCELLED)
    assert cancelled.reward is None and cancelled.finished_at is not None

    replace_code(page, GOOD)
    page.click("#render-button")
    page.wait_for_selector("#revision-panel[data-status=rendered]", timeout=30_000)
    assert time.monotonic() - cancelled_at < 30  # the looping render was not left to run out its 60 s


def test_the_preview_repaints_in_the_browser_without_asking_the_server_and_drops_an_endless_loop(
    signed_in_page, live_server, rollout, settings
):
    settings.EDITOR_PREVIEW_BUDGET_S = 3  # the hibiscus paints in ~1 s here, more on a busy machine
    page = signed_in_page
    open_editor(page, live_server, rollout)
    page.wait_for_selector("#preview[data-state=done]")  # the rollout's own code, painted on load
    assert page.inner_text("#preview figcaption").startswith("Preview · this browser · not scored")
    frame = page.locator("#preview-box iframe")
    assert frame.get_attribute("sandbox") == "allow-scripts"  # no allow-same-origin: an origin of its own
    assert "connect-src 'none'" in frame.get_attribute("srcdoc")
    inside = next(f for f in page.frames if f.url == "about:srcdoc")
    assert inside.evaluate("origin") == "null"  # not the studio's: no cookies, no DOM of the page
    reach = """url => new Promise((resolve) => {
        document.addEventListener("securitypolicyviolation", (e) => resolve(e.effectiveDirective), { once: true });
        fetch(url).then(() => resolve("fetched"), () => {});
    })"""
    assert inside.evaluate(reach, live_server.url + reverse("training:runs")) == "connect-src"  # refused unsent
    painted = int(page.get_attribute("#preview", "data-generation"))

    # An edit repaints the preview, and the only request to the studio is the gate's lint.
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    replace_code(page, GOOD.replace('background("#fbf7ef")', 'background("#1d4ed8")'))
    page.wait_for_function(f"+document.getElementById('preview').dataset.generation > {painted}"
                           " && document.getElementById('preview').dataset.state === 'done'")
    lint = live_server.url + reverse("training:sketch-lint")
    assert [url for url in asked if url.startswith(live_server.url) and url != lint] == []
    shot = Image.open(io.BytesIO(page.locator("#preview-box iframe").screenshot())).convert("RGB")
    red, green, blue = shot.getpixel((shot.width - 4, shot.height - 4))  # the new background
    assert blue > 150 and red < 90 and green < 120, (red, green, blue)

    # A runtime error is shown with its line, as the server would report it.
    replace_code(page, THROWS)
    page.wait_for_selector("#preview[data-state=error]")
    assert page.inner_text("#preview-status") == "Preview: the sketch failed — Error: no paint today at 7:9"

    # An endless loop runs in a frame of its own: this page stays responsive, and the frame
    # is thrown away after the budget.
    replace_code(page, LOOP_FOREVER)
    page.wait_for_selector("#preview[data-state=running]")
    started = time.monotonic()
    page.keyboard.press("Control+End")
    page.keyboard.type("\n// still typing")
    assert editor_text(page).endswith("// still typing") and time.monotonic() - started < 3
    page.wait_for_selector("#preview[data-state=stopped]")
    assert page.inner_text("#preview-status").startswith("Preview stopped after 3 s: the sketch was still running")
    assert page.locator("#preview-box iframe").count() == 0

    replace_code(page, GOOD)
    page.wait_for_selector("#preview[data-state=done]")  # a fresh frame paints again


def test_a_blank_painting_cannot_be_promoted_and_the_page_says_why(signed_in_page, live_server, rollout):
    rollout.passed, rollout.violations, rollout.reward = False, ["blank_canvas"], 0.0
    rollout.parts = {**rollout.parts, "gate": 0.0, "judge": None, "quality": None}
    rollout.save(update_fields=["passed", "violations", "reward", "parts"])
    page = signed_in_page
    open_editor(page, live_server, rollout)
    assert page.inner_text("#original-verdict") == "blank painting: blank_canvas"
    assert page.locator("#promote-button").is_disabled()
    assert "This painting is blank" in page.inner_text("#promote-refusal")
    assert page.locator("#parts tr.part-gate td").all_inner_texts()[1] == "0.000 blank painting"

    # A post made anyway (an old tab, a script) is refused with the same message.
    page.evaluate("""url => {
        const form = Object.assign(document.createElement("form"), { method: "post", action: url });
        form.append(document.querySelector("[name=csrfmiddlewaretoken]").cloneNode());
        document.body.append(form);
        form.submit();
    }""", reverse("training:rollout-promote", args=[rollout.run_id, rollout.id]))
    page.wait_for_selector("#editor-message:not([hidden])")
    assert "This painting is blank (blank_canvas)" in page.inner_text("#editor-message")


def test_asking_the_model_to_revise_shows_it_writing_then_its_painting_beside_the_original(
    signed_in_page, live_server, start_worker, worker_env, rollout, painter_model, screenshot
):
    worker_env["RENDER_TIMEOUT_S"] = "10"
    start_worker("train")
    start_worker("render")
    run = rollout.run
    run.base_model = painter_model  # no adapter saved: the base model alone writes, and the page says so
    run.hyperparameters["temperature"] = 0.3  # sampled with the run's settings: a steadier sketch to render
    run.save(update_fields=["base_model", "hyperparameters"])
    page = signed_in_page
    open_editor(page, live_server, rollout)

    page.click("#ask-model-button")
    page.wait_for_selector("#revision-panel[data-status=writing]")
    assert "the model is writing…" in page.inner_text("#revision-figure")
    assert "by the model (asked by ada) · revising the original" in page.inner_text("#revision-author")
    page.wait_for_selector("#revision-panel:not([data-status=writing])", timeout=120_000)
    page.wait_for_selector("#revision-panel[data-status=rendered], #revision-panel[data-status=done]", timeout=60_000)
    revision = Revision.objects.get(author=Revision.Author.MODEL)
    assert revision.reply and revision.parent is None
    assert page.inner_text("#model-used") == "Written by the base model alone: the run had no saved adapter or checkpoint yet."
    row = page.inner_text(f"#revisions tr[data-revision='{revision.id}']")
    assert "the model (asked by ada)" in row and "writing" not in row  # the list follows the panel
    if revision.png:  # the painter's sketch rendered: its painting beside the original
        page.wait_for_function("document.getElementById('revision-image').complete"
                               " && document.getElementById('revision-image').naturalWidth > 0")
    page.click("#model-feedback summary")
    assert "The static check passed." in page.inner_text("#model-feedback")
    screenshot(page, "editor-model-revision")
