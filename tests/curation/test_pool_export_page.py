"""The pool's export page: asking for the zip queues a build, the page follows it (htmx polling,
or a refreshing page without JavaScript) and then offers the stored zip for download.

The build task runs in-process here (called directly); tests/paintapp/test_exports_on_a_worker.py
runs it on a real score worker."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from curation.models import PoolExport
from curation.tasks import build_pool_export
from tests.curation.factories import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="roses", love=3, okay=3, reject=0, eval_share=0.2, subject="a rose {i}")


def page_url(pool) -> str:
    return reverse("curation:pool-export", args=[pool.name, pool.version])


def test_the_pool_page_exports_with_a_plain_form_that_lands_on_the_export_page(signed_in, pool):
    html = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    assert f'<form method="post" action="{page_url(pool)}">' in html
    response = signed_in.post(page_url(pool))
    assert response.status_code == 302 and response["Location"] == page_url(pool)
    export = PoolExport.objects.get(pool=pool)
    assert export.status == "queued"


def test_a_queued_export_waits_for_a_worker_and_the_page_keeps_refreshing(signed_in, pool):
    signed_in.post(page_url(pool))
    html = signed_in.get(page_url(pool)).content.decode()
    assert "Waiting for a score worker" in html
    assert 'hx-trigger="every 1s"' in html  # htmx polls the status
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in html  # and without JavaScript
    assert "Build the export" not in html and "Build again" not in html


def test_a_building_export_shows_its_progress(signed_in, pool):
    signed_in.post(page_url(pool))
    PoolExport.objects.filter(pool=pool).update(status="building", done=3, total=6, current="images/ab.png")
    fragment = signed_in.get(page_url(pool), headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="export-status"')
    assert "<html" not in fragment
    assert '<progress max="6" value="3">' in fragment and "<b>3</b> / 6 images · 50%" in fragment
    assert "Last written: images/ab.png" in fragment and 'hx-trigger="every 1s"' in fragment


def test_a_built_export_is_offered_and_downloads_as_the_whole_zip(signed_in, pool):
    signed_in.post(page_url(pool))
    export = PoolExport.objects.get(pool=pool)
    result = build_pool_export(export.id)
    export.refresh_from_db()
    assert result == {"export_id": export.id, "status": "ready", "size_bytes": export.size_bytes}
    assert (export.done, export.total, export.file_name) == (6, 6, "roses-v1.zip")

    fragment = signed_in.get(page_url(pool), headers={"HX-Request": "true"}).content.decode()
    download = reverse("curation:pool-export-download", args=[pool.name, pool.version, export.id])
    assert f'href="{download}"' in fragment and "hx-trigger" not in fragment  # polling stops
    assert "Build again" not in fragment  # a frozen pool's export stays true

    response = signed_in.get(download)
    assert response["Content-Disposition"] == 'attachment; filename="roses-v1.zip"'
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = set(archive.namelist())
    assert {"metadata.jsonl", "pool.parquet", "pool.json", "README.md"} <= names
    shas = sorted(pool.members.values_list("reference__sha256", flat=True))
    assert sorted(n for n in names if n.startswith("images/")) == [f"images/{sha}.png" for sha in shas]
    assert json.loads(archive.read("pool.json"))["label"] == "roses:v1"


def test_asking_again_for_a_built_pool_export_reuses_it(signed_in, pool):
    signed_in.post(page_url(pool))
    build_pool_export(PoolExport.objects.get().id)
    signed_in.post(page_url(pool))
    assert PoolExport.objects.count() == 1


def test_a_failed_build_says_why_and_offers_to_build_again(signed_in, pool, settings):
    signed_in.post(page_url(pool))
    victim = pool.members.first().reference
    (Path(settings.MEDIA_ROOT) / victim.image).write_bytes(b"not the stored image")
    export = PoolExport.objects.get()
    build_pool_export(export.id)
    html = signed_in.get(page_url(pool)).content.decode()
    assert "does not match its sha256; export stopped" in html and "Build again" in html
    download = reverse("curation:pool-export-download", args=[pool.name, pool.version, export.id])
    assert signed_in.get(download).status_code == 404
    signed_in.post(page_url(pool))
    assert PoolExport.objects.filter(status="queued").count() == 1  # a new build was asked for


def test_an_htmx_request_gets_only_the_new_status(signed_in, pool):
    fragment = signed_in.post(page_url(pool), headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="export-status"')
    assert 'data-status="queued"' in fragment
