"""A trainer that dies never leaves its run stuck: real workers, real beat, the tiny model.

- the whole train worker killed mid-step: beat's reaper marks the run interrupted, and
  `resume_run --follow` on a new worker finishes it from its last intact checkpoint with
  exactly the requested steps;
- a trainer killed on every delivery (what the OOM killer does on each model load): the
  fourth delivery fails the run with the reason instead of loading the model again;
- the reaper runs in the embedded mode too (SQLite, kombu's SQLAlchemy broker).
"""
from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.support.runs import FAST, wait_for
from tests.support.workers import REPO, BeatProcess, CeleryProcess
from training import services
from training.models import Rollout, Run, Step

pytestmark = pytest.mark.slow
workers_share_the_database = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="faults")


@pytest.fixture
def fast_lifecycle(worker_env):
    """Beats every second, silent after 8 s, swept every 2 s (the defaults are 10, 60 and 20)."""
    worker_env.update(TRAINER_HEARTBEAT_S="1", TRAINER_STALE_S="8", TRAINER_REAP_EVERY_S="2", RENDER_TIMEOUT_S="20")
    return worker_env


def resume_run(run: Run, env: dict[str, str], *, follow: bool = True) -> subprocess.Popen:
    command = [sys.executable, "manage.py", "resume_run", str(run.id), *(["--follow", "--poll", "0.5"] if follow else [])]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@workers_share_the_database
def test_a_run_whose_train_worker_is_killed_mid_step_is_interrupted_then_resumes_to_exactly_its_steps(
    fast_lifecycle, start_worker, start_beat, pool, tiny_model
):
    train = start_worker("train")
    start_worker("render")
    start_worker("score")  # the reaper runs here: the train worker is the one that dies
    start_beat()
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model, arguments=FAST | {"max_steps": 3})

    def mid_step_three() -> bool:
        run.refresh_from_db()
        return run.checkpoint_step == 2 and Rollout.objects.filter(run=run, step=3).exists()

    wait_for(mid_step_three, 300, "step 3's rollouts after checkpoint 2", poll=0.1)
    train.kill()
    killed_at = time.monotonic()

    def interrupted() -> bool:
        run.refresh_from_db()
        return run.status == "interrupted"

    wait_for(interrupted, 120, "the reaper to mark the run interrupted")
    assert time.monotonic() - killed_at < 120
    assert run.error.startswith("The trainer stopped answering") and "Resume continues from step 2" in run.error
    assert run.checkpoint_step == 2
    assert list(Path(fast_lifecycle["PAINTAPP_VAR_DIR"]).glob("celerybeat-schedule*")), "beat keeps its schedule in VAR_DIR"

    # A checkpoint cut short on disk is never resumed from: the earlier intact one is.
    optimizer = Path(run.output_dir) / "checkpoint-2" / "optimizer.pt"
    with open(optimizer, "r+b") as handle:
        handle.truncate(optimizer.stat().st_size // 2)

    start_worker("train")
    follow = resume_run(run, fast_lifecycle)
    out, _ = follow.communicate(timeout=420)
    assert follow.returncode == 0, out
    assert f"Run {run.id} ended: finished" in out
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert run.resumed_from.endswith("checkpoint-1")
    assert (run.checkpoint_step, run.steps_done, run.attempts) == (3, 3, 1)
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2, 3]
    assert Counter(Rollout.objects.filter(run=run).values_list("step", flat=True)) == {1: 4, 2: 4, 3: 4}
    assert (Path(run.output_dir) / "adapter" / "adapter_model.safetensors").exists()


@workers_share_the_database
def test_a_trainer_killed_on_every_delivery_fails_the_run_on_the_fourth_with_the_reason(
    worker_env, start_worker, pool, tiny_model, client, curator, settings
):
    settings.LAUNCH_CHECKS_WORKERS = False  # its trainer dies before any step: nothing renders or scores
    train = start_worker("train")
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=tiny_model, arguments=FAST | {"max_steps": 50})

    def lose_three_deliveries() -> None:
        for attempt in (1, 2, 3):
            wait_for(lambda a=attempt: Run.objects.filter(id=run.id, attempts=a, status="running").exists(),
                     120, f"delivery {attempt}", poll=0.1)
            assert train.kill_pool_children(), "the worker had no pool process"

    def failed() -> bool:
        run.refresh_from_db()
        return run.status == "failed"

    lose_three_deliveries()
    wait_for(failed, 120, "the fourth delivery to fail the run")
    assert run.attempts == 4 and run.error.startswith("The trainer was lost 3 times while training this run")
    client.force_login(curator)
    assert "The trainer was lost 3 times" in client.get(reverse("training:run", args=[run.id])).content.decode()

    # The curator's resume counts its deliveries afresh; following it ends non-zero when it fails.
    follow = resume_run(run, worker_env)
    lose_three_deliveries()
    out, _ = follow.communicate(timeout=180)
    assert follow.returncode == 1, out
    assert "The trainer was lost 3 times" in out and "the run did not finish: it is failed" in out


SILENT_RUN = (
    "from datetime import timedelta; from django.contrib.auth.models import User; from django.utils import timezone; "
    "from tests.curation.factories import make_pool; from tests.training.factories import make_run; "
    "from training.models import Run; "
    "run = make_run(make_pool(User.objects.create_user('ada'), love=1, okay=1, reject=0), steps=0, status='running'); "
    "Run.objects.filter(id=run.id).update(heartbeat_at=timezone.now() - timedelta(minutes=5)); print(run.id)"
)


def test_in_embedded_mode_beat_and_a_score_worker_reap_a_silent_run(embedded_env, tmp_path):
    def manage_shell(script: str) -> str:
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=REPO, env=embedded_env,
                             capture_output=True, text=True, timeout=60, check=True)
        return out.stdout.strip().splitlines()[-1]

    run_id = int(manage_shell(SILENT_RUN))
    embedded_env.update(TRAINER_HEARTBEAT_S="1", TRAINER_STALE_S="5", TRAINER_REAP_EVERY_S="2")
    score = CeleryProcess(env=embedded_env, log_path=tmp_path / "score.log")
    beat = BeatProcess(env=embedded_env, log_path=tmp_path / "beat.log")
    try:
        score.spawn("worker", "-Q", "score", "-c", "1", "-n", "score@embedded", "--without-gossip", "--without-mingle")
        beat.start()
        status = f"from training.models import Run; print(Run.objects.get(id={run_id}).status)"
        wait_for(lambda: manage_shell(status) == "interrupted", 120, "the embedded reaper", poll=2)
    finally:
        beat.stop()
        score.stop()
