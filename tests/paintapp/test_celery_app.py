"""The Celery app's worker hooks."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from paintapp.celery import _train_each_task_in_a_fresh_process


@pytest.mark.parametrize(("queues", "fresh"), [
    (["train"], True), ("train", True), ("render,train", True), (["render", "score"], False), (None, False),
])
def test_a_worker_that_consumes_train_runs_each_task_in_a_new_child(queues, fresh):
    conf = SimpleNamespace(worker_max_tasks_per_child=None)
    _train_each_task_in_a_fresh_process(conf=conf, options={"queues": queues})
    assert conf.worker_max_tasks_per_child == (1 if fresh else None)
