"""Launching, stopping, resuming and deleting runs (services and pages; no training here)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from paintenv.reward import PRESETS
from painting import services as painting_services
from tests.curation.factories import make_pool
from tests.training.factories import make_revision, make_run, write_checkpoint
from training import services
from training.models import Rollout, Run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _launch_without_workers(settings):
    """These tests are about what a launch stores and refuses on its own; no render or score
    worker runs here, so the launch's worker check is off but for the tests that turn it on."""
    settings.LAUNCH_CHECKS_WORKERS = False


@pytest.fixture
def workers_checked(settings):
    settings.LAUNCH_CHECKS_WORKERS = True


@pytest.fixture
def model_dir(tmp_path):
    path = tmp_path / "model"
    path.mkdir()
    (path / "config.json").write_text("{}")
    return str(path)


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="taste", love=5, okay=5, reject=0, eval_share=0.2)


@pytest.fixture
def love_only_pool(curator):
    return make_pool(curator, name="loves", love=5, okay=0, reject=0, tiers=("love",), eval_share=0.2)


def test_a_launch_stores_the_published_defaults_and_a_recipe_snapshot(pool, model_dir, curator):
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model_dir, created_by=curator)
    assert run.status == "queued"
    hp = run.hyperparameters
    assert (hp["learning_rate"], hp["lr_scheduler_type"], hp["warmup_steps"], hp["scale_rewards"]) == (5e-5, "constant_with_warmup", 5, "none")
    assert (hp["num_generations"], hp["top_p"], hp["top_k"], hp["lora_r"], hp["lora_alpha"]) == (8, 0.95, 20, 16, 32)
    assert (run.recipe["w_judge"], run.recipe["w_quality"]) == (0.60, 0.30)
    assert run.output_dir.endswith(f"runs/{run.id}")


def test_a_judge_recipe_cannot_launch_on_a_pool_without_love_and_okay(love_only_pool, model_dir):
    with pytest.raises(services.LaunchError, match="no okay references"):
        services.run_launch(pool=love_only_pool, recipe_name="studio-judge-led", base_model=model_dir)
    assert services.run_launch(pool=love_only_pool, recipe_name="studio-hps-only", base_model=model_dir).status == "queued"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"recipe_name": "nope"}, "unknown recipe"),
        ({"base_model": "/no/such/model"}, "no model at"),
        ({"base_model": "not-an-id"}, "local path or a Hugging Face id"),
        ({"arguments": {"num_generations": 1}}, "num_generations must be between 2 and 64"),
        ({"arguments": {"render_size": 601}}, "render_size must be one of 600, 512"),
        ({"arguments": {"lr_scheduler_type": "sawtooth"}}, "lr_scheduler_type must be one of"),
        ({"arguments": {"top_k": 2.5}}, "top_k must be a whole number"),
        ({"recipe_overrides": {"length_low_tokens": 4000}}, "low < full <= high"),
        ({"recipe_overrides": {"w_judge": 1.0}}, "only set the recipe's length"),
    ],
)
def test_bad_launches_get_clear_errors(pool, model_dir, kwargs, message):
    with pytest.raises(services.LaunchError, match=message):
        services.run_launch(**({"pool": pool, "recipe_name": "studio-judge-led", "base_model": model_dir} | kwargs))
    assert not Run.objects.exists()


NO_RENDER = "no worker answers on the `render` queue — start one with `make worker-render`"
NO_SCORE = "no worker answers on the `score` queue — start one with `make worker-score`"


def test_with_no_render_or_score_worker_a_launch_is_refused_naming_each_missing_queue(pool, model_dir, workers_checked):
    with pytest.raises(services.NoWorkers) as refused:
        services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    assert str(refused.value) == f"{NO_RENDER}; {NO_SCORE}"
    assert refused.value.queues == ["render", "score"] and not Run.objects.exists()


