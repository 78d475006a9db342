"""The pipeline core on the test broker: handles that can be polled without blocking, collected
until a deadline, and given up under one policy."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from painting import fanout

MINIMAL = "function setup() { createCanvas(600, 600, WEBGL); }"
GOOD = (Path(__file__).resolve().parents[1] / "paintenv" / "corpus" / "good" / "hibiscus.js").read_text()


@pytest.mark.django_db
def test_a_task_no_worker_takes_polls_pending_then_is_given_up_and_never_counted_back(no_worker, worker_env):
    task_id = str(uuid.uuid4())
    [handle] = fanout.submit("render", [{"code": MINIMAL, "size": 64}], wait_s=30, task_ids=[task_id])
    assert handle == fanout.Handle(task_id, "render")
    polled = fanout.poll(handle)
    assert (polled.state, polled.finished, polled.value) == ("PENDING", False, None)
    assert fanout.give_up([handle], settle_s=0.1) == [False]


@pytest.mark.django_db
def test_collect_turns_each_task_not_back_by_the_deadline_into_given_up(no_worker, worker_env):
    handles = fanout.submit("render", [{"code": MINIMAL, "seed": i, "size": 64} for i in range(2)], wait_s=0.5)
    done = []
    outcomes = fanout.collect(handles, deadline_s=0.5, progress=done.append, settle_s=0.1)
    assert [type(outcome) for outcome in outcomes] == [fanout.GivenUp, fanout.GivenUp]
    assert done == [1, 2]
    assert all(str(outcome).endswith("deadline; revoked") for outcome in outcomes)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_handle_polled_in_another_request_finds_the_render_a_worker_finished(start_worker):
    start_worker("render")
    [sent] = fanout.submit("render", [{"code": GOOD, "size": 128}], wait_s=120)
    assert fanout.collect([sent], deadline_s=120, progress=lambda n: None)[0]["passed"] is True
    polled = fanout.poll(fanout.Handle(sent.task_id, "render"))  # rebuilt from the id alone, as the editor does
    assert polled.state == "SUCCESS" and polled.finished and polled.value["passed"] is True
