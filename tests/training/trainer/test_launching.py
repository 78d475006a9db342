"""Runs trained by several processes through `accelerate launch`: on CPU, two processes (gloo)
of the tiny painter model with real train / render / score workers and Chromium."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import psutil
import pytest

from paintapp.lib.workers import missing_worker_message
from painting.tasks import render_sketch
from tests.curation.factories import make_pool
from tests.support.processes import still_running
from tests.support.runs import FAST, wait_for, wait_until_ended
from training import services
from training.models import Rollout, Run, Step
from training.tasks import resume_waiting_runs
from training.trainer.launching import failure_report, launch_command

GOOD = (Path(__file__).resolve().parents[2] / "paintenv" / "corpus" / "good" / "hibiscus.js").read_text()
TWO_PROCESSES = FAST | {"num_processes": 2, "max_completion_length": 1024}


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="processes")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_two_process_run_of_revision_turns_after_a_step_in_both_processes_with_its_adapter_and_checkpoint(
    workers, pool, painter_model
):
    # Stopping needs steps, not paintings: replies cut at 64 tokens fail the gate at once. Two
    # turns: each process's rollouts get their feedback from one step-wide judging (paint_turn).
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=painter_model,
                              arguments=TWO_PROCESSES | {"max_steps": 50, "max_completion_length": 64, "turns": 2})
    wait_for(lambda: Step.objects.filter(run=run, step=1).exists(), 400, "step 1")
    services.run_stop(run=Run.objects.get(id=run.id))
    run = wait_until_ended(run, timeout=300)
    assert run.status == "stopped", run.error
    assert 1 <= run.steps_done < 50 and run.checkpoint_step == run.steps_done
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == list(range(1, run.steps_done + 1))
    checkpoint = Path(run.output_dir) / f"checkpoint-{run.steps_done}"
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(json.loads((checkpoint / "complete.json").read_text())["files"])
    assert (Path(run.output_dir) / "adapter" / "adapter_model.safetensors").exists()
    assert not run.eval_result  # a stopped run is not evaluated
    rollouts = Rollout.objects.filter(run=run, step=1).prefetch_related("chain")
    assert sorted(r.position for r in rollouts) == list(range(4))  # both processes' shares, once each
    for rollout in rollouts:
        assert [t.turn for t in rollout.chain.all()] == [1, 2] and rollout.chain.all()[0].feedback


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_two_process_run_without_render_workers_pauses_and_resumes_to_finish_with_each_step_and_rollout_once(
    start_worker, worker_env, pool, painter_model
):
    """One run proves both: pausing and resuming two processes, and a two-process run that
    finishes (each step once, each rollout once in its step, evaluated). A one-process run
    pauses and resumes by the same code (the main process finds the workers missing and every
    process leaves the step together), so this run stands for it too."""
    worker_env.update(RENDER_TIMEOUT_S="20", PAINTAPP_WORKER_WAIT_S="2")
    train = start_worker("train")
    start_worker("score")
    render = start_worker("render")
    run = services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=painter_model, arguments=TWO_PROCESSES | {
        "max_steps": 3, "render_deadline_s": 10, "checkpoint_every": 100})
    wait_for(lambda: Step.objects.filter(run=run, step=1).exists(), 400, "step 1")
    render.stop()
    run = wait_until_ended(run, timeout=300, ends=("waiting", "failed"))
    assert run.status == "waiting", run.error
    paused_at = run.steps_done
    assert run.waiting_for == missing_worker_message("render")
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == list(range(1, paused_at + 1))
    checkpoint = Path(run.output_dir) / f"checkpoint-{paused_at}"
    assert json.loads((checkpoint / "trainer_state.json").read_text())["global_step"] == run.checkpoint_step == paused_at
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(json.loads((checkpoint / "complete.json").read_text())["files"])
    lost = Rollout.objects.filter(run=run, step=paused_at + 1)
    assert lost.count() == 4 and lost.filter(reward=None).exists()  # the lost step's, with their reasons
    for r in lost:  # kept for the page: Nones with reasons, never a made-up 0
        assert (r.reward is None and r.failure.startswith("render:")) or (r.reward == 0.0 and r.violations), r.failure

    start_worker("render")
    # The new worker's browser starts on its first render; started here, its cold start (slow on
    # a loaded machine) cannot run the redone step past its 10 s deadline.
    assert render_sketch.delay(GOOD, size=128).get(timeout=120)["passed"]
    assert resume_waiting_runs.delay().get(timeout=60) == [run.id]
    run = wait_until_ended(run, timeout=500)
    assert run.status == "finished", run.error
    assert run.steps_done == 3
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2, 3]
    rollouts = Rollout.objects.filter(run=run)
    # Each process generated 2 of a step's 4 completions; together they are one group, each position once.
    assert Counter(rollouts.values_list("step", "group", "position")) == {
        (step, 0, position): 1 for step in (1, 2, 3) for position in range(4)}
    for step in Step.objects.filter(run=run):
        mine = rollouts.filter(step=step.step)
        assert step.metrics["ours/none_count"] == mine.filter(reward=None).count()
        assert step.metrics["ours/gate_pass_rate"] == pytest.approx(mine.filter(passed=True).count() / 4)
        valid = [r.reward for r in mine if r.reward is not None]
        assert step.reward_mean == pytest.approx(sum(valid) / len(valid), abs=1e-5)
    assert rollouts.exclude(png="").exists(), "nothing rendered: the painter model never passed the gate"
    redone = rollouts.filter(step=paused_at + 1)
    assert any(r.timings.get("render_ms") is not None for r in redone), [r.failure for r in redone]  # the new worker's
    assert (Path(run.output_dir) / "adapter" / "adapter_model.safetensors").exists()
    assert run.eval_result.get("samples"), run.eval_result  # the main process evaluated the adapter
    trainer_log = train.log_text()
    assert "starting 2 training processes" in trainer_log
    assert f"run {run.id} | " in trainer_log  # the processes' lines reach the worker's log


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_training_process_that_fails_fails_the_run_with_its_traceback(workers, pool, tmp_path):
    unloadable = tmp_path / "unloadable-model"
    unloadable.mkdir()
    (unloadable / "config.json").write_text("{}")  # no model type: every process fails to load it
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=str(unloadable), arguments=TWO_PROCESSES)
    run = wait_until_ended(run, timeout=300)
    assert run.status == "failed"
    first_line = run.error.splitlines()[0]
    assert str(unloadable) in run.error and "Traceback" in run.error, run.error
    assert first_line.split(":")[0].endswith(("Error", "Exception")), first_line
    assert "(training process " in run.error and " of 2)" in run.error


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_training_processes_die_with_the_train_task_that_started_them(workers, pool, painter_model):
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=painter_model,
                              arguments=TWO_PROCESSES | {"max_steps": 50})
    worker = psutil.Process(workers["train"].process.pid)

    def training_processes() -> list[psutil.Process]:
        found = [p for p in worker.children(recursive=True) if "train_process" in " ".join(p.cmdline())]
        return found if len(found) >= 2 else []

    def ranks_and_launcher() -> list[psutil.Process]:
        ranks = training_processes()
        launchers = [p for p in worker.children(recursive=True) if "accelerate.commands.launch" in " ".join(p.cmdline())]
        return ranks + launchers if ranks and launchers else []

    spawned = wait_for(ranks_and_launcher, 120, "the launcher and two training processes", poll=0.2)
    wait_for(lambda: Run.objects.filter(id=run.id, status="running").exists(), 60, "the run to be running")
    task_process = workers["train"].kill_pool_children()  # what the out-of-memory killer does to the trainer
    assert task_process
    assert still_running(spawned, timeout=15) == [], "a training process outlived the train task"


def test_a_training_process_loads_no_torch_before_it_watches_the_train_task():
    """`manage.py train_process` starts watching the train task in its handle(); the command's
    module (and the trainer it imports) must not spend the seconds of torch and transformers
    before that, or a trainer killed then leaves its processes running."""
    import subprocess
    import sys

    probe = ("import sys, django; django.setup(); import training.management.commands.train_process; "
             "print(sorted({'torch', 'transformers', 'trl', 'peft'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "paintapp.settings"},
                            cwd=Path(__file__).resolve().parents[3])
    assert loaded.stdout.strip() == "[]", loaded.stderr[-2000:]


def test_the_launch_command_runs_torchrun_on_its_own_port_or_follows_an_accelerate_config(tmp_path):
    plain = launch_command(run_id=7, task_id="t", checkpoint=None, processes=2, config_file="",
                           report_dir=tmp_path, port=29999)
    assert plain[1:3] == ["-m", "accelerate.commands.launch"] and "--multi_gpu" in plain
    assert plain[plain.index("--num_processes") + 1] == "2" and plain[plain.index("--main_process_port") + 1] == "29999"
    assert plain[plain.index("train_process") + 1] == "7" and plain[plain.index("--checkpoint") + 1] == ""
    config = tmp_path / "zero3.yaml"
    resumed = launch_command(run_id=7, task_id="t", checkpoint=tmp_path / "checkpoint-3", processes=4,
                             config_file=str(config), report_dir=tmp_path, port=29999)
    assert "--multi_gpu" not in resumed and resumed[resumed.index("--config_file") + 1] == str(config)
    assert resumed[resumed.index("--checkpoint") + 1].endswith("checkpoint-3")


def test_a_failure_report_gives_the_first_failing_process_or_the_output_when_none_wrote_one(tmp_path):
    assert failure_report(tmp_path, -9, ["loading", "step 1"], 2).endswith("Their last lines:\n\nloading\nstep 1")
    assert "exit status -9" in failure_report(tmp_path, -9, [], 2)
    (tmp_path / "failure-1.txt").write_text("OSError: disk full\n\nTraceback ...")
    (tmp_path / "failure-0.txt").write_text("RuntimeError: connection closed by peer")  # a consequence, later
    report = failure_report(tmp_path, 1, [], 2)
    assert report.startswith("OSError: disk full") and report.endswith("(training process 1 of 2)")


@pytest.mark.django_db(transaction=True)  # train_run closes the connection a test transaction would hold
def test_a_run_asking_for_an_accelerate_config_the_worker_does_not_have_fails_with_the_reason(pool, tmp_path, settings):
    from training.trainer.lifecycle import train_run

    settings.LAUNCH_CHECKS_WORKERS = False
    (tmp_path / "config.json").write_text("{}")
    missing = tmp_path / "deepspeed.yaml"
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=str(tmp_path),
                              arguments=FAST | {"accelerate_config": str(missing)})
    run.refresh_from_db()  # launching named the run's task
    assert train_run(run.id, task_id=run.task_id) == "failed"
    run.refresh_from_db()
    assert run.error.startswith(f"accelerate_config '{missing}' is not a file on the train worker's machine")
