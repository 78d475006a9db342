"""Thin Celery task: train one run (queue `train`, routed in paintapp/celery.py).

The render and score tasks live in the painting app (painting/tasks.py).
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from training.trainer import train_run


@shared_task(
    name="training.tasks.run_training", acks_late=True, reject_on_worker_lost=True,
    time_limit=settings.TRAIN_TIME_LIMIT_S, soft_time_limit=settings.TRAIN_TIME_LIMIT_S - 300,
)
def run_training(run_id: int, resume: bool = False) -> str:
    """Train one run to its end, stop or failure. Redelivered after a lost worker, it resumes."""
    return train_run(run_id, resume=resume)
