"""Export zips requested over HTTP are built by a real score worker, followed through the
page's polled status, and downloaded."""
from __future__ import annotations

import io
import json
import re
import time
import zipfile

import pytest
from django.urls import reverse

from paintapp.celery import app
from tests.curation.factories import make_pool
from tests.training.factories import make_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def follow(client, page: str, timeout: float = 120.0) -> tuple[list[str], str]:
    """Poll the page's status as htmx does; (the statuses seen in order, the last fragment)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fragment = client.get(page, headers={"HX-Request": "true"}).content.decode()
        status = re.search(r'data-status="(\w+)"', fragment).group(1)
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("ready", "failed"):
            return seen, fragment
        time.sleep(0.2)
    return seen, fragment


def download(client, fragment: str) -> zipfile.ZipFile:
    url = re.search(r'href="([^"]+\.zip)"', fragment).group(1)
    return zipfile.ZipFile(io.BytesIO(b"".join(client.get(url).streaming_content)))


def test_both_exports_go_to_the_score_queue():
    for task in ("curation.tasks.build_pool_export", "training.tasks.build_run_export"):
        assert app.amqp.router.route({}, task)["queue"].name == "score"


def test_a_pool_and_a_run_are_exported_by_a_score_worker_and_downloaded(start_worker, client, curator):
    pool = make_pool(curator, name="roses", love=2, okay=2, reject=0, eval_share=0.2, subject="a rose {i}")
    run = make_run(make_pool(curator), steps=3, generations=2)
    start_worker("score")
    client.force_login(curator)

    pool_page = reverse("curation:pool-export", args=[pool.name, pool.version])
    client.post(pool_page)
    seen, fragment = follow(client, pool_page)
    assert seen[-1] == "ready", fragment
    archive = download(client, fragment)
    assert json.loads(archive.read("pool.json"))["member_count"] == 4
    assert len([n for n in archive.namelist() if n.startswith("images/")]) == 4

    run_page = reverse("training:export", args=[run.id])
    client.post(run_page)
    seen, fragment = follow(client, run_page)
    assert seen[-1] == "ready", fragment
    assert "· 6 rollouts · built" in fragment
    archive = download(client, fragment)
    steps = next(n for n in archive.namelist() if n.endswith("/steps.csv"))
    assert len(archive.read(steps).decode().strip().splitlines()) == 1 + 3
