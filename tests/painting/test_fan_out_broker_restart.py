"""The render and score fan-out across a broker restart: a stage sent while Redis is away
waits for it and loses no task (a private redis-server; no worker is needed)."""
from __future__ import annotations

import threading

from painting.pipeline import Workers
from tests.support.services import RedisServer, celery_pointed_at


def test_a_stage_sent_while_the_broker_restarts_waits_for_it_and_loses_no_task(tmp_path):
    server = RedisServer(folder=tmp_path / "redis").start()
    calls = [{"code": "function setup() {}", "seed": i, "size": 128} for i in range(3)]
    try:
        with celery_pointed_at(server.url(0), server.url(1)):
            Workers().render(calls[:1], deadline_s=0.1, progress=lambda done: None)  # the trainer's connections are warm
            server.client(0).flushdb()
            server.stop()
            back = threading.Timer(1.5, server.start)
            back.start()
            outcomes = Workers().render(calls, deadline_s=0.5, progress=lambda done: None)
            back.join()
        assert server.client(0).llen("render") == len(calls), "every render was queued once Redis was back"
        assert [type(outcome).__name__ for outcome in outcomes] == ["TimeoutError"] * len(calls)  # no worker here
    finally:
        server.stop()