def launch_form_data(client, **changes) -> dict:
    """What the launch form posts when the curator keeps its defaults but for `changes`."""
    form = client.get(reverse("training:launch")).context["form"]
    data = {name: field.initial for name, field in form.fields.items() if field.initial is not None}
    data.pop("mask_truncated_completions", None)  # an unticked box is not posted
    data.pop("vllm_enable_sleep_mode", None)
    return data | {"subjects": ["a peach hibiscus"], **changes}


def test_the_launch_form_shows_which_worker_is_missing(client, curator, pool, model_dir, workers_checked):
    client.force_login(curator)
    data = launch_form_data(client, pool=pool.id, base_model=model_dir, recipe="studio-hps-only")
    response = client.post(reverse("training:launch"), data)
    assert response.status_code == 400 and not Run.objects.exists()
    assert NO_RENDER in response.content.decode()


def test_the_train_command_exits_3_naming_the_missing_render_worker(pool, model_dir, workers_checked):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=NO_RENDER) as refused:
        call_command("train", pool="taste", recipe="studio-hps-only", base_model=model_dir)
    assert refused.value.returncode == 3 and not Run.objects.exists()


def test_a_waiting_runs_page_says_what_it_waits_for_and_offers_resume(client, curator, pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    Run.objects.filter(id=run.id).update(status="waiting", steps_done=2, waiting_for=NO_RENDER)
    client.force_login(curator)
    page = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert NO_RENDER in page and "with a checkpoint at step 2" in page
    assert reverse("training:resume", args=[run.id]) in page


def test_a_waiting_run_resumes_once_every_queue_its_recipe_needs_answers(pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    Run.objects.filter(id=run.id).update(status="waiting", steps_done=2, waiting_for=NO_SCORE)
    assert services.runs_resume_waiting(answering={"render", "train"}) == []
    run.refresh_from_db()
    assert run.status == "waiting"
    assert [r.id for r in services.runs_resume_waiting(answering={"render", "score"})] == [run.id]
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == ("queued", "")


def test_stopping_a_queued_run_stops_it_and_a_running_one_asks_the_trainer(pool, model_dir):
    queued = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    assert services.run_stop(run=queued).status == "stopped"
    running = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    Run.objects.filter(id=running.id).update(status="running")
    running.refresh_from_db()
    stopping = services.run_stop(run=running)
    assert (stopping.status, stopping.stop_requested) == ("stopping", True)


def test_only_stopped_failed_interrupted_or_waiting_runs_resume(pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, arguments={"max_steps": 5})
    with pytest.raises(services.LaunchError, match="only a stopped, failed, interrupted or waiting run"):
        services.run_resume(run=run)
    for status in Run.RESUMABLE:
        Run.objects.filter(id=run.id).update(status=status, error="boom", steps_done=2, stop_requested=True)
        run.refresh_from_db()
        resumed = services.run_resume(run=run)
        assert (resumed.status, resumed.error, resumed.stop_requested) == ("queued", "", False)


def test_an_interrupted_run_that_did_all_its_steps_still_resumes_to_save_its_adapter(pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, arguments={"max_steps": 5})
    Run.objects.filter(id=run.id).update(status="stopped", steps_done=5)
    run.refresh_from_db()
    with pytest.raises(services.LaunchError, match="already did all its steps"):
        services.run_resume(run=run)
    Run.objects.filter(id=run.id).update(status="interrupted")
    run.refresh_from_db()
    assert services.run_resume(run=run).status == "queued"


def test_resume_names_a_new_task_before_queuing_it_and_counts_its_deliveries_afresh(
    pool, model_dir, django_capture_on_commit_callbacks, no_worker
):
    from paintapp.celery import app

    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, arguments={"max_steps": 5})
    Run.objects.filter(id=run.id).update(status="interrupted", task_id="the-lost-task", attempts=2)
    run.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        services.run_resume(run=run)
    run.refresh_from_db()
    assert run.task_id not in ("", "the-lost-task") and run.attempts == 0
    with app.connection_for_write() as conn:  # every message queued (an earlier test may have left one)
        queue = conn.SimpleQueue("train", no_ack=True)
        queued = [queue.get(timeout=5)]
        while True:
            try:
                queued.append(queue.get(timeout=0.5))
            except queue.Empty:
                break
    assert [m.headers["task"] for m in queued if m.headers["id"] == run.task_id] == ["training.tasks.run_training"]


def test_stop_on_an_interrupted_or_waiting_run_stops_it_and_it_can_then_be_deleted(pool, model_dir):
    for status in ("interrupted", "waiting"):
        run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
        Run.objects.filter(id=run.id).update(status=status, waiting_for="a render worker")
        run.refresh_from_db()
        stopped = services.run_stop(run=run)
        assert (stopped.status, stopped.waiting_for) == ("stopped", "")
        assert stopped.finished_at is not None
    interrupted = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    Run.objects.filter(id=interrupted.id).update(status="interrupted")
    interrupted.refresh_from_db()
    services.run_delete(run=interrupted)
    assert not Run.objects.filter(id=interrupted.id).exists()


def test_an_interrupted_runs_page_says_why_shows_its_last_checkpoint_and_resumes_from_the_button(client, curator, pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, arguments={"max_steps": 5})
    reason = "The trainer stopped answering: no heartbeat since 2026-11-30 21:00:00 UTC (more than 60 s)"
    Run.objects.filter(id=run.id).update(status="interrupted", error=reason, checkpoint_step=2, steps_done=3)
    client.force_login(curator)
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert "last checkpoint: step 2" in html and reason in html
    assert "Interrupted</h2>" in html
    for action in ("resume", "stop", "delete"):
        assert reverse(f"training:{action}", args=[run.id]) in html, action
    response = client.post(reverse("training:resume", args=[run.id]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.error) == ("queued", "")
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert reverse("training:resume", args=[run.id]) not in html


def test_the_resume_run_command_queues_what_the_button_queues_and_refuses_what_it_refuses(pool, model_dir, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, arguments={"max_steps": 5})
    with pytest.raises(CommandError, match="only a stopped, failed, interrupted or waiting run") as refused:
        call_command("resume_run", str(run.id))
    assert refused.value.returncode == 2
    with pytest.raises(CommandError, match="no run 999999") as missing:
        call_command("resume_run", "999999")
    assert missing.value.returncode == 2
    Run.objects.filter(id=run.id).update(status="interrupted", checkpoint_step=3)
    call_command("resume_run", str(run.id))
    out = capsys.readouterr().out
    assert f"Resuming run {run.id}" in out and "from step 3" in out
    assert Run.objects.get(id=run.id).status == "queued"


def test_the_launch_form_prefills_the_published_defaults_and_launches(client, curator, pool, model_dir):
    client.force_login(curator)
    page = client.get(reverse("training:launch"))
    form = page.context["form"]
    assert form["learning_rate"].initial == 5e-5 and form["recipe"].initial == "studio-judge-led"
    data = {name: field.initial for name, field in form.fields.items() if field.initial is not None}
    data.update(pool=pool.id, base_model=model_dir, subjects=["a peach hibiscus"], max_steps=3)
    data.pop("mask_truncated_completions", None)
    response = client.post(reverse("training:launch"), data)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("training:run", args=[run.id])
    assert run.max_steps == 3 and run.created_by == curator


def test_the_launch_form_shows_why_a_run_cannot_launch(client, curator, love_only_pool, model_dir):
    client.force_login(curator)
    data = launch_form_data(client, pool=love_only_pool.id, base_model=model_dir, recipe="studio-judge-led")
    response = client.post(reverse("training:launch"), data)
    assert response.status_code == 400
    assert "no okay references" in response.content.decode()


def test_the_runs_list_and_run_page_render_with_live_fragments(client, curator, pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, name="first")
    client.force_login(curator)
    listing = client.get(reverse("training:runs"))
    assert b"first" in listing.content
    page = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert "G 8, 1 × 8, auto, dapo loss" in page  # the run's settings, the published ones here (auto until it trains)
    fragment = client.get(reverse("training:run", args=[run.id]), headers={"HX-Request": "true"})
    assert 'id="run-live"' in fragment.content.decode() and "<html" not in fragment.content.decode()
    duplicate = client.get(reverse("training:launch"), {"from": run.id})
    assert duplicate.context["form"].initial["name"] == "first (copy)"


def test_the_metrics_endpoint_returns_only_the_steps_after_the_one_asked(client, curator, pool, model_dir):
    from training.models import Step

    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir)
    for n in (1, 2, 3):
        Step.objects.create(run=run, step=n, reward_mean=0.1 * n, metrics={"reward": 0.1 * n, "ours/none_count": n - 1})
    client.force_login(curator)
    data = client.get(reverse("training:metrics", args=[run.id]), {"after": 1}).json()
    assert [row[0] for row in data["steps"]] == [2, 3]
    reward = data["keys"].index("reward") + 1
    nones = data["keys"].index("ours/none_count") + 1
    assert [row[reward] for row in data["steps"]] == pytest.approx([0.2, 0.3])
    assert [row[nones] for row in data["steps"]] == [1, 2]
    assert data["status"] == "queued"


def test_the_train_command_launches_what_the_button_launches_and_rejects_bad_input(pool, model_dir, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("train", pool="taste", recipe="studio-hps-led", base_model=model_dir, steps=7, set=["num_generations=4", "render_size=384"])
    run = Run.objects.get()
    assert "Launched run" in capsys.readouterr().out
    assert (run.max_steps, run.hyperparameters["num_generations"], run.hyperparameters["render_size"]) == (7, 4, 384)
    assert run.recipe_name == "studio-hps-led" and run.pool == pool
    with pytest.raises(CommandError, match="unknown hyper-parameter"):
        call_command("train", pool="taste", base_model=model_dir, set=["warp_speed=9"])
    with pytest.raises(CommandError, match="no pool"):
        call_command("train", pool="nope", base_model=model_dir)


def test_the_train_command_with_like_launches_a_copy_of_a_run_with_its_stored_recipe(pool, model_dir, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir, seed=5,
                              arguments={"max_steps": 3}, recipe_overrides={"length_full_tokens": 2500})
    call_command("train", like=run.id)
    copy = Run.objects.exclude(id=run.id).get()
    assert f"Launched run {copy.id}" in capsys.readouterr().out
    assert (copy.pool, copy.recipe, copy.base_model, copy.seed, copy.max_steps) == (
        run.pool, run.recipe, run.base_model, 5, 3)
    assert copy.name == f"{run.name} (copy)"
    with pytest.raises(CommandError, match="no other launch option") as refused:
        call_command("train", like=run.id, steps=9)
    assert refused.value.returncode == 2
    with pytest.raises(CommandError, match="no run 999999"):
        call_command("train", like=999999)
    with pytest.raises(CommandError, match="give --pool"):
        call_command("train")
    assert Run.objects.count() == 2


def test_the_train_commands_help_lists_every_hyper_parameter_with_its_default_and_bounds():
    from training.arguments import argument_specs
    from training.management.commands.train import Command

    text = Command().create_parser("manage.py", "train").format_help()
    for spec in argument_specs():
        assert f"\n  {spec.describe()}\n" in text + "\n", spec.name
    assert "num_generations=8  [2..64]" in text and "render_size=600  [600 | 512 |" in text
    assert "--recipe-set" in text and "length_full_tokens" in text


@pytest.mark.parametrize(("setting", "message"), [
    (["--set", "num_generations=four"], "num_generations must be a whole number, not 'four'"),
    (["--set", "num_generations=1"], "num_generations must be between 2 and 64"),
    (["--set", "render_size=601"], "render_size must be one of"),
    (["--set", "mask_truncated_completions=maybe"], "mask_truncated_completions must be true or false"),
    (["--set", "gradient_accumulation_steps=3"], r"\(1 × 3 = 3\) must be a multiple of num_generations \(8\)"),
    (["--set", "num_generations"], "--set takes KEY=VALUE"),
    (["--set", "length_low_tokens=100"], "a recipe setting: use --recipe-set"),
    (["--recipe-set", "length_full_tokens=lots"], "whole number of tokens"),
    (["--recipe-set", "length_full_tokens=9000"], "low < full <= high"),
    (["--recipe-set", "w_judge=1"], "only set the recipe's length"),
])
def test_the_train_command_refuses_bad_settings_with_a_clear_message(pool, model_dir, setting, message):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=message):
        call_command("train", "--pool", "taste", "--base-model", model_dir, *setting)
    assert not Run.objects.exists()


def test_the_train_command_sets_typed_values_and_the_runs_length_thresholds_on_its_recipe(pool, model_dir):
    from django.core.management import call_command

    call_command("train", "--pool", "taste", "--recipe", "studio-hps-only", "--base-model", model_dir,
                 "--set", "mask_truncated_completions=true", "--set", "learning_rate=1e-3", "--set", "bf16=none",
                 "--recipe-set", "length_low_tokens=100", "--recipe-set", "length_full_tokens=2000")
    run = Run.objects.get()
    assert (run.hyperparameters["mask_truncated_completions"], run.hyperparameters["learning_rate"],
            run.hyperparameters["bf16"]) == (True, 1e-3, None)
    assert (run.recipe["length_low_tokens"], run.recipe["length_full_tokens"], run.recipe["length_high_tokens"]) == (100, 2000, 6000)
    assert "length_low_tokens" not in run.hyperparameters


def test_a_saved_recipes_length_thresholds_are_kept_at_launch(pool, model_dir):
    painting_services.recipe_save(name="short", recipe=PRESETS["studio-hps-only"].with_(length_low_tokens=50, length_full_tokens=500))
    run = services.run_launch(pool=pool, recipe_name="short", base_model=model_dir)
    assert (run.recipe["length_low_tokens"], run.recipe["length_full_tokens"]) == (50, 500)


def test_a_stored_run_with_length_thresholds_in_its_hyperparameters_loads_and_its_copy_keeps_them(pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=model_dir,
                              recipe_overrides={"length_low_tokens": 120, "length_full_tokens": 2500, "length_high_tokens": 5000})
    # what a run launched before the thresholds moved to the recipe stored
    Run.objects.filter(id=run.id).update(hyperparameters={
        **run.hyperparameters, "length_low_tokens": 120, "length_full_tokens": 2500, "length_high_tokens": 5000,
    })
    run.refresh_from_db()
    assert run.arguments.num_generations == 8
    copy = services.run_duplicate(run=run)
    assert [copy.recipe[k] for k in ("length_low_tokens", "length_full_tokens", "length_high_tokens")] == [120, 2500, 5000]


def test_a_run_stored_before_the_presets_were_renamed_is_copied_with_its_own_recipe(client, curator, pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model_dir)
    # what a judge-led run stored before judge-led meant the VLM judge and HPSv3
    Run.objects.filter(id=run.id).update(recipe_name="judge-led", recipe={**run.recipe, "name": "judge-led"})
    run.refresh_from_db()
    copy = services.run_duplicate(run=run)
    assert (copy.recipe["judge"], copy.recipe["quality"], copy.recipe_name) == ("taste", "features", "judge-led")
    client.force_login(curator)
    form = client.get(reverse("training:launch"), {"from": run.id}).context["form"]
    assert form.initial["recipe"] == "studio-judge-led"


@pytest.fixture
def revised_run(pool, curator, tmp_path):
    """A stopped 3-step run with a complete checkpoint at step 1 and a curator's revision of a
    rollout at step 1 (kept by a resume) and of one at step 3 (redone by it)."""
    run = make_run(pool, steps=3, status="stopped")
    Run.objects.filter(id=run.id).update(output_dir=str(tmp_path / "run"), hyperparameters={**run.hyperparameters, "max_steps": 5})
    write_checkpoint(tmp_path / "run", 1)
    make_revision(Rollout.objects.get(run=run, step=1, position=0), curator)
    make_revision(Rollout.objects.get(run=run, step=3, position=2), curator)
    run.refresh_from_db()
    return run


def test_resume_refuses_to_remove_the_revisions_of_the_steps_it_redoes_until_they_are_confirmed(revised_run):
    with pytest.raises(services.RevisionsAtStake, match=r"after step 1, which removes 1 revision by curators \(ada \(1\)\)"):
        services.run_resume(run=revised_run)
    assert Run.objects.get(id=revised_run.id).status == "stopped"
    services.run_resume(run=revised_run, revisions_seen=1)
    assert Run.objects.get(id=revised_run.id).status == "queued"


def test_the_run_page_names_the_revisions_a_resume_removes_and_the_button_needs_them_confirmed(client, curator, revised_run):
    client.force_login(curator)
    url = reverse("training:run", args=[revised_run.id])
    html = client.get(url).content.decode()
    assert 'name="revisions" value="1" required' in html and "also remove the 1 revision by ada (1)" in html
    client.post(reverse("training:resume", args=[revised_run.id]))
    assert Run.objects.get(id=revised_run.id).status == "stopped"
    assert "export the run to keep them" in client.get(url).content.decode()
    client.post(reverse("training:resume", args=[revised_run.id]), {"revisions": "1"})
    assert Run.objects.get(id=revised_run.id).status == "queued"


def test_a_waiting_run_whose_resume_would_remove_revisions_waits_for_a_curator(revised_run):
    Run.objects.filter(id=revised_run.id).update(status="waiting", waiting_for="no worker answers on the `render` queue")
    assert services.runs_resume_waiting(answering={"train", "render", "score"}) == []
    assert Run.objects.get(id=revised_run.id).status == "waiting"


def test_the_resume_run_command_asks_for_the_revisions_it_removes(revised_run):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="with --remove-revisions N"):
        call_command("resume_run", str(revised_run.id))
    call_command("resume_run", str(revised_run.id), "--remove-revisions", "1")
    assert Run.objects.get(id=revised_run.id).status == "queued"


