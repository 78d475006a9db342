"""The tests' worker fleet (tests/support/workers.py): a parked worker is invisible to the next
test (it consumes nothing and answers nothing), and taken again it is the same worker, consuming."""
from __future__ import annotations

import pytest
from celery.exceptions import TimeoutError as ResultTimeout

from paintapp.celery import app
from paintapp.lib.workers import answering_queues
from tests.conftest import TEST_BROKER_URL
from tests.support.workers import WorkerFleet

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fleet(worker_env, tmp_path):
    fleet = WorkerFleet(root=tmp_path / "fleet", broker_url=TEST_BROKER_URL, keep=1)
    yield fleet
    fleet.close()


def test_a_parked_worker_consumes_nothing_and_answers_nothing_until_it_is_taken_again(fleet, worker_env):
    worker = fleet.start(queues=("score",), concurrency=1, pool="prefork", env=worker_env)
    assert "score" in answering_queues(wanted=["score"])
    fleet.release([worker])
    assert fleet.parked == [worker]
    assert not app.control.ping(destination=[worker.hostname], timeout=1.0)
    assert "score" not in answering_queues(wanted=["score"])
    waiting = app.send_task("celery.accumulate", args=(1, 2), queue="score")
    with pytest.raises(ResultTimeout):
        waiting.get(timeout=3)  # nobody took it

    again = fleet.start(queues=("score",), concurrency=1, pool="prefork",
                        env={**worker_env, "PYTEST_CURRENT_TEST": "another test (setup)"})
    assert again is worker and fleet.reused == 1 and fleet.started == 1
    assert waiting.get(timeout=30) == [1, 2]  # the task sent while it was parked, taken now
    assert "Canceling queue score" not in again.log_text()  # this test's lines only


def test_a_worker_of_another_kind_or_one_a_test_stopped_is_never_taken_again(fleet, worker_env):
    worker = fleet.start(queues=("score",), concurrency=1, pool="prefork", env=worker_env)
    fleet.release([worker])
    other = fleet.start(queues=("score",), concurrency=1, pool="prefork", env={**worker_env, "RENDER_TIMEOUT_S": "5"})
    assert other is not worker and fleet.started == 2
    other.stop()  # a test's own stop: the worker is not parked
    fleet.release([other])
    assert fleet.parked == [worker] and other.process.poll() is not None
