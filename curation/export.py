"""Export a frozen pool as a Hugging Face dataset: a folder, or a zip of one.

    images/<sha256>.png   every member's normalised PNG
    metadata.jsonl        one row per member: a Hugging Face `imagefolder`
    pool.parquet          the same rows with the PNG bytes as an `image` column
    pool.json             the pool's settings, read back by curation.importing to restore it
    README.md             dataset card (its config points `load_dataset` at pool.parquet)

The columns are declared once, as `datasets.Features`, and the parquet is written through
`datasets`; the card is a huggingface_hub DatasetCard.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from datasets import Features, Image, Value
from datasets.arrow_writer import ParquetWriter
from django.core.files.storage import default_storage
from django.utils import timezone
from huggingface_hub import DatasetCard

from curation.archive import (
    CARD_FILE,
    EXPORT_FORMAT,
    EXPORT_FORMAT_VERSION,
    METADATA_FILE,
    PARQUET_FILE,
    POOL_FILE,
)
from curation.errors import CurationError
from curation.models import Pool, PoolExport
from paintapp.lib.dataset_card import dataset_card
from paintapp.lib.exports import export_build
from paintapp.lib.storage import sha256_hex

Progress = Callable[[int, int, str], None]

CARD_TEMPLATE = Path(__file__).with_name("export_card.md.jinja")
BATCH_ROWS = 32  # one parquet row group: at most this many images in memory at once

# (column, feature, what it holds): the one declaration of the export's columns.
COLUMNS = (
    ("file_name", Value("string"), "the image in the folder: `images/<sha256>.png`"),
    ("sha256", Value("string"), "sha256 of the normalised PNG (sRGB, alpha flattened on white)"),
    ("tier", Value("string"), "the curator's grade, copied when the pool was frozen: love, okay or reject"),
    ("split", Value("string"), "`train` (the reward's references) or `eval` (held out)"),
    ("subject", Value("string"), "what the painting shows"),
    ("source", Value("string"), "the p5.brush sketch that painted it, when known"),
    ("seed", Value("int64"), "the render seed of the sketch, when known"),
    ("provenance", Value("string"), "where it came from: seed-generator, upload, import or rollout"),
    ("original_name", Value("string"), "the file name it was first imported under"),
    ("graders", Value("int16"), "curators who had graded it when the pool was frozen (1 for one curator's pool)"),
    ("agreed", Value("int16"), "of them, how many gave `tier` (a consensus pool's agreement on it)"),
    ("image", Image(), "the PNG itself (pool.parquet only; the folder has it under file_name)"),
)
POOL_FEATURES = Features({name: feature for name, feature, _ in COLUMNS})
METADATA_COLUMNS = tuple(name for name in POOL_FEATURES if name != "image")


def export_rows(pool: Pool) -> list[dict]:
    """One metadata row per member, in sha256 order (stable whatever the database ids)."""
    members = pool.members.select_related("reference").order_by("reference__sha256")
    return [
        {
            "file_name": f"images/{m.reference.sha256}.png", "sha256": m.reference.sha256, "tier": m.tier,
            "split": m.split, "subject": m.reference.subject, "source": m.reference.source,
            "seed": m.reference.seed, "provenance": m.reference.provenance,
            "original_name": m.reference.original_name, "graders": m.graders, "agreed": m.agreed,
            "_image": m.reference.image,
        }
        for m in members
    ]


def pool_document(pool: Pool, rows: list[dict]) -> dict:
    return {
        "format": EXPORT_FORMAT, "format_version": EXPORT_FORMAT_VERSION,
        "name": pool.name, "version": pool.version, "label": pool.label, "description": pool.description,
        "curator": pool.curator.get_username(), "tiers": pool.tiers, "filters": pool.filters,
        "graders": sorted(user.get_username() for user in pool.graders.all()), "consensus": pool.consensus,
        "eval_share": pool.eval_share, "split_seed": pool.split_seed,
        "created_at": pool.created_at.isoformat(), "exported_at": timezone.now().isoformat(),
        "member_count": len(rows),
        "by_tier": dict(sorted(Counter(row["tier"] for row in rows).items())),
        "by_split": dict(sorted(Counter(row["split"] for row in rows).items())),
        "files": {"metadata": METADATA_FILE, "parquet": PARQUET_FILE, "images": "images/", "card": CARD_FILE},
    }


def _stored_png(row: dict) -> bytes:
    try:
        with default_storage.open(row["_image"], "rb") as handle:
            png = handle.read()
    except OSError as exc:
        raise CurationError(
            f"the stored image of {row['sha256'][:12]}… cannot be read ({exc}); export stopped"
        ) from exc
    if sha256_hex(png) != row["sha256"]:
        raise CurationError(
            f"the stored image of {row['sha256'][:12]}… does not match its sha256; export stopped"
        )
    return png


def _card(pool: Pool, document: dict) -> DatasetCard:
    return dataset_card(
        template=CARD_TEMPLATE, pretty_name=f"{pool.label} watercolour reference pool",
        rows=document["member_count"], data_files=PARQUET_FILE,
        tags=("watercolour", "p5.js", "reward-model", "preference"),
        task_categories=("image-classification",),
        pool=pool, document=document, columns=[(name, description) for name, _, description in COLUMNS],
        files=document["files"],
    )


def _write_export(pool: Pool, add_bytes: Callable[[str, bytes], None], parquet_path: Path,
                  progress: Progress | None) -> dict:
    rows = export_rows(pool)
    parquet = ParquetWriter(features=POOL_FEATURES, path=str(parquet_path), writer_batch_size=BATCH_ROWS)
    with parquet as writer:
        for done, row in enumerate(rows, start=1):
            png = _stored_png(row)
            add_bytes(row["file_name"], png)
            image = {"bytes": png, "path": row["file_name"]}
            writer.write({**{column: row[column] for column in METADATA_COLUMNS}, "image": image})
            if progress:
                progress(done, len(rows), row["file_name"])
        writer.finalize()
    lines = [json.dumps({c: row[c] for c in METADATA_COLUMNS}, ensure_ascii=False) for row in rows]
    add_bytes(METADATA_FILE, ("\n".join(lines) + "\n").encode())
    document = pool_document(pool, rows)
    add_bytes(POOL_FILE, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
    add_bytes(CARD_FILE, str(_card(pool, document)).encode())
    return document


def export_pool(pool: Pool, out_dir: Path, *, progress: Progress | None = None) -> Path:
    """Write the pool to `out_dir` (new or empty). Written beside it first, then renamed in
    place, so a failed export never leaves a half-written folder that looks complete."""
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise CurationError(f"{out_dir} already exists and is not an empty folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        (staging / "images").mkdir()

        def add_bytes(name: str, data: bytes) -> None:
            (staging / name).write_bytes(data)

        _write_export(pool, add_bytes, staging / PARQUET_FILE, progress)
        if out_dir.exists():
            out_dir.rmdir()
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def write_pool_zip(pool: Pool, fileobj: BinaryIO, *, progress: Progress | None = None) -> dict:
    """Stream the export as a zip into a writable file object; returns pool.json's content."""
    with tempfile.TemporaryDirectory(prefix="pool-export-") as scratch, \
            zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def add_bytes(name: str, data: bytes) -> None:
            # PNGs are already compressed: store them as they are.
            method = zipfile.ZIP_STORED if name.endswith(".png") else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=method)

        parquet_path = Path(scratch) / PARQUET_FILE
        document = _write_export(pool, add_bytes, parquet_path, progress)
        archive.write(parquet_path, PARQUET_FILE, compress_type=zipfile.ZIP_STORED)
    return document


def pool_zip_name(pool: Pool) -> str:
    """File name of the pool's export zip: `<name>-v<version>.zip`."""
    return f"{pool.name}-v{pool.version}.zip"


def pool_export_build(*, export: PoolExport) -> PoolExport:
    """Build a requested export's zip (on a score worker) with progress, and store it."""
    pool = export.pool
    return export_build(
        export, file_name=pool_zip_name(pool), expected=(CurationError,),
        write=lambda fileobj, progress: write_pool_zip(pool, fileobj, progress=progress),
    )
