"""Thin Celery tasks for curation (queue `score`: they need the image-feature code)."""
from __future__ import annotations

from celery import shared_task

from curation.models import Pool


@shared_task(name="curation.tasks.train_taste_model", acks_late=True)
def train_taste_model(pool_id: int) -> dict:
    from curation.taste import taste_model_train

    taste = taste_model_train(pool=Pool.objects.get(id=pool_id))
    return {"pool_id": pool_id, "accuracy": taste.accuracy, "train_pairs": taste.train_pairs}
