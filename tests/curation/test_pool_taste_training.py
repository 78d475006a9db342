"""Every new pool version, frozen or restored from an export, gets its taste model trained on a
real score worker (queued when the version commits)."""
from __future__ import annotations

import time

import pytest

from curation.export import export_pool
from curation.importing import import_path
from curation.models import Pool, TasteModel
from tests.curation.factories import make_pool

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def taste_model_of(pool: Pool, timeout: float = 90.0) -> TasteModel | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        taste = TasteModel.objects.filter(pool=pool).first()
        if taste is not None:
            return taste
        time.sleep(0.5)
    return None


def test_a_frozen_pool_and_the_pool_restored_from_its_export_both_get_a_taste_model(
    start_worker, curator, django_user_model, tmp_path
):
    start_worker("score")
    frozen = make_pool(curator, name="roses", love=6, okay=6, reject=0, eval_share=0.2, subject="a rose {i}")
    trained = taste_model_of(frozen)
    assert trained is not None and trained.train_pairs > 0

    grace = django_user_model.objects.create_user(username="grace", password="x")
    report = import_path(export_pool(frozen, tmp_path / "export"), curator=grace)
    assert report.pool == "roses:v2"
    restored = Pool.objects.get(name="roses", version=2)
    taste = taste_model_of(restored)
    assert taste is not None, "the restored pool's taste model was never trained"
    assert taste.train_pairs == trained.train_pairs  # same members, same split
