"""Import references (folders, zips, web uploads) and export frozen pools.

Import rules, the same for every way in:
- every image is read, validated and normalised before anything is stored, then stored
  whole (file + Reference + the importing curator's grade, one transaction) or reported
  with its error — never half-stored;
- a duplicate (same normalised sha256 as a stored reference, or as an earlier file of the
  same import) is reported as `duplicate` and stored once; its tier IS applied as the
  curator's grade, because re-importing a graded folder is how grades move between
  studios (every change is still a GradeEvent, so an overwritten grade can be traced);
- archives are read entry by entry in memory, never extracted; an unsafe archive (path
  traversal, absolute names, links, too many entries, too big, a zip bomb) or unreadable
  metadata refuses the whole source, and nothing of it is stored.

Export writes a Hugging Face `imagefolder` (metadata.jsonl + images/<sha256>.png), the same
rows with the PNG bytes as pool.parquet, and pool.json. Importing an export (recognised by
its pool.json) restores the pool — same members, tiers and splits — as the next version of
its name, held by the importing curator.
"""
from __future__ import annotations

import csv
import io
import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from curation import images
from curation.images import ImageRejected, normalise_image
from curation.models import Pool, PoolMember, Provenance, Reference, Split, Tier
from curation.services import CurationError, grade_set, reference_create
from paintapp.storage import human_size, sha256_hex

Progress = Callable[[int, int, str], None]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff"})
SIDECAR_SUFFIX = ".js"
METADATA_FILE = "metadata.jsonl"
GRADES_FILE = "grades.csv"
POOL_FILE = "pool.json"
PARQUET_FILE = "pool.parquet"
EXPORT_FORMAT = "paintapp-pool"
EXPORT_FORMAT_VERSION = 1
EXPORT_COLUMNS = (
    "file_name", "sha256", "tier", "split", "subject", "source", "seed", "provenance", "original_name",
)
METADATA_FIELDS = ("tier", "split", "subject", "source", "seed", "provenance", "sha256", "original_name")
_JUNK_NAMES = frozenset({"Thumbs.db", "desktop.ini", "__MACOSX"})
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SEED_RANGE = (-(2**63), 2**63 - 1)  # BigIntegerField


@dataclass(frozen=True)
class ImportLimits:
    """Caps that keep a hostile or mistaken import from exhausting memory, disk or time."""

    max_entries: int = 20_000
    max_total_bytes: int = 2 * 1024**3
    max_image_bytes: int = images.MAX_BYTES
    max_image_pixels: int = images.MAX_PIXELS
    max_sidecar_bytes: int = 1024**2
    max_metadata_bytes: int = 512 * 1024**2  # an export's metadata.jsonl holds every sketch source
    # Deflate tops out near 1000:1, and real images and text stay far below 200:1 at any
    # size worth checking; above that an entry is built to blow up.
    max_compression_ratio: float = 200.0
    ratio_check_from_bytes: int = 8 * 1024**2


DEFAULT_LIMITS = ImportLimits()


