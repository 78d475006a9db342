"""Export a frozen pool as a Hugging Face dataset: a folder or a zip of it.

The export is a Hugging Face `imagefolder` (metadata.jsonl + images/<sha256>.png), the same
rows with the PNG bytes as pool.parquet, and pool.json, which describes the pool so that
importing the export (curation.importing) restores it.
"""
from __future__ import annotations

import io
import json
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
from django.core.files.storage import default_storage
from django.utils import timezone

from curation.archive import EXPORT_FORMAT, EXPORT_FORMAT_VERSION, METADATA_FILE, PARQUET_FILE, POOL_FILE
from curation.models import Pool
from curation.services import CurationError
from paintapp.storage import sha256_hex

Progress = Callable[[int, int, str], None]

EXPORT_COLUMNS = (
    "file_name", "sha256", "tier", "split", "subject", "source", "seed", "provenance", "original_name",
)


def export_rows(pool: Pool) -> list[dict]:
    """One metadata row per member, in sha256 order (stable whatever the database ids)."""
    members = pool.members.select_related("reference").order_by("reference__sha256")
    return [
        {
            "file_name": f"images/{m.reference.sha256}.png", "sha256": m.reference.sha256, "tier": m.tier,
            "split": m.split, "subject": m.reference.subject, "source": m.reference.source,
            "seed": m.reference.seed, "provenance": m.reference.provenance,
            "original_name": m.reference.original_name,
            "_image": m.reference.image,
        }
        for m in members
    ]


def pool_document(pool: Pool, rows: list[dict]) -> dict:
    return {
        "format": EXPORT_FORMAT, "format_version": EXPORT_FORMAT_VERSION,
        "name": pool.name, "version": pool.version, "label": pool.label, "description": pool.description,
        "curator": pool.curator.get_username(), "tiers": pool.tiers, "filters": pool.filters,
        "eval_share": pool.eval_share, "split_seed": pool.split_seed,
        "created_at": pool.created_at.isoformat(), "exported_at": timezone.now().isoformat(),
        "member_count": len(rows),
        "by_tier": dict(sorted(Counter(row["tier"] for row in rows).items())),
        "by_split": dict(sorted(Counter(row["split"] for row in rows).items())),
        "files": {"metadata": METADATA_FILE, "parquet": PARQUET_FILE, "images": "images/"},
    }


def _parquet_schema() -> pa.Schema:
    features = {column: {"dtype": "string", "_type": "Value"} for column in EXPORT_COLUMNS}
    features["seed"] = {"dtype": "int64", "_type": "Value"}
    features["image"] = {"_type": "Image"}
    fields = [pa.field(column, pa.int64() if column == "seed" else pa.string()) for column in EXPORT_COLUMNS]
    # Hugging Face's own Image encoding (PNG bytes + path); the `huggingface` schema key lets
    # `datasets` hand back decoded images.
    fields.append(pa.field("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])))
    return pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})


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


def _write_export(pool: Pool, add_bytes: Callable[[str, bytes], None], parquet_path: Path,
                  progress: Progress | None) -> dict:
    rows = export_rows(pool)
    schema = _parquet_schema()
    batch: list[dict] = []
    with pq.ParquetWriter(parquet_path, schema, compression="zstd") as writer:
        for done, row in enumerate(rows, start=1):
            png = _stored_png(row)
            add_bytes(row["file_name"], png)
            image = {"bytes": png, "path": row["file_name"]}
            batch.append({**{c: row[c] for c in EXPORT_COLUMNS}, "image": image})
            if len(batch) == 32:  # keep memory to a few dozen images whatever the pool size
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
            if progress:
                progress(done, len(rows), row["file_name"])
        if batch or not rows:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    lines = [json.dumps({c: row[c] for c in EXPORT_COLUMNS}, ensure_ascii=False) for row in rows]
    add_bytes(METADATA_FILE, ("\n".join(lines) + "\n").encode())
    document = pool_document(pool, rows)
    add_bytes(POOL_FILE, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
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


def export_pool_zip(pool: Pool, *, progress: Progress | None = None) -> bytes:
    """The export as zip bytes, for the download button."""
    buffer = io.BytesIO()
    write_pool_zip(pool, buffer, progress=progress)
    return buffer.getvalue()
