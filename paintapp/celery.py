"""The Celery app: three queues, routed by task name.

- `train`  — the GPU trainer (concurrency 1, on the GPU box)
- `render` — headless Chromium renders (any number of machines)
- `score`  — judges and quality scorers (any number of machines)
"""
from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

app = Celery("paintapp")
app.config_from_object("django.conf:settings", namespace="CELERY")

QUEUES = ("train", "render", "score")
app.conf.task_queues = [Queue(name) for name in QUEUES]
app.conf.task_default_queue = "score"
app.conf.task_routes = {
    "training.tasks.run_training": {"queue": "train"},
    "training.tasks.render_sketch": {"queue": "render"},
    "training.tasks.score_painting": {"queue": "score"},
    "training.tasks.build_run_export": {"queue": "score"},  # never `train`: it would wait behind a run
    "curation.tasks.*": {"queue": "score"},
}


def _time_limits() -> dict:
    # Reading settings needs no app registry, so this is safe at import time.
    from django.conf import settings

    return {
        "training.tasks.run_training": {
            "time_limit": settings.TRAIN_TIME_LIMIT_S,
            "soft_time_limit": settings.TRAIN_TIME_LIMIT_S - 300,
        },
        "training.tasks.render_sketch": {
            "time_limit": settings.RENDER_TIME_LIMIT_S,
            "soft_time_limit": settings.RENDER_TIME_LIMIT_S - 30,
        },
        "training.tasks.score_painting": {
            "time_limit": settings.SCORE_TIME_LIMIT_S,
            "soft_time_limit": settings.SCORE_TIME_LIMIT_S - 30,
        },
    }


app.conf.task_annotations = _time_limits()
app.autodiscover_tasks()

# Registers the System page's inspect command and heartbeat in every worker.
import system.worker_control  # noqa: E402,F401
