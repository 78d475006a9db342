"""Database work that outlasts a PostgreSQL restart (paintapp.lib.db)."""
from __future__ import annotations

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction

from paintapp.lib.db import outlasting_restarts

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def terminate_own_connection() -> None:
    """What a PostgreSQL restart does to this process's open connection."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    settings = connection.settings_dict
    with psycopg.connect(host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432,
                         user=settings["USER"] or "postgres", dbname="postgres", autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", [pid])


def test_work_after_the_server_dropped_the_connection_runs_on_a_new_one():
    User.objects.create(username="ada")
    terminate_own_connection()
    clock = Clock()
    assert outlasting_restarts(lambda: User.objects.count(), what="counting", clock=clock, sleep=clock.sleep) == 1
    assert clock.sleeps == []  # the dead connection failed its health check: no error, no wait


def test_a_server_that_is_down_is_waited_for_then_the_work_runs():
    clock, calls = Clock(), []

    def work() -> str:
        calls.append(clock.now)
        if len(calls) < 3:
            raise OperationalError("connection refused")
        return "stored"

    assert outlasting_restarts(work, what="storing", pause_s=2.0, clock=clock, sleep=clock.sleep) == "stored"
    assert calls == [0.0, 2.0, 4.0]


def test_a_server_down_longer_than_the_patience_fails_the_work_with_its_error():
    clock = Clock()

    def work():
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError, match="connection refused"):
        outlasting_restarts(work, what="storing", patience_s=10.0, pause_s=2.0, clock=clock, sleep=clock.sleep)
    assert clock.now == 10.0 and len(clock.sleeps) == 5


def test_work_inside_a_transaction_is_never_run_twice():
    clock, calls = Clock(), []

    def work():
        calls.append(1)
        raise OperationalError("connection lost")

    with pytest.raises(OperationalError), transaction.atomic():
        outlasting_restarts(work, what="storing", clock=clock, sleep=clock.sleep)
    assert calls == [1] and clock.sleeps == []
