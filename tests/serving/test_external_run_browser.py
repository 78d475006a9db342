"""A run trained elsewhere, in a real browser: episodes played through `serve_env` by openenv's
client show on the run page (live curves, no trainer controls) and in the gallery."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from django.urls import reverse
from openenv import GenericEnvClient

from tests.serving.conftest import bearer
from tests.support.processes import run_coroutine
from training.models import Run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CORPUS = Path(__file__).resolve().parents[1] / "paintenv" / "corpus" / "good"
SKETCHES = [(CORPUS / f"{name}.js").read_text() for name in ("hibiscus", "iris", "poppy", "rose")]


def test_an_external_runs_page_draws_its_steps_and_its_gallery_shows_every_episode(
        start_worker, worker_env, serve, token, signed_in_page, live_server, screenshot):
    start_worker("render", concurrency=2)
    start_worker("score")
    server = serve()

    async def episode(seed: int, sketch: str) -> float | None:
        async with GenericEnvClient(base_url=server.url, headers=bearer(token), message_timeout_s=300) as env:
            await env.reset(seed=seed, run="qwen3-4b on a cluster")
            return (await env.step({"response": f"```js\n{sketch}```"})).reward

    async def groups():
        for seed in (101, 102, 103):  # three GRPO steps of a group of four
            await asyncio.gather(*(episode(seed, sketch) for sketch in SKETCHES))

    run_coroutine(groups())
    run = Run.objects.get()
    page = signed_in_page
    page.goto(live_server.url + reverse("training:run", args=[run.id]))
    header = page.locator("#run-live").inner_text()
    assert "Trained elsewhere" in header and "3 steps so far" in header
    assert "ada's trainer" in page.inner_text("#run-elsewhere")
    assert page.locator("#run-actions button", has_text="Stop").count() == 0
    assert page.locator("#run-actions button", has_text="Resume").count() == 0
    page.wait_for_selector("#curves[data-last-step='3']")
    assert page.locator("#chart-reward canvas").count() == 1
    screenshot(page, "external-run-page")

    page.goto(live_server.url + reverse("training:gallery", args=[run.id]))
    images = page.locator("img[src*='/rollouts/']")
    images.first.wait_for()
    assert images.count() == 12
    page.wait_for_function("[...document.querySelectorAll(\"img[src*='/rollouts/']\")].every(i => i.complete && i.naturalWidth > 0)")
    screenshot(page, "external-run-gallery")
