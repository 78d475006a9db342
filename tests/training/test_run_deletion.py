"""Deleting a run: what the confirmation lists, and what the service removes, keeps or refuses."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from paintapp.lib.storage import store_content_addressed
from tests.curation.factories import make_pool, png_bytes
from tests.training.factories import make_revision, make_run
from training import services
from training.models import Revision, Rollout, Run, RunExport, Step

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="deletion")


@pytest.fixture
def run(pool, tmp_path):
    """Two steps of four rollouts, an export zip, two checkpoints and an adapter on disk."""
    run = make_run(pool, steps=2, generations=4, rewards=[[0.4, 0.5, 0.0, None], [0.6, 0.7, 0.3, 0.2]])
    first = Rollout.objects.get(run=run, step=1, position=0)
    # One painting of this run only: deleting the run frees it.
    first.png = store_content_addressed(png_bytes((200, 60, 20), size=40), folder="renders")
    first.save(update_fields=["png"])
    out = tmp_path / "runs" / str(run.id)
    for name, size in (("checkpoint-1/adapter_model.safetensors", 3000), ("checkpoint-2/adapter_model.safetensors", 3000),
                       ("adapter/adapter_model.safetensors", 4192)):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b"w" * size)
    zip_name = default_storage.save("exports/run.zip", ContentFile(b"z" * 2048))
    RunExport.objects.create(run=run, status="ready", file=zip_name, size_bytes=2048)
    Run.objects.filter(id=run.id).update(output_dir=str(out))
    run.refresh_from_db()
    return run


@pytest.fixture
def revisions(run, curator, django_user_model):
    bob = django_user_model.objects.create_user(username="bob", password="x")
    rollouts = list(Rollout.objects.filter(run=run, passed=True)[:2])
    return [
        make_revision(rollouts[0], curator, color=(10, 20, 30)),
        make_revision(rollouts[1], curator, color=(10, 20, 40)),
        make_revision(rollouts[0], bob, color=(10, 20, 50)),
    ]


def page_text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_confirmation_lists_steps_rollouts_paintings_exports_files_and_whose_revisions_go(
    client, curator, run, revisions
):
    client.force_login(curator)
    response = client.get(reverse("training:delete", args=[run.id]))
    text = page_text(response)
    assert "2 step rows" in text
    # 7 rollouts have a painting (a failed gate has none), and each revision has its own.
    assert re.search(r"8 rollouts with 10 paintings \([\d.]+ KB\)", text), text
    assert "1 export (2.0 KB)" in text
    assert "10.0 KB on disk: 2 checkpoints and the trained adapter" in text
    assert "3 revisions by curators : ada (2), bob (1)" in text
    assert 'name="revisions" value="3" required' in response.content.decode()
    assert f'action="{reverse("training:export", args=[run.id])}"' in response.content.decode()


def share_a_painting(run: Run, pool) -> str:
    """Another run whose rollout painted the same picture (content-addressed: one file)."""
    other = make_run(pool, steps=1, generations=2, name="a duplicate")
    shared = Rollout.objects.filter(run=run).exclude(png="").order_by("-step").first().png
    Rollout.objects.filter(run=other, position=0).update(png=shared)
    return shared


def test_the_confirmation_says_which_paintings_another_run_shares_and_that_there_are_no_revisions(client, curator, run, pool):
    share_a_painting(run, pool)
    client.force_login(curator)
    text = page_text(client.get(reverse("training:delete", args=[run.id])))
    assert "8 rollouts with 6 paintings" in text and "; 1 painting another run also uses stays" in text
    assert "no revisions by curators" in text


def test_a_run_with_revisions_is_not_deleted_until_the_curator_confirms_exactly_those(run, revisions):
    for seen in (0, 2):
        with pytest.raises(services.LaunchError, match=r"3 revisions by curators \(ada \(2\), bob \(1\)\), not the"):
            services.run_delete(run=run, revisions_seen=seen)
    assert Run.objects.filter(id=run.id).exists() and Revision.objects.count() == 3
    deletion = services.run_delete(run=run, revisions_seen=3)
    assert deletion.revisions == 3
    assert not Run.objects.exists() and not Revision.objects.exists() and not Step.objects.exists()


def test_deleting_removes_the_runs_own_paintings_exports_and_folder_and_keeps_shared_paintings(
    run, pool, revisions, django_capture_on_commit_callbacks
):
    shared = share_a_painting(run, pool)
    own = Rollout.objects.get(run=run, step=1, position=0).png
    revision_pngs = [r.png for r in revisions]
    with django_capture_on_commit_callbacks(execute=True):
        deletion = services.run_delete(run=run, revisions_seen=3)
    assert own in deletion.paintings and set(revision_pngs) <= set(deletion.paintings)
    assert shared not in deletion.paintings and len(deletion.paintings) == 6 + 3
    assert not any(default_storage.exists(name) for name in deletion.paintings)
    assert default_storage.exists(shared)
    assert not default_storage.exists("exports/run.zip") and not RunExport.objects.exists()
    assert deletion.output_dir and not Path(deletion.output_dir).exists()


def test_an_active_run_is_neither_deleted_nor_offered_for_deletion(client, curator, run):
    Run.objects.filter(id=run.id).update(status="running")
    run.refresh_from_db()
    with pytest.raises(services.LaunchError, match="stop the run"):
        services.run_delete(run=run)
    client.force_login(curator)
    response = client.get(reverse("training:delete", args=[run.id]))
    assert "stop it before deleting it" in page_text(response) and 'id="delete-form"' not in response.content.decode()


def test_the_page_refuses_a_post_without_the_revisions_box_and_deletes_with_it(client, curator, run, revisions):
    client.force_login(curator)
    url = reverse("training:delete", args=[run.id])
    refused = client.post(url, follow=True)
    assert "3 revisions by curators" in page_text(refused) and Run.objects.filter(id=run.id).exists()
    deleted = client.post(url, {"revisions": "3"})
    assert deleted.status_code == 302 and deleted.url == reverse("training:runs")
    assert not Run.objects.filter(id=run.id).exists() and not Revision.objects.exists()