def test_the_launch_form_makes_the_curator_choose_the_pool_and_knows_the_last_runs_pace(client, curator, pool):
    from curation.models import Pool
    from tests.training.factories import make_run

    client.force_login(curator)
    Pool.objects.create(name="newer", version=1, curator=curator)
    page = client.get(reverse("training:launch"))
    assert page.context["form"]["pool"].value() is None  # not the newest pool: none until chosen
    assert '<option value="" selected>Choose a pool…</option>' in page.content.decode()
    assert page.context["seconds_per_rollout"] is None
    make_run(pool, steps=2, generations=4)  # each step timed at 20 s for 4 rollouts
    assert client.get(reverse("training:launch")).context["seconds_per_rollout"] == pytest.approx(5.0)


# -- generation backends and the batch layout at launch ------------------------------------------


def test_the_launch_form_refuses_a_batch_layout_that_splits_a_group_and_says_why(client, curator, pool, model_dir):
    client.force_login(curator)
    data = launch_form_data(client, pool=pool.id, base_model=model_dir, gradient_accumulation_steps=4)
    response = client.post(reverse("training:launch"), data)
    assert response.status_code == 400 and not Run.objects.exists()
    assert "(1 × 4 = 4) must be a multiple of num_generations (8)" in response.content.decode()


