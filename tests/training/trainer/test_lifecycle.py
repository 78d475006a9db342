"""Which deliveries of a run's train task train, the trainer's heartbeat, and the reaper
(training/trainer/lifecycle.py) against the database; the end-to-end faults are in test_trainer_faults.py."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from tests.curation.factories import make_pool
from tests.training.factories import make_run
from tests.training.trainer.test_checkpoints import write_checkpoint
from training.models import Run
from training.trainer import lifecycle

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(curator):
    run = make_run(make_pool(curator), steps=0, status="queued")
    Run.objects.filter(id=run.id).update(task_id="task-1")
    run.refresh_from_db()
    return run


def deliver(run: Run, task_id: str = "task-1", resume: bool = False) -> lifecycle.Delivery:
    delivery = lifecycle.run_delivery_begin(run_id=run.id, task_id=task_id, resume=resume, now=timezone.now())
    run.refresh_from_db()
    return delivery


def test_the_first_delivery_trains_from_the_start_and_is_counted(run):
    assert deliver(run) == lifecycle.Delivery(train=True, resume=False)
    assert (run.status, run.attempts) == ("running", 1)
    assert run.heartbeat_at is not None and run.started_at is not None


def test_a_redelivery_after_a_lost_trainer_resumes_and_the_fourth_fails_the_run_with_the_reason(run, settings):
    settings.TRAIN_MAX_ATTEMPTS = 3
    Run.objects.filter(id=run.id).update(checkpoint_step=4)
    assert deliver(run).train
    assert deliver(run) == lifecycle.Delivery(train=True, resume=True)  # the run is still `running`
    assert deliver(run).train
    assert deliver(run) == lifecycle.Delivery(train=False, status="failed")
    assert (run.status, run.attempts) == ("failed", 4)
    assert run.error.startswith("The trainer was lost 3 times while training this run")
    assert "continues from step 4" in run.error
    assert deliver(run) == lifecycle.Delivery(train=False, status="failed")  # nothing more happens
    assert run.attempts == 4


def test_a_delivery_of_any_task_but_the_runs_current_one_does_nothing(run):
    deliver(run)
    before = Run.objects.values().get(id=run.id)
    assert deliver(run, task_id="an-old-task") == lifecycle.Delivery(train=False, status="superseded")
    assert Run.objects.values().get(id=run.id) == before


def test_a_redelivery_to_a_run_that_was_stopping_just_stops_it(run):
    deliver(run)
    Run.objects.filter(id=run.id).update(status="stopping", stop_requested=True)
    assert deliver(run) == lifecycle.Delivery(train=False, status="stopped")
    assert run.status == "stopped" and run.finished_at is not None


def test_a_finished_runs_task_delivered_again_does_nothing(run):
    Run.objects.filter(id=run.id).update(status="finished", attempts=1)
    assert deliver(run) == lifecycle.Delivery(train=False, status="finished")
    assert run.attempts == 1


def silent_for(run: Run, seconds: float, status: str = "running") -> Run:
    Run.objects.filter(id=run.id).update(status=status, heartbeat_at=timezone.now() - timedelta(seconds=seconds),
                                         started_at=timezone.now() - timedelta(hours=1))
    run.refresh_from_db()
    return run


def test_the_reaper_marks_a_silent_run_interrupted_with_the_reason_and_its_last_complete_checkpoint(run, settings, tmp_path):
    settings.TRAINER_STALE_S = 60
    write_checkpoint(tmp_path, 2)
    write_checkpoint(tmp_path, 3, sealed=False)  # the save the trainer died in
    Run.objects.filter(id=run.id).update(output_dir=str(tmp_path), steps_done=3)
    silent_for(run, 61)
    assert lifecycle.runs_reap(now=timezone.now()) == [run.id]
    run.refresh_from_db()
    assert (run.status, run.checkpoint_step, run.finished_at) == ("interrupted", 2, None)
    assert run.error.startswith("The trainer stopped answering: no heartbeat since")
    assert "more than 60 s" in run.error and "Resume continues from step 2" in run.error
    assert lifecycle.runs_reap(now=timezone.now()) == []


def test_the_reaper_leaves_live_trainers_and_queued_runs_alone_and_a_silent_stopping_run_is_stopped(run, settings, curator):
    settings.TRAINER_STALE_S = 60
    silent_for(run, 30)
    queued = make_run(run.pool, steps=0, status="queued")
    Run.objects.filter(id=queued.id).update(created_at=timezone.now() - timedelta(days=2))  # no train worker took it
    stopping = silent_for(make_run(run.pool, steps=0), 600, status="stopping")
    assert lifecycle.runs_reap(now=timezone.now()) == [stopping.id]
    statuses = dict(Run.objects.values_list("id", "status"))
    assert statuses == {run.id: "running", queued.id: "queued", stopping.id: "stopped"}


def test_a_heartbeat_after_a_wrong_reap_makes_the_run_running_again_but_not_once_it_was_resumed(run, settings):
    settings.TRAINER_STALE_S = 60
    deliver(run)
    silent_for(run, 120)
    lifecycle.runs_reap(now=timezone.now())
    assert lifecycle.run_heartbeat(run_id=run.id, task_id="task-1", now=timezone.now())
    run.refresh_from_db()
    assert (run.status, run.error) == ("running", "")
    Run.objects.filter(id=run.id).update(task_id="task-2", status="queued")  # resumed in a new task
    assert not lifecycle.run_heartbeat(run_id=run.id, task_id="task-1", now=timezone.now())
    assert Run.objects.get(id=run.id).status == "queued"


@pytest.mark.django_db(transaction=True)  # the heartbeat writes from its own thread and connection
def test_the_heartbeat_beats_from_its_own_thread_and_survives_a_database_that_is_briefly_down(run):
    beats = threading.Semaphore(0)
    calls, threads = [], set()

    def database_down_once(**kwargs) -> bool:
        calls.append(kwargs["now"])
        threads.add(threading.current_thread())
        if len(calls) == 1:
            raise OperationalError("the database system is shutting down")
        written = lifecycle.run_heartbeat(**kwargs)
        beats.release()
        return written

    deliver(run)
    Run.objects.filter(id=run.id).update(heartbeat_at=None)
    with lifecycle.Heartbeat(run.id, "task-1", interval_s=0.05, record=database_down_once) as heartbeat:
        assert beats.acquire(timeout=10) and beats.acquire(timeout=10)
    assert threads == {heartbeat._thread} and threading.main_thread() not in threads
    run.refresh_from_db()
    assert heartbeat.failures == 1
    assert run.heartbeat_at is not None and run.heartbeat_at >= calls[1]
    assert not heartbeat._thread.is_alive()
