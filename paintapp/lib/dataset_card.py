"""Hugging Face dataset cards for the studio's exports, built with huggingface_hub.

Each export keeps its card's Markdown body in a Jinja2 template beside its code; the YAML
metadata (license, tags, task categories, size category, the `configs` that tell
`datasets.load_dataset` which files to read) is a `DatasetCardData`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from django.conf import settings
from huggingface_hub import DatasetCard, DatasetCardData

# The Hub's size categories: (rows below, category).
_SIZE_CATEGORIES = (
    (1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
)


def size_category(rows: int) -> str:
    """The Hub's size category for a dataset of `rows` examples."""
    return next((name for below, name in _SIZE_CATEGORIES if rows < below), "n>1B")


def dataset_card(
    *,
    template: Path,
    pretty_name: str,
    rows: int,
    data_files: str,
    tags: Sequence[str],
    task_categories: Sequence[str],
    more_configs: Mapping[str, str] | None = None,
    **context,
) -> DatasetCard:
    """A card whose config `default` (one `train` split) reads `data_files`, and each of
    `more_configs` ({name: data files}) its own; the body is `template` rendered with
    `context` (and `card_data`, as huggingface_hub passes it)."""
    data = DatasetCardData(
        pretty_name=pretty_name,
        license=settings.DATASET_LICENSE,
        language=["en", "code"],
        size_categories=[size_category(rows)],
        task_categories=list(task_categories),
        tags=list(tags),
        configs=[{"config_name": name, "data_files": [{"split": "train", "path": files}]}
                 for name, files in {"default": data_files, **(more_configs or {})}.items()],
    )
    return DatasetCard.from_template(data, template_path=str(template), **context)
