"""The System page shows live workers per queue, and a dead one within seconds."""
from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db(transaction=True)


def queue_card(page, name):
    return page.locator(f"[data-queue={name}]")


@pytest.mark.slow
@pytest.mark.browser
def test_it_turns_a_killed_workers_queue_red_within_ten_seconds_and_green_again(
    signed_in_page, live_server, start_worker, tmp_path
):
    start_worker("render")
    start_worker("score")
    train = start_worker("train")
    page = signed_in_page
    page.goto(live_server.url + reverse("system:index"))
    for name in ("train", "render", "score"):
        assert queue_card(page, name).get_attribute("data-alive") == "true"

    train.kill()
    page.wait_for_selector("[data-queue=train][data-alive=false]", timeout=10_000)
    assert queue_card(page, "render").get_attribute("data-alive") == "true"
    page.screenshot(path=str(tmp_path / "system-dead-train.png"), full_page=True)

    start_worker("train")
    page.wait_for_selector("[data-queue=train][data-alive=true]", timeout=10_000)


def test_it_lists_each_worker_with_its_queues_and_chromium(client, curator, start_worker):
    worker = start_worker("render", "score")
    client.force_login(curator)
    response = client.get(reverse("system:index"))
    html = response.content.decode()
    assert response.status_code == 200
    assert worker.hostname in html
    assert "Chromium" in html
    status = response.context["status"]
    by_name = {q.name: q for q in status.queues}
    assert by_name["render"].alive and by_name["score"].alive
    assert not by_name["train"].alive
    assert status.liveness_source == "inspect"


def test_it_counts_waiting_tasks_per_queue(client, curator):
    from paintapp.celery import app

    # No worker listens on `train` here, so the message stays queued and is counted.
    app.send_task("training.tasks.run_training", args=[0], queue="train")
    client.force_login(curator)
    response = client.get(reverse("system:index"))
    train = next(q for q in response.context["status"].queues if q.name == "train")
    assert train.depth >= 1
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("train")


def test_it_serves_only_the_status_fragment_to_htmx_polls(client, curator):
    client.force_login(curator)
    response = client.get(reverse("system:index"), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert 'id="system-status"' in html
    assert "<html" not in html


@pytest.mark.slow
@pytest.mark.browser
def test_it_lists_a_running_task_with_its_age_and_keeps_opened_details_open_across_refreshes(
    no_worker, signed_in_page, live_server, start_worker, worker_env
):
    from painting.tasks import render_sketch
    from tests.training.factories import LOOP_FOREVER

    worker_env["RENDER_TIMEOUT_S"] = "30"  # the looping sketch holds the render worker this long at most
    worker = start_worker("render")
    page = signed_in_page
    page.goto(live_server.url + reverse("system:index"))
    details = page.locator("[data-queue=render] details.worker")
    details.locator("summary").click()
    render_sketch.apply_async(args=[LOOP_FOREVER], queue="render")

    running = page.locator(f"[data-running='{worker.hostname}'] li")
    running.first.wait_for(timeout=15_000)
    assert "render_sketch" in running.first.inner_text()
    page.wait_for_function(
        f"/running ([2-9]|1[0-9]) s/.test(document.querySelector(\"[data-running='{worker.hostname}'] li\").textContent)",
        timeout=15_000,
    )  # its age grows with each refresh
    assert page.locator("[data-queue=render] [data-running-count]").inner_text() == "1"
    assert details.evaluate("d => d.open") is True  # still open after several 2 s refreshes
    # Killed rather than waited for (a warm shutdown lets the loop run out); `no_worker` then
    # empties the broker so the unacknowledged render never reaches a later test's worker.
    worker.kill()
