"""Each step's best painting reaches the trackers as an image (trackio and an offline W&B run,
both real, each in a process of its own so their folders are this test's)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.curation.factories import make_pool
from tests.training.factories import make_run
from training.trainer.tracking import BEST_PAINTING, best_painting

pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[3]

LOG_AND_READ = """
import json, os, sys
import django
django.setup()
from training.models import Run
from training.trainer.tracking import log_best_painting
run = Run.objects.get(id=int(sys.argv[1]))
backend = sys.argv[2]
if backend == "trackio":
    import trackio
    trackio.init(project="paint-with-code", name="images")
else:
    import wandb
    wandb.init(project="paint-with-code", name="images", mode="offline", dir=os.environ["WANDB_DIR"])
logged = [log_best_painting(run, step, [backend]) for step in (1, 2)]
if backend == "trackio":
    trackio.finish()
    from trackio.sqlite_storage import SQLiteStorage
    print(json.dumps({"logged": logged, "logs": SQLiteStorage.get_logs("paint-with-code", "images")}, default=str))
else:
    wandb.finish()
    print(json.dumps({"logged": logged}))
"""


@pytest.fixture
def run(curator):
    # Step 1: the best is rollout 2 (0.8); step 2: nothing was painted (gate refusals and a lost render).
    return make_run(make_pool(curator, name="tracked"), steps=2, rewards=[[0.4, 0.3, 0.8, 0.5], [0.0, 0.0, None, 0.0]])


def log_and_read(run, backend: str, worker_env, tmp_path) -> dict:
    env = {**worker_env, "TRACKIO_DIR": str(tmp_path / "trackio"), "WANDB_DIR": str(tmp_path), "WANDB_MODE": "offline"}
    done = subprocess.run([sys.executable, "-c", LOG_AND_READ, str(run.id), backend], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_best_painting_of_a_step_is_its_highest_reward_with_a_caption(run):
    image, caption = best_painting(run, 1)
    assert image.size == (48, 48) and caption == "step 1 · reward 0.800 · a peach hibiscus (rollout 0.2)"
    assert best_painting(run, 2) is None  # the lost render's painting has no reward: not a best


def test_trackio_gets_each_steps_best_painting_as_an_image(run, worker_env, tmp_path):
    read = log_and_read(run, "trackio", worker_env, tmp_path)
    assert read["logged"] == [True, False]
    [image] = [log for log in read["logs"] if BEST_PAINTING in log]
    assert image["train/global_step"] == 1 and image[BEST_PAINTING]["_type"] == "trackio.image"
    assert image[BEST_PAINTING]["caption"].startswith("step 1 · reward 0.800")


def test_an_offline_wandb_run_gets_the_image_file(run, worker_env, tmp_path):
    read = log_and_read(run, "wandb", worker_env, tmp_path)
    assert read["logged"] == [True, False]
    images = list((tmp_path / "wandb").glob("offline-run-*/files/media/images/ours/best_painting_*.png"))
    assert len(images) == 1 and images[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_trackio_space_setting_reaches_grpo_config_for_trackio_runs_only(run, settings):
    from training.trainer.tracking import grpo_tracking_arguments

    settings.TRACKIO_SPACE_ID = "ada/paint-with-code-curves"
    assert grpo_tracking_arguments(run, "trackio,wandb")["trackio_space_id"] == "ada/paint-with-code-curves"
    assert "trackio_space_id" not in grpo_tracking_arguments(run, "wandb")
    settings.TRACKIO_SPACE_ID = ""
    assert "trackio_space_id" not in grpo_tracking_arguments(run, "trackio")
