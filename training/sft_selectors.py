"""Reads of frozen SFT datasets: one by its label, and every one for the datasets page."""
from __future__ import annotations

from django.db.models import Count

from training.models import SftDataset


def sft_dataset_get(label: str) -> SftDataset:
    """`name` (latest version) or `name:VERSION` / `name:vVERSION`; SftDataset.DoesNotExist, or
    ValueError for a version that is not a number."""
    name, _, version = label.partition(":")
    datasets = SftDataset.objects.filter(name=name)
    found = datasets.filter(version=int(version.lstrip("v"))).first() if version else datasets.order_by("-version").first()
    if found is None:
        raise SftDataset.DoesNotExist(f"no SFT dataset {label!r}")
    return found


def sft_datasets():
    """Every frozen SFT dataset, newest first, with its pool and run count."""
    return SftDataset.objects.select_related("pool", "created_by").annotate(run_count=Count("runs")).order_by(
        "-created_at")
