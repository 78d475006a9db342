"""Tracking a run in trackio and Weights & Biases: the run argument, the launch check, what
reaches TRL, and a real short CPU run that writes both (W&B offline) and is read back."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.support.runs import FAST, MECHANICS, wait_until_ended
from training import services
from training.arguments import RunArguments
from training.models import Run
from training.trainer.tracking import TRACKING_PROJECT, backends, tracking_name, tracking_problem

NO_LOGIN = {"HOME": "/nonexistent", "NETRC": "/nonexistent/.netrc"}


def test_report_to_names_the_trackers_trl_reports_to():
    assert [backends(v) for v in ("none", "trackio", "wandb", "trackio,wandb")] == [
        [], ["trackio"], ["wandb"], ["trackio", "wandb"]]
    with pytest.raises(ValueError, match="report_to must be one of none, trackio, wandb, trackio,wandb"):
        RunArguments(report_to="tensorboard")


def test_wandb_without_a_key_a_login_or_offline_mode_is_a_problem_that_says_what_to_set(tmp_path):
    problem = tracking_problem("wandb", NO_LOGIN)
    assert "needs a W&B login" in problem and "WANDB_API_KEY" in problem and "WANDB_MODE=offline" in problem
    assert tracking_problem("trackio,wandb", {**NO_LOGIN, "WANDB_MODE": "offline"}) is None
    assert tracking_problem("wandb", {**NO_LOGIN, "WANDB_API_KEY": "k" * 40}) is None
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "k" * 40 + "\n")
    netrc.chmod(0o600)
    assert tracking_problem("wandb", {"NETRC": str(netrc)}) is None
    assert tracking_problem("wandb", {"NETRC": str(netrc), "WANDB_BASE_URL": "https://wandb.example.org"}) is not None
    assert tracking_problem("trackio", NO_LOGIN) is None and tracking_problem("none", NO_LOGIN) is None


def test_a_tracker_that_is_not_installed_is_a_problem_naming_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # how Python marks a module that cannot be imported
    assert tracking_problem("wandb", {"WANDB_MODE": "offline"}) == (
        "report_to=wandb needs the wandb package, which is not installed (pip install -r requirements-tracking.txt)")


LOADED_TRACKERS = (  # in a fresh process: which trackers TRL's trainer module loads after the call
    "import sys; import django; django.setup(); from training.trainer.tracking import leave_out_unchosen_trackers; "
    "print(leave_out_unchosen_trackers({!r})); import trl.trainer.grpo_trainer; "
    "print(sorted(name for name in ('trackio', 'wandb') if sys.modules.get(name) is not None))")


@pytest.mark.parametrize(("report_to", "left_out", "loaded"), [
    ("none", ["trackio", "wandb"], []),
    ("trackio", ["wandb"], ["trackio"]),
])
def test_a_process_that_trains_one_run_never_loads_the_trackers_it_does_not_report_to(report_to, left_out, loaded):
    done = subprocess.run([sys.executable, "-c", LOADED_TRACKERS.format(report_to)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "DJANGO_SETTINGS_MODULE": "paintapp.settings"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == [repr(left_out), repr(loaded)]


def test_a_train_worker_trains_each_run_in_a_process_that_leaves_unchosen_trackers_out():
    from paintapp.celery import app
    from training.tasks import run_training

    before = app.conf.worker_max_tasks_per_child
    with patch("training.tasks.train_run", return_value="finished") as train_run:
        app.conf.worker_max_tasks_per_child = None  # a web process applying the task in place
        try:
            run_training.apply(args=(7,), task_id="t-1")
            app.conf.worker_max_tasks_per_child = 1  # what paintapp/celery.py sets in a train worker
            run_training.apply(args=(7,), task_id="t-2")
        finally:
            app.conf.worker_max_tasks_per_child = before
    assert [c.kwargs["one_run_process"] for c in train_run.call_args_list] == [False, True]


def test_grpo_config_reports_to_the_chosen_trackers_under_the_runs_name_and_logs_completions():
    from training.trainer.grpo import grpo_config

    run = Run(id=12, name="judge-led on demo:v1", output_dir="/tmp/run-tracking-config", seed=0)
    config = grpo_config(run, RunArguments(report_to="trackio,wandb"))
    assert config.report_to == ["trackio", "wandb"]
    assert (config.run_name, config.project) == ("12-judge-led-on-demov1", TRACKING_PROJECT)
    assert config.log_completions and config.num_completions_to_print == 1
    quiet = grpo_config(run, RunArguments())
    assert quiet.report_to == [] and not quiet.log_completions


@pytest.fixture
def no_wandb_login(monkeypatch, tmp_path):
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.fixture
def launchable(settings, curator, tmp_path):
    """A pool and a model folder a launch accepts (no worker runs: the worker check is off)."""
    settings.LAUNCH_CHECKS_WORKERS = False
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return make_pool(curator, name="tracked"), str(model)


@pytest.mark.django_db
def test_a_launch_asking_for_wandb_without_a_login_is_refused_with_the_reason(launchable, no_wandb_login):
    pool, model = launchable
    with pytest.raises(services.LaunchError, match="report_to=wandb needs a W&B login"):
        services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model, arguments={"report_to": "wandb"})
    assert not Run.objects.exists()
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model, arguments={"report_to": "trackio"})
    assert run.hyperparameters["report_to"] == "trackio"


@pytest.mark.django_db
def test_the_launch_form_offers_tracking_and_shows_why_wandb_cannot_start(client, curator, launchable, no_wandb_login):
    pool, model = launchable
    client.force_login(curator)
    form = client.get(reverse("training:launch")).context["form"]
    assert [value for value, _ in form.fields["report_to"].choices] == ["none", "trackio", "wandb", "trackio,wandb"]
    data = {name: field.initial for name, field in form.fields.items() if field.initial is not None}
    data.pop("mask_truncated_completions", None)  # an unticked box is not posted
    data |= {"pool": pool.id, "base_model": model, "subjects": ["a peach hibiscus"], "report_to": "wandb"}
    response = client.post(reverse("training:launch"), data)
    assert response.status_code == 400
    assert "report_to=wandb needs a W&amp;B login" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_run_page_says_where_its_tracking_lives(client, curator, launchable):
    pool, model = launchable
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model, arguments={"report_to": "trackio"})
    client.force_login(curator)
    page = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert "where it lives is known once training starts" in page
    Path(run.output_dir).mkdir(parents=True)
    (Path(run.output_dir) / "tracking.json").write_text(json.dumps([
        {"backend": "trackio", "project": TRACKING_PROJECT, "run": tracking_name(run), "dir": "/srv/trackio",
         "view": "TRACKIO_DIR=/srv/trackio trackio show --project paint-with-code"},
        {"backend": "wandb", "project": TRACKING_PROJECT, "run": tracking_name(run), "mode": "online",
         "dir": "/srv/run/wandb/run-1", "url": "https://wandb.ai/studio/paint-with-code/runs/paintapp-1"},
    ]))
    page = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert "<code>/srv/trackio</code>" in page and "trackio show --project paint-with-code" in page
    assert '<a href="https://wandb.ai/studio/paint-with-code/runs/paintapp-1"' in page


# -- a real run ----------------------------------------------------------------------------------


READ_TRACKIO = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
project, run = sys.argv[1:3]
print(json.dumps({"runs": SQLiteStorage.get_runs(project), "logs": SQLiteStorage.get_logs(project, run)}, default=str))
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_short_cpu_run_writes_its_metrics_and_completions_to_trackio_and_an_offline_wandb_run(
        start_worker, worker_env, curator, tiny_model, tmp_path, monkeypatch, client):
    trackio_dir = tmp_path / "trackio"
    worker_env.update(TRACKIO_DIR=str(trackio_dir), WANDB_MODE="offline", RENDER_TIMEOUT_S="20")
    monkeypatch.setenv("WANDB_MODE", "offline")  # the launch checks the launching process
    for queue in ("train", "render", "score"):
        start_worker(queue)
    run = services.run_launch(pool=make_pool(curator, name="tracked"), recipe_name="studio-judge-led", base_model=tiny_model,
                              arguments=MECHANICS | {"max_steps": 2, "report_to": "trackio,wandb"})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    name = tracking_name(run)

    places = {p["backend"]: p for p in json.loads((Path(run.output_dir) / "tracking.json").read_text())}
    assert places["trackio"]["dir"] == str(trackio_dir) and places["trackio"]["run"] == name
    assert places["wandb"]["mode"] == "offline" and places["wandb"]["url"] is None

    read = subprocess.run([sys.executable, "-c", READ_TRACKIO, TRACKING_PROJECT, name], capture_output=True,
                          text=True, env={**worker_env}, check=True, timeout=120)
    tracked = json.loads(read.stdout.strip().splitlines()[-1])
    assert tracked["runs"] == [name]
    steps = [log for log in tracked["logs"] if "train/reward" in log]
    assert [log["train/global_step"] for log in steps] == [1, 2]
    assert all(isinstance(log["train/loss"], float) for log in steps)
    # TRL logs the completions at every log: each step's, and the last step's again with the run's final log.
    completions = [log["completions"]["_value"] for log in tracked["logs"] if "completions" in log]
    assert len(completions) == 3 and all(len(rows) == FAST["num_generations"] for rows in completions)
    assert [rows[0]["step"] for rows in completions] == [1, 2, 2]
    assert all(row["completion"][0]["role"] == "assistant" and "painting" in row for row in completions[0])

    offline = Path(places["wandb"]["dir"])
    assert offline.parent == Path(run.output_dir) / "wandb" and offline.name.startswith("offline-run-")
    records = next(offline.glob("run-*.wandb")).read_bytes()
    assert b"train/reward" in records and b"train/global_step" in records
    tables = list((offline / "files" / "media" / "table").glob("completions_*.table.json"))
    assert len(tables) == 3
    table = json.loads(tables[0].read_text())
    assert "completion" in table["columns"] and len(table["data"]) == FAST["num_generations"]

    client.force_login(curator)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert str(trackio_dir) in page and f"wandb sync {offline}" in page
