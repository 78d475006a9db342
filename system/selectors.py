"""Reads for the System page: live workers per queue, queue depth, services, base models."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from paintapp.celery import QUEUES, app
from paintapp.lib.workers import live_workers
from system.capabilities import chromium_info
from training.models import Run
from training.services import default_base_model
from training.trainer.model_loading import accepts_images

# How many of the newest runs' base models the System page lists (besides the default).
RECENT_RUNS = 20


@dataclass
class RunningTask:
    name: str
    task_id: str
    args: str
    age_s: float | None  # None: accepted, not yet started by a pool process


@dataclass
class WorkerInfo:
    hostname: str
    queues: list[str]
    concurrency: int | None
    pid: int | None
    host: str
    chromium: dict
    gpus: list[str]
    torch: str
    running: list[RunningTask] = field(default_factory=list)


@dataclass
class QueueStatus:
    name: str
    depth: int | None
    workers: list[WorkerInfo] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return bool(self.workers)

    @property
    def running_count(self) -> int:
        return sum(len(w.running) for w in self.workers)


@dataclass
class SystemStatus:
    queues: list[QueueStatus]
    database_mode: str
    database_ok: bool
    database_error: str
    broker_mode: str
    broker_ok: bool
    broker_error: str
    chromium: dict
    liveness_source: str  # "inspect" or "heartbeat"
    checked_at: datetime

    @property
    def gpu_on_train(self) -> list[str]:
        train = next(q for q in self.queues if q.name == "train")
        return sorted({gpu for w in train.workers for gpu in w.gpus})

    @property
    def all_alive(self) -> bool:
        return all(q.alive for q in self.queues)


def _to_task(task: dict, now: float) -> RunningTask:
    started = task.get("started_at")
    return RunningTask(
        name=str(task.get("name", "?")).rsplit(".", 1)[-1], task_id=str(task.get("id", "")),
        args=str(task.get("args") or ""), age_s=None if started is None else max(0.0, now - float(started)),
    )


def _to_worker(info: dict, now: float) -> WorkerInfo:
    return WorkerInfo(
        hostname=info.get("hostname", "?"),
        queues=list(info.get("queues", [])),
        concurrency=info.get("concurrency"),
        pid=info.get("pid"),
        host=info.get("host", ""),
        chromium=info.get("chromium", {}),
        gpus=list(info.get("gpus", [])),
        torch=info.get("torch", ""),
        running=[_to_task(task, now) for task in info.get("running", [])],
    )


def queue_depths() -> dict[str, int]:
    depths = {}
    with app.connection_for_read() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        channel = conn.default_channel
        for name in QUEUES:
            try:
                depths[name] = channel.queue_declare(queue=name, passive=True).message_count
            except Exception:  # noqa: BLE001 - a queue nobody declared yet holds nothing
                depths[name] = 0
    return depths


def system_status() -> SystemStatus:
    database_ok, database_error = True, ""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - shown on the page, not raised
        database_ok, database_error = False, str(exc)

    broker_ok, broker_error = True, ""
    depths: dict[str, int] = {}
    workers: list[WorkerInfo] = []
    source = "inspect"
    try:
        depths = queue_depths()
        source, answers = live_workers()
        now = time.time()  # the workers' start times are wall-clock seconds
        workers = [_to_worker(info, now) for info in answers]
    except Exception as exc:  # noqa: BLE001
        broker_ok, broker_error = False, str(exc)

    queues = [
        QueueStatus(name=name, depth=depths.get(name), workers=[w for w in workers if name in w.queues])
        for name in QUEUES
    ]
    return SystemStatus(
        queues=queues,
        database_mode=settings.SERVICES.database_mode,
        database_ok=database_ok,
        database_error=database_error,
        broker_mode=settings.SERVICES.broker_mode,
        broker_ok=broker_ok,
        broker_error=broker_error,
        chromium=chromium_info(settings.CHROMIUM_PATH),
        liveness_source=source,
        checked_at=timezone.now(),
    )


@dataclass
class BaseModel:
    """A base model in use: the launch form's default, or that of a recent run."""

    name: str
    is_default: bool
    runs: int  # of the recent runs, how many train it
    accepts_images: bool | None  # None: its config is not here to read


def base_models_in_use(recent: int = RECENT_RUNS) -> list[BaseModel]:
    """The default base model, then those of the `recent` newest runs (most used first), each
    with whether it reads images, from its config alone (no weights load, nothing downloads)."""
    default = default_base_model()
    counts: dict[str, int] = {default: 0}
    for name in Run.objects.order_by("-created_at").values_list("base_model", flat=True)[:recent]:
        counts[name] = counts.get(name, 0) + 1
    names = [default] + sorted((n for n in counts if n != default), key=lambda n: (-counts[n], n))
    return [BaseModel(name=n, is_default=n == default, runs=counts[n], accepts_images=accepts_images(n)) for n in names]