def test_a_vllm_run_is_refused_while_no_train_worker_answers_to_say_it_can_run_vllm(pool, model_dir, workers_checked):
    for generation in ("vllm-colocate", "vllm-server"):
        with pytest.raises(services.LaunchError, match=f"{generation} generation needs a train worker with a GPU "
                                                       "and vllm, and none answers on the `train` queue"):
            services.run_launch(pool=pool, recipe_name="hps-only", base_model=model_dir,
                                arguments={"generation": generation})
    assert not Run.objects.exists()


def test_a_vllm_run_is_refused_naming_what_each_train_worker_lacks(pool, model_dir, workers_checked, start_worker):
    train = start_worker("train")
    with pytest.raises(services.LaunchError) as refused:
        services.run_launch(pool=pool, recipe_name="hps-only", base_model=model_dir,
                            arguments={"generation": "vllm-colocate"})
    message = str(refused.value)
    assert message.startswith("vllm-colocate generation needs vLLM on a CUDA GPU, and no train worker has both")
    assert f"{train.hostname}: no GPU, no vllm installed" in message  # this machine: CPU torch, no vllm
    assert "choose generate or continuous-batching" in message and not Run.objects.exists()


def test_a_train_worker_with_a_gpu_cuda_torch_and_vllm_lacks_nothing_for_vllm():
    gpu_box = {"gpus": ["GPU 0: NVIDIA H200"], "torch": "2.13.0", "cuda_build": True, "vllm": "0.31.0"}
    assert services.vllm_missing(gpu_box) == []
    assert services.vllm_missing({**gpu_box, "cuda_build": False, "torch": "2.13.0+cpu"}) == [
        "a CPU build of torch (2.13.0+cpu)"]
    assert services.vllm_missing({**gpu_box, "gpus": [], "vllm": ""}) == ["no GPU", "no vllm installed"]


