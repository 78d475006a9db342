"""Which Celery workers answer, per queue, in both modes.

- With a broker that broadcasts (Redis), every worker answers the `paintapp_capabilities`
  inspect command (registered by system/worker_control.py) with its queues and more.
- With kombu's SQLAlchemy transport (the embedded mode), which cannot broadcast, each worker
  writes a heartbeat file under VAR_DIR/heartbeats every HEARTBEAT_INTERVAL_S; one older than
  three intervals is a dead worker.

The System page shows these workers; launching a run, the trainer's wait for workers, the
periodic resume of waiting runs and `seed_pool` ask which queues answer.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from paintapp.celery import QUEUES, app

HEARTBEAT_INTERVAL_S = 2.0
HEARTBEAT_STALE_S = HEARTBEAT_INTERVAL_S * 3
INSPECT_TIMEOUT_S = 1.0
# A worker answers a broadcast from its main process, between its other work: on a busy box
# (2 cores, a training step and Chromium renders at once) a live worker can take seconds.
PATIENT_INSPECT_TIMEOUT_S = 5.0

# How to start a worker for each queue (the Makefile's targets).
START_HINT = {queue: f"make worker-{queue}" for queue in QUEUES}


def heartbeat_dir() -> Path:
    return Path(settings.VAR_DIR) / "heartbeats"


def broker_broadcasts() -> bool:
    # Redis and AMQP fan out control messages; kombu's SQLAlchemy transport cannot.
    with app.connection_for_read() as conn:
        return "fanout" in conn.transport.implements.exchange_type


def workers_by_inspect(timeout: float = INSPECT_TIMEOUT_S) -> list[dict]:
    """Each answering worker's description (hostname, queues, ...), asked over the broker."""
    replies = app.control.broadcast("paintapp_capabilities", reply=True, timeout=timeout) or []
    return [
        {"hostname": hostname, **info}
        for reply in replies for hostname, info in reply.items()
        if isinstance(info, dict) and "queues" in info
    ]


def workers_by_heartbeat(now: float | None = None) -> list[dict]:
    """Each worker whose heartbeat file is fresh (the embedded mode)."""
    now = time.time() if now is None else now
    directory = heartbeat_dir()
    workers = []
    for path in sorted(directory.glob("*.json")) if directory.exists() else []:
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced, or torn: the next beat rewrites it
        if now - float(info.get("seen_at", 0)) <= HEARTBEAT_STALE_S:
            workers.append(info)
    return workers


def live_workers(timeout: float = INSPECT_TIMEOUT_S) -> tuple[str, list[dict]]:
    """("inspect" or "heartbeat", the workers that answer). Raises when the broker is down."""
    if broker_broadcasts():
        return "inspect", workers_by_inspect(timeout)
    return "heartbeat", workers_by_heartbeat()


def answering_queues(*, wanted: Iterable[str] = ()) -> set[str]:
    """The queues at least one live worker consumes; empty when the broker cannot be reached.

    When one of `wanted` has no answer within INSPECT_TIMEOUT_S, the workers are asked once
    more with PATIENT_INSPECT_TIMEOUT_S before that queue counts as missing: a busy worker's
    late answer must not turn into a refused launch or command. (Heartbeats are files, with
    no late answers; a broker that is down is not asked twice.)"""
    try:
        source, workers = live_workers()
        queues = _queues_of(workers)
        if set(wanted) - queues and source == "inspect":
            queues |= _queues_of(live_workers(PATIENT_INSPECT_TIMEOUT_S)[1])
    except Exception:  # noqa: BLE001 - a broker that is down answers for no queue
        return set()
    return queues


def _queues_of(workers: list[dict]) -> set[str]:
    return {queue for worker in workers for queue in worker.get("queues", [])}


def missing_worker_message(queue: str) -> str:
    hint = START_HINT.get(queue) or ("make worker-score-gpu" if queue == settings.GPU_SCORE_QUEUE else "make workers")
    return f"no worker answers on the `{queue}` queue — start one with `{hint}`"
