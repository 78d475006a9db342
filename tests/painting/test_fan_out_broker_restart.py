"""The render and score fan-out across a broker restart: a stage sent while Redis is away
waits for it and loses no task (a private redis-server; no worker is needed)."""
from __future__ import annotations

import gc
import threading

from painting.pipeline import Workers
from tests.support.services import RedisServer, celery_pointed_at

CALLS = [{"code": "function setup() {}", "seed": i, "size": 128} for i in range(3)]


def render_across_a_restart(server: RedisServer, outage_s: float) -> list[str]:
    """Send a render stage while the broker is down for `outage_s`; the outcomes' kinds."""
    Workers().render(CALLS[:1], deadline_s=0.1, progress=lambda done: None)  # the trainer's connections are warm
    server.client(0).flushdb()
    server.stop()
    back = threading.Timer(outage_s, server.start)
    back.start()
    outcomes = Workers().render(CALLS, deadline_s=0.5, progress=lambda done: None)
    back.join()
    return [type(outcome).__name__ for outcome in outcomes]


def test_a_stage_sent_while_the_broker_restarts_waits_for_it_and_loses_no_task(tmp_path):
    server = RedisServer(folder=tmp_path / "redis").start()
    try:
        with celery_pointed_at(server.url(0), server.url(1)):
            outcomes = render_across_a_restart(server, outage_s=1.5)
            gc.collect()  # the stage's results unsubscribe while their Redis still answers
        assert server.client(0).llen("render") == len(CALLS), "every render was queued once Redis was back"
        assert outcomes == ["GivenUp"] * len(CALLS)  # no render worker runs here: revoked at the deadline
    finally:
        server.stop()