def test_the_runs_that_generate_in_the_trainer_launch_without_asking_for_a_gpu(pool, model_dir):
    for generation in ("auto", "generate", "compiled", "continuous-batching"):
        run = services.run_launch(pool=pool, recipe_name="hps-only", base_model=model_dir,
                                  arguments={"generation": generation})
        assert run.hyperparameters["generation"] == generation


def test_a_run_stored_with_use_vllm_and_prompts_per_step_is_duplicated_as_it_ran(client, curator, pool, model_dir):
    run = services.run_launch(pool=pool, recipe_name="hps-only", base_model=model_dir)
    stored = {key: value for key, value in run.hyperparameters.items()
              if key not in ("generation", "per_device_train_batch_size", "gradient_accumulation_steps")}
    Run.objects.filter(id=run.id).update(hyperparameters={  # what a run launched before they were replaced stored
        **stored, "use_vllm": True, "vllm_mode": "server", "prompts_per_step": 1})
    client.force_login(curator)
    form = client.get(reverse("training:launch") + f"?from={run.id}").context["form"]
    prefilled = {name: form[name].value() for name in ("generation", "per_device_train_batch_size",
                                                       "gradient_accumulation_steps")}
    assert prefilled == {"generation": "vllm-server", "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
    run.refresh_from_db()
    copy = services.run_duplicate(run=run)
    assert (copy.hyperparameters["generation"], copy.hyperparameters["per_device_train_batch_size"]) == ("vllm-server", 8)


def test_the_run_page_shows_the_held_out_evaluation_with_each_turns_mean_or_why_it_failed(client, curator, pool):
    run = make_run(pool, steps=2, generations=2)
    client.force_login(curator)
    assert 'id="run-eval"' not in client.get(reverse("training:run", args=[run.id])).content.decode()
    run.eval_result = {"mean_reward": 0.7, "samples": 4, "none": 1, "late": 0, "turns": 2, "turn_mean_rewards": [0.55, 0.7],
                       "per_subject": {"a peach hibiscus": {"mean_reward": 0.7, "samples": 4, "gate_pass_rate": 0.75,
                                                            "rendered": 3, "none": 1}}}
    run.save(update_fields=["eval_result"])
    html = client.get(reverse("training:run", args=[run.id])).content.decode()
    assert "Mean reward <b>0.700</b> (the final sketches) over 4 samples, 1 left out: infrastructure failed" in html
    assert "turn 1 <b>0.550</b> → turn 2 <b>0.700</b>" in html
    assert "<td>a peach hibiscus</td><td>0.700</td><td>4</td><td>0.75</td><td>3</td><td>1</td>" in html
    run.eval_result = {"error": "RuntimeError: no render worker"}
    run.save(update_fields=["eval_result"])
    assert "The evaluation failed: RuntimeError: no render worker" in client.get(
        reverse("training:run", args=[run.id])).content.decode()
