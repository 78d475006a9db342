"""Curation's references and taste models, as the painting layer's judges need them.

The painting layer sits below curation and cannot import it; `CurationConfig.ready` hands it
this `ReferenceLibrary` instead (painting.judging.use_reference_library).
"""
from __future__ import annotations

from collections.abc import Sequence

from django.core.files.storage import default_storage
from django.db.models import Count

from curation.models import Pool, Reference, TasteModel
from curation.selectors import group_references, pool_get
from curation.taste import taste_model_for
from paintenv.probes import TasteStatus
from painting.judging import PoolInfo


class PoolReferences:
    def images(self, reference_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        stored = dict(Reference.objects.filter(id__in=reference_ids).values_list("id", "image"))
        images = []
        for rid in reference_ids:
            with default_storage.open(stored[rid], "rb") as fh:
                images.append((rid, fh.read()))
        return images

    def taste_model(self, pool_id: int) -> tuple[str, dict]:
        taste = taste_model_for(Pool.objects.get(id=pool_id))
        return taste.created_at.isoformat(), taste.params

    def taste_status(self, pool_id: int) -> TasteStatus:
        pool = Pool.objects.get(id=pool_id)
        tiers = dict(pool.members.filter(split="train").values("tier").annotate(n=Count("id")).values_list("tier", "n"))
        return TasteStatus(pool=pool.label, has_model=TasteModel.objects.filter(pool=pool).exists(), train_tiers=tiers)

    def pool(self, label: str) -> PoolInfo:
        try:
            pool = pool_get(label)
        except (Pool.DoesNotExist, ValueError) as exc:
            raise LookupError(str(exc) or f"no pool {label!r}") from exc
        subject = pool.members.exclude(reference__subject="").values_list("reference__subject", flat=True).first()
        return PoolInfo(id=pool.id, label=pool.label, subject=subject or "")

    def group_references(self, pool_id: int, *, count: int, key: tuple[int, ...]) -> list[int]:
        members = group_references(Pool.objects.get(id=pool_id), count=count, key=key)
        return [m.reference_id for m in members]
