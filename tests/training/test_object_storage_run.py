"""A run whose studio keeps media in object storage (PAINTAPP_STORAGE=s3, a real S3-compatible
server): its paintings and checkpoints are written to the bucket by the workers, read back by
the studio, and the run resumes on a machine that has none of its files."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.support.runs import FAST, wait_until_ended
from training import services
from training.models import Rollout, Run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_runs_paintings_and_checkpoints_live_in_the_bucket_and_it_resumes_from_there(
        s3_storage, start_worker, worker_env, curator, painter_model, client):
    worker_env.update(s3_storage.environment(), RENDER_TIMEOUT_S="20")
    for queue in ("train", "render", "score"):
        start_worker(queue)
    # The pool's references go to the bucket as well: this process's storage is the server's.
    pool = make_pool(curator, name="s3")
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=painter_model,
                              arguments=FAST | {"max_steps": 2, "max_completion_length": 1024})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error

    painted = [r for r in Rollout.objects.filter(run=run) if r.png]
    assert painted, "no rollout was rendered"
    stored = set(s3_storage.keys())
    assert {r.png for r in painted} <= stored  # the render workers wrote them to the bucket
    assert not (Path(worker_env["MEDIA_ROOT"]) / painted[0].png).exists()  # and not to a local folder
    assert {f"checkpoints/run-{run.id}/checkpoint-{n}/complete.json" for n in (1, 2)} <= stored
    client.force_login(curator)
    image = client.get(reverse("training:rollout-image", args=[run.id, painted[0].id]))
    assert image.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"

    # Its GPU box is lost (the reaper marks such a run interrupted) and a new one has none of the
    # run's files; Resume, for one more step, finds the checkpoint in the bucket.
    shutil.rmtree(run.output_dir)
    Run.objects.filter(id=run.id).update(status="interrupted", hyperparameters={**run.hyperparameters, "max_steps": 3})
    run.refresh_from_db()
    services.run_resume(run=run)
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert run.resumed_from.endswith("checkpoint-2") and run.steps_done == 3
    assert f"checkpoints/run-{run.id}/checkpoint-3/complete.json" in s3_storage.keys()
