"""Which queues answer: a busy worker's late answer is waited for before a queue counts as missing."""
from __future__ import annotations

import pytest

from paintapp.lib import workers

RENDER_WORKER = {"hostname": "render@box", "queues": ["render"]}


@pytest.fixture
def broker(monkeypatch):
    """A broadcasting broker whose workers answer only when asked with at least `answers_after` s."""
    asked: list[float] = []
    state = {"answers_after": 0.0, "down": False}

    def inspect(timeout: float = workers.INSPECT_TIMEOUT_S) -> list[dict]:
        asked.append(timeout)
        if state["down"]:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return [RENDER_WORKER] if timeout >= state["answers_after"] else []

    monkeypatch.setattr(workers, "broker_broadcasts", lambda: True)
    monkeypatch.setattr(workers, "workers_by_inspect", inspect)
    return state, asked


def test_it_asks_once_when_the_wanted_queues_answer_at_once(broker):
    _state, asked = broker
    assert workers.answering_queues(wanted=["render"]) == {"render"}
    assert asked == [workers.INSPECT_TIMEOUT_S]


def test_it_asks_again_more_patiently_before_a_wanted_queue_counts_as_missing(broker):
    state, asked = broker
    state["answers_after"] = 3.0  # a worker whose main process is busy answers late
    assert workers.answering_queues(wanted=["render"]) == {"render"}
    assert asked == [workers.INSPECT_TIMEOUT_S, workers.PATIENT_INSPECT_TIMEOUT_S]


def test_a_queue_that_nobody_consumes_is_missing_after_the_patient_ask(broker):
    _state, asked = broker
    assert workers.answering_queues(wanted=["render", "score"]) == {"render"}
    assert asked == [workers.INSPECT_TIMEOUT_S, workers.PATIENT_INSPECT_TIMEOUT_S]


def test_without_wanted_queues_it_never_waits_longer(broker):
    state, asked = broker
    state["answers_after"] = 3.0
    assert workers.answering_queues() == set()
    assert asked == [workers.INSPECT_TIMEOUT_S]


def test_a_broker_that_is_down_answers_for_no_queue_and_is_not_asked_twice(broker):
    state, asked = broker
    state["down"] = True
    assert workers.answering_queues(wanted=["render"]) == set()
    assert asked == [workers.INSPECT_TIMEOUT_S]