class SourceRefused(CurationError):
    """The whole folder or archive is refused before anything of it is stored."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class _FileProblem(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# --- The report ---------------------------------------------------------------------------

@dataclass
class ImportRow:
    name: str
    status: str  # created | duplicate | rejected | skipped
    code: str = ""
    message: str = ""
    reference_id: int | None = None
    tier: str = ""  # the grade this import gave the curator, if any


@dataclass
class ImportReport:
    rows: list[ImportRow] = field(default_factory=list)
    pool: str = ""  # label of the restored pool
    pool_error: str = ""
    refused: bool = False  # a whole source was refused (see the rejected rows)

    def _count(self, status: str) -> int:
        return sum(1 for row in self.rows if row.status == status)

    @property
    def created(self) -> int:
        return self._count("created")

    @property
    def duplicates(self) -> int:
        return self._count("duplicate")

    @property
    def rejected(self) -> int:
        return self._count("rejected")

    @property
    def skipped(self) -> int:
        return self._count("skipped")

    @property
    def graded(self) -> int:
        return sum(1 for row in self.rows if row.tier)

    @property
    def problems(self) -> list[ImportRow]:
        return [row for row in self.rows if row.status == "rejected"]

    def to_dict(self) -> dict:
        return {
            "created": self.created, "duplicates": self.duplicates, "graded": self.graded,
            "rejected": self.rejected, "skipped": self.skipped, "refused": self.refused,
            "pool": self.pool or None, "pool_error": self.pool_error or None,
            "rows": [asdict(row) for row in self.rows],
        }

    def summary(self) -> str:
        text = (
            f"{self.created} created, {self.duplicates} duplicate{'s' * (self.duplicates != 1)}, "
            f"{self.graded} graded, {self.rejected} rejected"
        )
        if self.skipped:
            text += f", {self.skipped} skipped"
        if self.pool:
            text += f"; pool {self.pool} restored"
        elif self.pool_error:
            text += "; pool NOT restored"
        return text


# --- Where entries come from ------------------------------------------------------------

@dataclass
class _Entry:
    path: str  # posix path relative to the import root
    size: int  # declared size; reads never return more
    opener: Callable[[], BinaryIO]

    def read(self, limit: int, what: str) -> bytes:
        if self.size > limit:
            raise _FileProblem(
                "too_large", f"{self.path} is {human_size(self.size)}; the limit for {what} is {human_size(limit)}"
            )
        try:
            with self.opener() as handle:
                data = handle.read(limit + 1)
        except Exception as exc:  # zlib, lzma, bz2 and zipfile each raise their own errors on bad data
            raise _FileProblem("unreadable", f"{self.path} could not be read: {exc}") from exc
        if len(data) > limit:  # the file grew, or an archive lied about its size
            raise _FileProblem("too_large", f"{self.path} is over the limit for {what} ({human_size(limit)})")
        return data


def _folder_entries(root: Path, report: ImportReport, limits: ImportLimits) -> list[_Entry]:
    entries: list[_Entry] = []
    for directory, subdirectories, files in os.walk(root, followlinks=False):
        for linked in sorted(d for d in subdirectories if (Path(directory) / d).is_symlink()):
            relative = (Path(directory) / linked).relative_to(root).as_posix()
            report.rows.append(
                ImportRow(relative, "rejected", "symlink", f"{relative} is a linked folder; not read")
            )
        subdirectories[:] = sorted(d for d in subdirectories if not _is_junk(d))
        for file_name in sorted(files):
            if _is_junk(file_name):
                continue
            full = Path(directory) / file_name
            relative = full.relative_to(root).as_posix()
            if full.is_symlink() or not full.is_file():
                # A link could point anywhere on the server: never follow it.
                report.rows.append(ImportRow(
                    relative, "rejected", "symlink", f"{relative} is a link or special file; not read"
                ))
                continue
            entries.append(_Entry(relative, full.stat().st_size, lambda full=full: open(full, "rb")))
            if len(entries) > limits.max_entries:
                raise SourceRefused("too_many_entries", f"{root} holds more than {limits.max_entries} files")
    total = sum(entry.size for entry in entries)
    if total > limits.max_total_bytes:
        raise SourceRefused(
            "too_large", f"{root} holds {human_size(total)}; the limit is {human_size(limits.max_total_bytes)}"
        )
    return entries


def _zip_entries(
    archive: zipfile.ZipFile, *, label: str, archive_size: int, limits: ImportLimits
) -> list[_Entry]:
    """Check the whole central directory before a single entry is decompressed."""
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise SourceRefused(
            "too_many_entries", f"{label} has {len(infos)} entries; the limit is {limits.max_entries}"
        )
    total = sum(info.file_size for info in infos)
    if total > limits.max_total_bytes:
        raise SourceRefused(
            "too_large", f"{label} expands to {human_size(total)}; the limit is {human_size(limits.max_total_bytes)}"
        )
    compressed = sum(info.compress_size for info in infos)
    if total > limits.ratio_check_from_bytes and total / max(compressed, 1) > limits.max_compression_ratio:
        ratio = total / max(compressed, 1)
        raise SourceRefused(
            "zip_bomb",
            f"{label} expands {ratio:.0f}× ({human_size(compressed)} → {human_size(total)}), a zip bomb; refused",
        )
    if compressed > archive_size:
        # Entries that share compressed data (overlapping-entry zip bombs) claim more
        # compressed bytes than the archive holds.
        raise SourceRefused("zip_bomb", f"{label} has overlapping entries (a zip bomb); refused")
    for info in infos:
        _check_zip_name(info, label)
        if info.file_size > limits.ratio_check_from_bytes:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.max_compression_ratio:
                raise SourceRefused(
                    "zip_bomb",
                    f"{label}: {info.filename} expands {ratio:.0f}× ({human_size(info.compress_size)} → "
                    f"{human_size(info.file_size)}), a zip bomb; refused",
                )

    entries: list[_Entry] = []
    for info in infos:
        if info.is_dir() or any(_is_junk(part) for part in info.filename.split("/")):
            continue
        if info.flag_bits & 0x1:
            raise SourceRefused("encrypted", f"{label}: {info.filename} is encrypted; import it unencrypted")
        path = posixpath.normpath(info.filename)
        entries.append(_Entry(path, info.file_size, lambda info=info: archive.open(info)))
    return entries


def _check_zip_name(info: zipfile.ZipInfo, label: str) -> None:
    name = info.filename
    unsafe = (
        name.startswith(("/", "\\"))
        or re.match(r"^[A-Za-z]:", name) is not None
        or "\\" in name
        or "\x00" in name
        or ".." in name.split("/")
    )
    if unsafe:
        raise SourceRefused("unsafe_path", f"{label}: entry {name!r} is not a safe relative name; refused")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise SourceRefused("symlink", f"{label}: entry {name!r} is a symbolic link; refused")


def _is_junk(name: str) -> bool:
    return name.startswith(".") or name in _JUNK_NAMES


# --- Metadata -------------------------------------------------------------------------------

@dataclass
class _Plan:
    images: dict[str, _Entry]
    sidecars: dict[str, _Entry]  # image path -> .js entry
    metadata: dict[str, dict]  # image path -> merged fields
    metadata_origin: dict[str, str]  # image path -> directory of the metadata.jsonl that listed it
    listed_missing: list[str]
    pool_document: dict | None
    pool_directory: str
    problems: dict[str, _FileProblem]  # image path -> a problem found while planning


def _plan(entries: list[_Entry], limits: ImportLimits, report: ImportReport) -> _Plan:
    by_path: dict[str, _Entry] = {}
    for entry in entries:
        if entry.path in by_path:
            report.rows.append(ImportRow(
                entry.path, "rejected", "duplicate_name", f"{entry.path} appears twice; the first was used"
            ))
            continue
        by_path[entry.path] = entry

    image_entries = {p: e for p, e in by_path.items() if posixpath.splitext(p)[1].lower() in IMAGE_SUFFIXES}
    plan = _Plan(images=image_entries, sidecars={}, metadata={}, metadata_origin={}, listed_missing=[],
                 pool_document=None, pool_directory="", problems={})
    stems = {posixpath.splitext(p)[0]: p for p in image_entries}
    basenames = Counter(posixpath.basename(p) for p in image_entries)
    pool_files = sorted(
        (p for p in by_path if posixpath.basename(p) == POOL_FILE), key=lambda p: (p.count("/"), p)
    )  # the shallowest pool.json describes the pool

    for path, entry in sorted(by_path.items()):
        base = posixpath.basename(path)
        suffix = posixpath.splitext(path)[1].lower()
        if path in image_entries:
            continue
        if suffix == SIDECAR_SUFFIX and posixpath.splitext(path)[0] in stems:
            plan.sidecars[stems[posixpath.splitext(path)[0]]] = entry
        elif base == METADATA_FILE:
            for image_path, fields in _read_metadata_jsonl(entry, limits):
                image_path = _resolve(image_path, image_entries, basenames)
                _merge(plan, image_path, fields, origin=posixpath.dirname(path))
        elif base == GRADES_FILE:
            for image_path, fields in _read_grades_csv(entry, limits):
                _merge(plan, _resolve(image_path, image_entries, basenames), fields, origin=None)
        elif base == POOL_FILE:
            if path == pool_files[0]:
                plan.pool_document = _read_pool_document(entry, limits)
                plan.pool_directory = posixpath.dirname(path)
            else:
                report.rows.append(
                    ImportRow(path, "skipped", "extra_pool_file", f"only {pool_files[0]} describes the pool")
                )
        elif base == PARQUET_FILE or suffix in {".md", ".txt"}:
            continue  # an export's own companions, or notes: nothing to import
        elif suffix == SIDECAR_SUFFIX:
            report.rows.append(
                ImportRow(path, "skipped", "orphan_sketch", f"{path} has no image with the same name")
            )
        else:
            report.rows.append(ImportRow(
                path, "skipped", "unsupported_file", f"{path} is not an image, sketch or metadata file"
            ))
    plan.listed_missing = sorted(p for p in plan.metadata if p not in image_entries)
    return plan


def _resolve(listed: str, image_entries: dict[str, _Entry], basenames: Counter) -> str:
    # A name without a folder may mean the one image of that name wherever it lies.
    if listed not in image_entries and "/" not in listed and basenames.get(listed) == 1:
        return next(p for p in image_entries if posixpath.basename(p) == listed)
    return listed


def _merge(plan: _Plan, image_path: str, fields: dict, *, origin: str | None) -> None:
    merged = plan.metadata.setdefault(image_path, {})
    for key, value in fields.items():
        known = merged.get(key)
        if known not in ("", None) and value not in ("", None) and known != value:
            plan.problems.setdefault(image_path, _FileProblem(
                "conflicting_metadata", f"{image_path}: {key} is both {known!r} and {value!r} in the metadata"
            ))
        if value not in ("", None) or key not in merged:
            merged[key] = value
    if origin is not None:
        plan.metadata_origin.setdefault(image_path, origin)


def _listed_path(directory: str, file_name: object, where: str) -> str:
    if not isinstance(file_name, str) or not file_name.strip():
        raise SourceRefused("bad_metadata", f"{where}: file_name must be a non-empty string")
    path = posixpath.normpath(posixpath.join(directory, file_name.strip().replace("\\", "/")))
    if path.startswith(("/", "../")) or path == "..":
        raise SourceRefused("bad_metadata", f"{where}: file_name {file_name!r} points outside the import")
    return path


def _read_text(entry: _Entry, limit: int) -> str:
    try:
        return entry.read(limit, "metadata").decode("utf-8-sig")
    except _FileProblem as exc:
        raise SourceRefused("bad_metadata", exc.message) from exc
    except UnicodeDecodeError as exc:
        raise SourceRefused("bad_metadata", f"{entry.path} is not UTF-8 text") from exc


def _read_metadata_jsonl(entry: _Entry, limits: ImportLimits) -> Iterable[tuple[str, dict]]:
    directory = posixpath.dirname(entry.path)
    for number, line in enumerate(_read_text(entry, limits.max_metadata_bytes).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{entry.path} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceRefused("bad_metadata", f"{where} is not JSON: {exc.msg}") from exc
        if not isinstance(row, dict):
            raise SourceRefused("bad_metadata", f"{where} is not a JSON object")
        path = _listed_path(directory, row.get("file_name"), where)
        yield path, {key: value for key, value in row.items() if key != "file_name"}


def _read_grades_csv(entry: _Entry, limits: ImportLimits) -> Iterable[tuple[str, dict]]:
    directory = posixpath.dirname(entry.path)
    reader = csv.DictReader(io.StringIO(_read_text(entry, limits.max_metadata_bytes)))
    if not reader.fieldnames or not {"file_name", "tier"} <= {f.strip() for f in reader.fieldnames}:
        raise SourceRefused("bad_metadata", f"{entry.path} needs the columns file_name,tier")
    for number, row in enumerate(reader, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        path = _listed_path(directory, row.get("file_name"), f"{entry.path} line {number}")
        yield path, {"tier": row.get("tier", "")}


def _read_pool_document(entry: _Entry, limits: ImportLimits) -> dict:
    try:
        document = json.loads(_read_text(entry, limits.max_metadata_bytes))
    except json.JSONDecodeError as exc:
        raise SourceRefused("bad_metadata", f"{entry.path} is not JSON: {exc.msg}") from exc
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
        raise SourceRefused("bad_metadata", f"{entry.path} is not a {EXPORT_FORMAT} description")
    version = document.get("format_version")
    if not isinstance(version, int) or version > EXPORT_FORMAT_VERSION:
        raise SourceRefused(
            "bad_metadata", f"{entry.path} has format version {document.get('format_version')!r}; "
            f"this studio reads up to {EXPORT_FORMAT_VERSION}"
        )
    if not isinstance(document.get("name"), str) or not slugify(document["name"]):
        raise SourceRefused("bad_metadata", f"{entry.path} has no pool name")
    return document


def _validated(fields: dict, *, default_provenance: str, default_subject: str, name: str) -> dict:
    """The metadata of one image as Reference fields; unknown keys are kept as metadata."""
    def bad(message: str) -> _FileProblem:
        return _FileProblem("bad_metadata", f"{name}: {message}")

    tier = fields.get("tier") or ""
    if tier not in ("", *Tier.values):
        raise bad(f"tier {tier!r} is not love, okay or reject")
    split = fields.get("split") or ""
    if split not in ("", *Split.values):
        raise bad(f"split {split!r} is not train or eval")
    provenance = fields.get("provenance") or default_provenance
    if provenance not in Provenance.values:
        raise bad(f"provenance {provenance!r} is not one of {', '.join(Provenance.values)}")
    seed = fields.get("seed")
    if isinstance(seed, str) and re.fullmatch(r"-?\d+", seed.strip()):
        seed = int(seed)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]
    ):
        raise bad(f"seed {fields.get('seed')!r} is not a 64-bit integer")
    sha256 = fields.get("sha256") or ""
    if sha256 and not (isinstance(sha256, str) and _SHA256.match(sha256)):
        raise bad("sha256 is not 64 lower-case hex digits")
    text = {}
    for key in ("subject", "source", "original_name"):
        value = fields.get(key)
        if value is not None and not isinstance(value, str):
            raise bad(f"{key} must be text")
        text[key] = value or ""
    extra = {key: value for key, value in fields.items() if key not in METADATA_FIELDS}
    return {
        "tier": tier, "split": split, "provenance": provenance, "seed": seed, "sha256": sha256,
        "subject": text["subject"] or default_subject, "source": text["source"],
        "original_name": text["original_name"], "extra": extra,
    }


# --- Importing ------------------------------------------------------------------------------

def import_path(
    path: Path,
    *,
    curator: AbstractBaseUser,
    provenance: str = Provenance.IMPORT,
    subject: str = "",
    progress: Progress | None = None,
    limits: ImportLimits = DEFAULT_LIMITS,
) -> ImportReport:
    """Import a folder, a .zip or a single image file."""
    _check_provenance(provenance)
    path = Path(path)
    report = ImportReport()
    if path.is_dir():
        _import_source(
            lambda: _folder_entries(path, report, limits), label=str(path), prefix="", report=report,
            curator=curator, provenance=provenance, subject=subject, progress=progress, limits=limits,
        )
    elif path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
        single = [_Entry(path.name, path.stat().st_size, lambda: open(path, "rb"))]
        _import_source(lambda: single, label=str(path), prefix="", report=report, curator=curator,
                       provenance=provenance, subject=subject, progress=progress, limits=limits)
    elif path.is_file() and (path.suffix.lower() == ".zip" or zipfile.is_zipfile(path)):
        with open(path, "rb") as handle:
            _import_zip(handle, label=path.name, prefix="", report=report, curator=curator,
                        provenance=provenance, subject=subject, progress=progress, limits=limits)
    else:
        raise CurationError(f"{path} is not a folder, a .zip or an image")
    return report


def import_uploads(
    files: Sequence[tuple[str, bytes]],
    *,
    curator: AbstractBaseUser,
    provenance: str = Provenance.UPLOAD,
    subject: str = "",
    progress: Progress | None = None,
    limits: ImportLimits = DEFAULT_LIMITS,
) -> ImportReport:
    """Import web uploads: each .zip on its own, the loose files together as one folder."""
    _check_provenance(provenance)
    report = ImportReport()
    loose: list[_Entry] = []
    for upload_name, data in files:
        name = posixpath.basename((upload_name or "upload").replace("\\", "/")) or "upload"
        if data[:4] == b"PK\x03\x04" or name.lower().endswith(".zip"):
            _import_zip(io.BytesIO(data), label=name, prefix=f"{name}:", report=report, curator=curator,
                        provenance=provenance, subject=subject, progress=progress, limits=limits)
        elif not _is_junk(name):
            loose.append(_Entry(name, len(data), lambda data=data: io.BytesIO(data)))
    if loose:
        _import_source(lambda: loose, label="upload", prefix="", report=report, curator=curator,
                       provenance=provenance, subject=subject, progress=progress, limits=limits)
    return report


def _check_provenance(provenance: str) -> None:
    if provenance not in Provenance.values:
        raise CurationError(f"unknown provenance {provenance!r}; use {', '.join(Provenance.values)}")


def _import_zip(handle: BinaryIO, *, label: str, prefix: str, report: ImportReport, **options) -> None:
    handle.seek(0, os.SEEK_END)
    archive_size = handle.tell()
    handle.seek(0)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        report.rows.append(
            ImportRow(label, "rejected", "not_a_zip", f"{label} is not a readable zip archive ({exc})")
        )
        report.refused = True
        return
    with archive:
        _import_source(
            lambda: _zip_entries(archive, label=label, archive_size=archive_size, limits=options["limits"]),
            label=label, prefix=prefix, report=report, **options,
        )


def _import_source(
    list_entries: Callable[[], list[_Entry]], *, label: str, prefix: str, report: ImportReport,
    curator, provenance: str, subject: str, progress: Progress | None, limits: ImportLimits,
) -> None:
    rows: list[ImportRow] = []
    planning = ImportReport()
    try:
        plan = _plan(list_entries(), limits, planning)
    except SourceRefused as refusal:
        report.rows.extend(_prefixed(planning.rows, prefix))
        report.rows.append(ImportRow(label, "rejected", refusal.code, refusal.message))
        report.refused = True
        return
    rows.extend(planning.rows)
    for missing in plan.listed_missing:
        rows.append(ImportRow(
            missing, "rejected", "missing_file", f"{missing} is listed in the metadata but not present"
        ))

    image_rows: dict[str, ImportRow] = {}
    references: dict[str, Reference] = {}
    total = len(plan.images)
    for done, (path, entry) in enumerate(sorted(plan.images.items()), start=1):
        row, reference = _import_one(
            path, entry, plan, curator=curator, provenance=provenance, subject=subject, limits=limits,
            prefix=prefix,
        )
        image_rows[path] = row
        if reference is not None:
            references[path] = reference
        if progress:
            progress(done, total, prefix + path)
    rows.extend(image_rows[path] for path in sorted(image_rows))

    if plan.pool_document is not None:
        _restore_pool_from(plan, references, curator=curator, report=report, source_label=label)
    report.rows.extend(_prefixed(rows, prefix))


def _prefixed(rows: list[ImportRow], prefix: str) -> list[ImportRow]:
    for row in rows:
        row.name = prefix + row.name
    return rows


def _import_one(path: str, entry: _Entry, plan: _Plan, *, curator, provenance: str, subject: str,
                limits: ImportLimits, prefix: str) -> tuple[ImportRow, Reference | None]:
    """Validate everything first; then store file, row and grade together, or nothing."""
    display = prefix + path
    try:
        if path in plan.problems:
            raise plan.problems[path]
        fields = _validated(plan.metadata.get(path, {}), default_provenance=provenance,
                            default_subject=subject, name=path)
        fields["source"] = _source_for(path, fields["source"], plan.sidecars.get(path), limits)
        data = entry.read(limits.max_image_bytes, "an image")
        normalised = normalise_image(data, name=display, max_bytes=limits.max_image_bytes,
                                     max_pixels=limits.max_image_pixels)
    except (_FileProblem, ImageRejected) as problem:
        return ImportRow(path, "rejected", problem.code, problem.message), None

    metadata = dict(fields["extra"])
    metadata["original_format"] = normalised.original_format
    try:
        with transaction.atomic():
            reference, created = reference_create(
                png=normalised.png, width=normalised.width, height=normalised.height,
                provenance=fields["provenance"], source=fields["source"], seed=fields["seed"],
                subject=fields["subject"], original_name=fields["original_name"] or posixpath.basename(path),
                metadata=metadata, created_by=curator,
            )
            if fields["tier"]:
                grade_set(reference=reference, curator=curator, tier=fields["tier"], source="import")
    except OSError as exc:
        return ImportRow(path, "rejected", "storage_failed", f"{display} could not be stored: {exc}"), None
    except CurationError as exc:
        return ImportRow(path, "rejected", "bad_metadata", f"{display}: {exc}"), None

    notes = []
    if not created:
        notes.append(f"same image as reference #{reference.pk}; stored once")
    if fields["sha256"] and fields["sha256"] != reference.sha256:
        # Only a different PNG encoder build can do this; the pixels are still the same.
        notes.append(
            f"normalised sha256 {reference.sha256[:12]}… differs from the listed {fields['sha256'][:12]}…"
        )
    row = ImportRow(path, "created" if created else "duplicate", "" if created else "duplicate",
                    "; ".join(notes), reference.pk, fields["tier"])
    return row, reference


def _source_for(path: str, listed_source: str, sidecar: _Entry | None, limits: ImportLimits) -> str:
    if sidecar is None:
        return listed_source
    try:
        source = sidecar.read(limits.max_sidecar_bytes, "a sketch").decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _FileProblem("bad_sidecar", f"{sidecar.path} is not UTF-8 text") from exc
    except _FileProblem as exc:
        raise _FileProblem("bad_sidecar", exc.message) from exc
    if listed_source and listed_source.strip() != source.strip():
        raise _FileProblem("conflicting_metadata", f"{path}: the metadata source and {sidecar.path} differ")
    return source


def _restore_pool_from(plan: _Plan, references: dict[str, Reference], *, curator, report: ImportReport,
                       source_label: str) -> None:
    document = plan.pool_document
    member_paths = sorted(p for p, origin in plan.metadata_origin.items() if origin == plan.pool_directory)
    members, missing = [], []
    for path in member_paths:
        fields = plan.metadata[path]
        reference = references.get(path)
        fits = fields.get("tier") in Tier.values and fields.get("split") in Split.values
        if reference is None or not fits:
            missing.append(path)
        else:
            members.append((reference, fields["tier"], fields["split"]))
    expected = document.get("member_count")
    if isinstance(expected, int) and expected != len(member_paths):
        report.pool_error = f"pool.json lists {expected} members but the metadata has {len(member_paths)}"
        return
    if missing or not members:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        report.pool_error = (
            f"pool {document.get('label') or document['name']} was not restored: "
            + (f"{len(missing)} member(s) did not import ({shown})" if missing else "it has no members")
        )
        return
    exported = f"{document.get('label') or document['name']} by {document.get('curator') or '?'}"
    try:
        pool, _ = pool_restore(
            name=document["name"], curator=curator, members=members,
            tiers=document.get("tiers") or sorted({tier for _, tier, _ in members}),
            filters=document.get("filters") or {}, eval_share=float(document.get("eval_share") or 0),
            split_seed=int(document.get("split_seed") or 0),
            description=(
                document.get("description") or f"Restored from the export of {exported} ({source_label})."
            ),
            created_by=curator,
        )
    except (CurationError, TypeError, ValueError) as exc:
        report.pool_error = f"pool {document['name']} was not restored: {exc}"
        return
    report.pool = pool.label


def pool_restore(
    *,
    name: str,
    curator: AbstractBaseUser,
    members: Sequence[tuple[Reference, str, str]],
    tiers: Sequence[str],
    filters: dict,
    eval_share: float,
    split_seed: int,
    description: str = "",
    created_by: AbstractBaseUser | None = None,
) -> tuple[Pool, bool]:
    """Recreate a frozen pool with exactly these (reference, tier, split) members.

    Tiers and splits are copied, never recomputed. Returns (pool, created): when the latest
    version of `name` already holds the same members for the same curator, it is reused,
    so importing one export twice does not pile up versions.
    """
    slug = slugify(name)[:80]
    if not slug:
        raise CurationError("a pool needs a name made of letters, digits or dashes")
    tiers = [tier for tier in Tier.values if tier in set(tiers)]
    if not tiers:
        raise CurationError("a pool needs at least one tier")
    if not 0 <= eval_share < 1:
        raise CurationError("the eval share must be at least 0 and below 1")
    wanted = {}
    for reference, tier, split in members:
        if tier not in tiers or split not in Split.values:
            raise CurationError(
                f"reference #{reference.pk}: tier {tier!r} / split {split!r} do not fit the pool"
            )
        if reference.pk in wanted:
            raise CurationError(f"reference #{reference.pk} is listed twice")
        wanted[reference.pk] = (tier, split)
    if not wanted:
        raise CurationError("a pool needs at least one member")

    with transaction.atomic():
        latest = Pool.objects.select_for_update().filter(name=slug).order_by("-version").first()
        if latest is not None and latest.curator_id == curator.pk:
            held_rows = latest.members.values_list("reference_id", "tier", "split")
            held = {ref: (tier, split) for ref, tier, split in held_rows}
            if held == wanted:
                return latest, False
        pool = Pool.objects.create(
            name=slug, version=(latest.version + 1) if latest else 1, description=description,
            curator=curator, tiers=tiers, filters=filters, eval_share=eval_share, split_seed=split_seed,
            created_by=created_by or curator,
        )
        PoolMember.objects.bulk_create(
            PoolMember(pool=pool, reference_id=ref, tier=tier, split=split)
            for ref, (tier, split) in wanted.items()
        )
    return pool, True


# --- Exporting ------------------------------------------------------------------------------

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

