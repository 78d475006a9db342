"""A run survives its services restarting: Redis (broker and results) and PostgreSQL.

Real workers, the painter model, a few steps. Each test restarts a private server (never the
machine's) while the trainer waits on a step's renders, then checks that the run ends
`finished` with every step exactly once and all its rollouts.
"""
from __future__ import annotations

import gc
import time

import pytest
import redis
from django.contrib.auth.models import User

from paintapp.lib.db import outlasting_restarts
from tests.conftest import TEST_BROKER_URL
from tests.curation.factories import make_pool
from tests.support.services import PostgresServer, RedisServer, celery_pointed_at, django_database_at
from tests.training.test_training_run import FAST
from training import services
from training.models import Rollout, Run, Step

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEPS = 2
# The painter writes sketches that pass the gate at this length, so step 2 has renders to wait on.
ARGS = FAST | {"max_steps": STEPS, "max_completion_length": 1024}
OUTAGE_S = 3.0


def wait_for(predicate, timeout: float, what: str, poll: float = 0.5):
    """Polls that read the database ride out its restart, like the trainer's writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if outlasting_restarts(predicate, what=what):
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def render_taken(broker: redis.Redis) -> bool:
    """The trainer waits on a step's renders and a render worker is painting one: an
    unacknowledged message beyond the train task's own. Its result is due during the outage."""
    return broker.hlen("unacked") > 1


def launch(painter_model: str) -> Run:
    curator = User.objects.create_user(username="ada", password="watercolour-2026")
    pool = make_pool(curator, name="restarts")
    return services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=painter_model, arguments=ARGS)


def restart_during_step_2(broker: redis.Redis, run: Run, restart) -> None:
    wait_for(lambda: Step.objects.filter(run=run, step=1).exists(), 300, "step 1")
    wait_for(lambda: render_taken(broker), 120, "a render of step 2", poll=0.05)
    restart()


def assert_finished_with_each_step_once(run: Run) -> None:
    wait_for(lambda: Run.objects.get(id=run.id).status not in Run.ACTIVE, 400, f"run {run.id} to end")
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED, run.error
    assert run.steps_done == STEPS
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == list(range(1, STEPS + 1))
    per_step = {s: Rollout.objects.filter(run=run, step=s).count() for s in range(1, STEPS + 1)}
    assert per_step == {s: ARGS["num_generations"] for s in range(1, STEPS + 1)}
    # The restart cost no reward: nothing was lost in flight, nothing stored on a dead connection.
    assert list(Rollout.objects.filter(run=run, reward__isnull=True).values_list("step", "failure")) == []


@pytest.fixture
def private_redis(tmp_path):
    server = RedisServer(folder=tmp_path / "redis").start()
    yield server
    gc.collect()  # the launched task's result unsubscribes while its Redis still answers
    server.stop()


@pytest.fixture
def workers_on_private_redis(private_redis, start_worker, worker_env):
    worker_env.update(CELERY_BROKER_URL=private_redis.url(0), CELERY_RESULT_BACKEND=private_redis.url(1),
                      RENDER_TIMEOUT_S="20")
    with celery_pointed_at(private_redis.url(0), private_redis.url(1)):
        yield {queue: start_worker(queue) for queue in ("train", "render", "score")}


@pytest.fixture
def private_postgres(transactional_db, worker_env):
    server = PostgresServer().start()
    try:
        with django_database_at(server.url("paintapp")):
            worker_env["DATABASE_URL"] = server.url("paintapp")
            yield server
    finally:
        server.remove()


@pytest.fixture
def workers_on_private_postgres(private_postgres, start_worker, worker_env):
    worker_env["RENDER_TIMEOUT_S"] = "20"
    return {queue: start_worker(queue) for queue in ("train", "render", "score")}


def test_a_redis_restart_mid_run_ends_finished_with_every_step_once(
    workers_on_private_redis, private_redis, painter_model
):
    run = launch(painter_model)
    restart_during_step_2(private_redis.client(0), run, lambda: private_redis.restart(down_s=OUTAGE_S))
    assert_finished_with_each_step_once(run)
    # Nothing of the run is left to be delivered again (after the visibility timeout).
    assert private_redis.client(0).hlen("unacked") == 0 and private_redis.client(0).llen("train") == 0


def test_a_postgresql_restart_mid_run_ends_finished_with_every_step_once(
    workers_on_private_postgres, private_postgres, painter_model
):
    run = launch(painter_model)
    restart_during_step_2(redis.Redis.from_url(TEST_BROKER_URL), run, lambda: private_postgres.restart(down_s=OUTAGE_S))
    assert_finished_with_each_step_once(run)
