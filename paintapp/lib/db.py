"""Database work that outlasts a PostgreSQL restart.

A long task (the trainer runs for days) keeps its connection across a server restart: the
first query afterwards fails on the dead socket, and while the server is down every query
fails. `outlasting_restarts(work)` drops a dead connection, runs `work`, and on a connection
error waits and runs it again, for up to `patience_s`; after that the error goes to the
caller, which records the failure as before. `work` must be safe to run twice (an upsert, an
update to fixed values, a read) and must not run inside a transaction: a transaction that
lost its connection cannot be resumed halfway.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, close_old_connections, connection

log = logging.getLogger(__name__)
T = TypeVar("T")

# A restart takes seconds; a server gone for longer is an outage the run should report.
PATIENCE_S = 120.0
PAUSE_S = 2.0


def outlasting_restarts(
    work: Callable[[], T], *, what: str, patience_s: float = PATIENCE_S, pause_s: float = PAUSE_S,
    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
) -> T:
    deadline = clock() + patience_s
    while True:
        close_old_connections()  # a connection the server dropped fails its health check here
        try:
            return work()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or clock() + pause_s > deadline:
                raise
            log.warning("database unavailable while %s (%s: %s); trying again in %.0f s",
                        what, type(exc).__name__, str(exc).strip()[:200], pause_s)
            connection.close()
            sleep(pause_s)
