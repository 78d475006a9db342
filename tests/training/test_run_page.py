"""The run page's thirds table and run comparison, the metrics endpoint, and the export (built by a
task, then downloaded)."""
from __future__ import annotations

import io
import re
import zipfile

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import make_run
from training.models import RunExport
from training.tasks import build_run_export

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    return make_pool(curator)


def test_the_thirds_table_shows_the_published_numbers(client, curator, pool):
    # 6 steps, 2 per third: means 0.1, 0.2 | 0.3, 0.4 | 0.5, 0.6 (two equal rollouts each).
    run = make_run(pool, steps=6, generations=2, rewards=[[r, r] for r in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)])
    client.force_login(curator)
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    row = re.search(rf'<tr data-thirds-run="{run.id}">(.*?)</tr>', html, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[1:5] == ["6", "0.150", "0.350", "0.550"]
    assert cells[5] == "0.400"  # last - first
    assert cells[6].startswith("0.1000")  # a perfectly straight line: slope 0.1 per step
    assert cells[8:10] == ["4", "0"]  # rollouts under 0.3: all four of the first third, none of the last


def test_a_run_with_too_few_steps_says_why_it_has_no_thirds(client, curator, pool):
    run = make_run(pool, steps=2)
    client.force_login(curator)
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    row = re.search(rf'<tr data-thirds-run="{run.id}">(.*?)</tr>', html, re.S).group(1)
    assert "3" in row and "step" in row and "0.150" not in row


def test_it_compares_the_chosen_runs_and_ignores_unknown_ones(client, curator, pool):
    base, other = make_run(pool, steps=4, name="base"), make_run(pool, steps=5, name="other", seed=3)
    client.force_login(curator)
    response = client.get(reverse("training:run", args=[base.id]),
                          {"compare": [str(other.id), "999999", "nonsense", str(base.id)]})
    assert response.status_code == 200
    assert [r.id for r in response.context["compared"]] == [other.id]
    html = response.content.decode()
    assert f'data-thirds-run="{base.id}"' in html and f'data-thirds-run="{other.id}"' in html
    sources = re.search(r'<script id="compare-runs" type="application/json">(.*?)</script>', html, re.S).group(1)
    assert reverse("training:metrics", args=[other.id]) in sources


def test_the_metrics_endpoint_returns_only_the_steps_after_the_one_asked(client, curator, pool):
    run = make_run(pool, steps=5)
    client.force_login(curator)
    data = client.get(reverse("training:metrics", args=[run.id]), {"after": 3}).json()
    assert [row[0] for row in data["steps"]] == [4, 5]
    reward = data["keys"].index("reward") + 1
    assert data["steps"][0][reward] == pytest.approx(run.steps.get(step=4).reward_mean)
    assert client.get(reverse("training:metrics", args=[run.id]), {"after": "x"}).json()["steps"][0][0] == 1


def test_the_export_button_asks_a_worker_for_the_zip_and_the_page_then_offers_it(client, curator, pool):
    run = make_run(pool, steps=3, generations=2)
    client.force_login(curator)
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    page = reverse("training:export", args=[run.id])
    assert f'<form method="post" action="{page}">' in html
    assert client.post(page)["Location"] == page
    export = RunExport.objects.get(run=run)
    assert "Waiting for a score worker" in client.get(page).content.decode()

    assert build_run_export(export.id)["status"] == "ready"  # the task, run in-process here
    export.refresh_from_db()
    assert (export.done, export.total) == (6, 6)
    download = reverse("training:export-download", args=[run.id, export.id])
    html = client.get(page).content.decode()
    assert f'href="{download}"' in html and "Build again" in html  # a run may have more to export later

    response = client.get(download)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert f"run{run.id}" in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = archive.namelist()
    assert any(n.endswith("steps.csv") for n in names) and any(re.search(r"data/train-.*\.parquet$", n) for n in names)
    steps_csv = archive.read(next(n for n in names if n.endswith("steps.csv"))).decode()
    assert len(steps_csv.strip().splitlines()) == 1 + 3


def test_an_export_asked_for_again_is_a_new_snapshot_once_the_last_is_built(client, curator, pool):
    run = make_run(pool, steps=2, generations=2)
    client.force_login(curator)
    page = reverse("training:export", args=[run.id])
    client.post(page)
    client.post(page)  # while the first is queued: the same one
    assert RunExport.objects.filter(run=run).count() == 1
    build_run_export(RunExport.objects.get().id)
    client.post(page)
    assert list(RunExport.objects.filter(run=run).values_list("status", flat=True)) == ["queued", "ready"]


def test_a_poll_brings_the_header_and_out_of_band_the_steps_below_the_curves(client, curator, pool):
    run = make_run(pool, steps=2, status="running")
    client.force_login(curator)
    html = client.get(reverse("training:run", args=[run.id]), headers={"HX-Request": "true"}).content.decode()
    assert html.index('id="run-live"') < html.index('id="run-details" hx-swap-oob="true"')
    assert 'id="steps-table"' in html and 'id="curves"' not in html
    full = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert full.index('id="run-live"') < full.index('id="curves"') < full.index('id="run-details">')


def test_the_time_left_is_unknown_before_a_timed_step_and_none_once_the_run_ended(pool):
    from training.models import Run, Step
    from training.selectors import time_left_s

    run = make_run(pool, steps=3, status="running")
    Run.objects.filter(pk=run.pk).update(hyperparameters={**run.hyperparameters, "max_steps": 5})
    run.refresh_from_db()
    assert time_left_s(run) == pytest.approx(40.0)  # two steps left at the last steps' 20 s
    Step.objects.filter(run=run).update(metrics={})  # steps written before step times were kept
    assert time_left_s(run) is None
    assert time_left_s(make_run(pool, steps=3, status="stopped")) is None
