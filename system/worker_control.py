"""Worker-side hooks for the System page.

- `paintapp_capabilities`: a Celery inspect command answering with the worker's queues,
  pool size, Chromium, GPUs and running tasks; its reply doubles as the liveness ping.
- With a broker that cannot broadcast (the embedded SQLAlchemy transport), workers write a
  heartbeat file every few seconds instead. paintapp/lib/workers.py reads both.
"""
from __future__ import annotations

import json
import os
import threading
import time

from celery.signals import worker_ready, worker_shutdown
from celery.worker import state as worker_state
from celery.worker.control import inspect_command
from django.conf import settings

from paintapp.lib.workers import HEARTBEAT_INTERVAL_S, broker_broadcasts, heartbeat_dir
from system.capabilities import capabilities


def _queues_of(consumer) -> list[str]:
    try:
        return sorted(q.name for q in consumer.task_consumer.queues)
    except AttributeError:
        return []


def _pool_size(consumer) -> int | None:
    try:
        return int(consumer.pool.num_processes)
    except (AttributeError, TypeError, ValueError):
        return None


def running_tasks() -> list[dict]:
    """The tasks this worker is executing: name, id, arguments as Celery abbreviates them, and
    when each started (wall-clock seconds; None while a pool process has not yet taken it)."""
    return [
        {"name": request.name, "id": request.id, "args": request.argsrepr, "started_at": request.time_start}
        for request in list(worker_state.active_requests)
    ]


def describe_worker(consumer) -> dict:
    return {
        "hostname": consumer.hostname,
        "queues": _queues_of(consumer),
        "concurrency": _pool_size(consumer),
        "running": running_tasks(),
        **capabilities(settings.CHROMIUM_PATH),
    }


@inspect_command()
def paintapp_capabilities(state) -> dict:
    return describe_worker(state.consumer)


_stop = threading.Event()


def connect_signals() -> None:
    worker_ready.connect(_start_heartbeat, weak=False, dispatch_uid="system.heartbeat.start")
    worker_shutdown.connect(_stop_heartbeat, weak=False, dispatch_uid="system.heartbeat.stop")


def _start_heartbeat(sender=None, **_kwargs) -> None:
    if broker_broadcasts():
        return
    consumer = sender
    directory = heartbeat_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{consumer.hostname}.json"

    def beat() -> None:
        info = describe_worker(consumer)
        while not _stop.is_set():
            info["seen_at"] = time.time()
            info["running"] = running_tasks()
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(info))
            os.replace(tmp, path)
            _stop.wait(HEARTBEAT_INTERVAL_S)
        path.unlink(missing_ok=True)

    threading.Thread(target=beat, name="paintapp-heartbeat", daemon=True).start()


def _stop_heartbeat(**_kwargs) -> None:
    _stop.set()
