"""Reading a folder or zip safely, and the metadata that travels with its images.

Shared by import and export: the file names and format of a pool export live here.

- Archives are read entry by entry in memory, never extracted; an unsafe archive (path
  traversal, absolute names, links, too many entries, too big, a zip bomb) or unreadable
  metadata refuses the whole source (SourceRefused), and nothing of it is stored.
- `plan_source` turns the entries into a Plan: the images, their `.js` sidecars, the
  fields `metadata.jsonl` / `grades.csv` give each image, and an export's `pool.json`.
"""
from __future__ import annotations

import csv
import io
import json
import os
import posixpath
import re
import stat
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.utils.text import slugify

from curation import images
from curation.errors import CurationError
from curation.models import Provenance, Split, Tier
from paintapp.lib.storage import human_size

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff"})
SIDECAR_SUFFIX = ".js"
METADATA_FILE = "metadata.jsonl"
GRADES_FILE = "grades.csv"
POOL_FILE = "pool.json"
PARQUET_FILE = "pool.parquet"
CARD_FILE = "README.md"  # the dataset card of an export
EXPORT_FORMAT = "paintapp-pool"
EXPORT_FORMAT_VERSION = 2  # 2: a member's graders/agreed and the pool's graders/consensus
METADATA_FIELDS = (
    "tier", "split", "subject", "source", "seed", "provenance", "sha256", "original_name", "graders", "agreed",
)
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


class FileProblem(Exception):
    """One file cannot be imported (the rest of its source can)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ImportRow:
    """What an import did with one file (or why it refused a whole source)."""

    name: str
    status: str  # created | duplicate | rejected | skipped
    code: str = ""
    message: str = ""
    reference_id: int | None = None
    tier: str = ""  # the grade this import gave the curator, if any

    @property
    def outcome(self) -> str:
        """The status in the curator's words: imported, duplicate, rejected or ignored."""
        return _OUTCOMES[self.status]


_OUTCOMES = {"created": "imported", "duplicate": "duplicate", "rejected": "rejected", "skipped": "ignored"}


# --- Where entries come from ------------------------------------------------------------

@dataclass
class Entry:
    """One file of a folder or archive, opened only when read."""

    path: str  # posix path relative to the import root
    size: int  # declared size; reads never return more
    opener: Callable[[], BinaryIO]

    def read(self, limit: int, what: str) -> bytes:
        if self.size > limit:
            raise FileProblem(
                "too_large", f"{self.path} is {human_size(self.size)}; the limit for {what} is {human_size(limit)}"
            )
        try:
            with self.opener() as handle:
                data = handle.read(limit + 1)
        except Exception as exc:  # zlib, lzma, bz2 and zipfile each raise their own errors on bad data
            raise FileProblem("unreadable", f"{self.path} could not be read: {exc}") from exc
        if len(data) > limit:  # the file grew, or an archive lied about its size
            raise FileProblem("too_large", f"{self.path} is over the limit for {what} ({human_size(limit)})")
        return data


def folder_entries(root: Path, notes: list[ImportRow], limits: ImportLimits) -> list[Entry]:
    """The files under `root`, links reported in `notes` and never followed."""
    entries: list[Entry] = []
    for directory, subdirectories, files in os.walk(root, followlinks=False):
        for linked in sorted(d for d in subdirectories if (Path(directory) / d).is_symlink()):
            relative = (Path(directory) / linked).relative_to(root).as_posix()
            notes.append(
                ImportRow(relative, "rejected", "symlink", f"{relative} is a linked folder; not read")
            )
        for hidden in sorted(d for d in subdirectories if is_junk(d)):
            notes.append(junk_row((Path(directory) / hidden).relative_to(root).as_posix(), folder=True))
        subdirectories[:] = sorted(d for d in subdirectories if not is_junk(d))
        for file_name in sorted(files):
            if is_junk(file_name):
                notes.append(junk_row((Path(directory) / file_name).relative_to(root).as_posix(), folder=False))
                continue
            full = Path(directory) / file_name
            relative = full.relative_to(root).as_posix()
            if full.is_symlink() or not full.is_file():
                # A link could point anywhere on the server: never follow it.
                notes.append(ImportRow(
                    relative, "rejected", "symlink", f"{relative} is a link or special file; not read"
                ))
                continue
            entries.append(Entry(relative, full.stat().st_size, lambda full=full: open(full, "rb")))
            if len(entries) > limits.max_entries:
                raise SourceRefused("too_many_entries", f"{root} holds more than {limits.max_entries} files")
    total = sum(entry.size for entry in entries)
    if total > limits.max_total_bytes:
        raise SourceRefused(
            "too_large", f"{root} holds {human_size(total)}; the limit is {human_size(limits.max_total_bytes)}"
        )
    return entries


def zip_entries(
    archive: zipfile.ZipFile, *, label: str, archive_size: int, limits: ImportLimits, notes: list[ImportRow]
) -> list[Entry]:
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

    entries: list[Entry] = []
    junk_folders: set[str] = set()
    for info in infos:
        parts = info.filename.rstrip("/").split("/")
        junk_at = next((i for i, part in enumerate(parts) if is_junk(part)), None)
        if junk_at is not None:  # reported once per system folder, never read
            is_folder = info.is_dir() or junk_at < len(parts) - 1
            junk = "/".join(parts[: junk_at + 1])
            if junk not in junk_folders:
                junk_folders.add(junk)
                notes.append(junk_row(junk, folder=is_folder))
            continue
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise SourceRefused("encrypted", f"{label}: {info.filename} is encrypted; import it unencrypted")
        path = posixpath.normpath(info.filename)
        entries.append(Entry(path, info.file_size, lambda info=info: archive.open(info)))
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


def is_junk(name: str) -> bool:
    return name.startswith(".") or name in _JUNK_NAMES


def junk_row(path: str, *, folder: bool) -> ImportRow:
    """A hidden or system file (.DS_Store, __MACOSX/, Thumbs.db): listed, never read."""
    what = "a hidden or system folder; not read" if folder else "a hidden or system file; ignored"
    return ImportRow(path + ("/" if folder else ""), "skipped", "system_file", f"{path} is {what}")


# --- Metadata -------------------------------------------------------------------------------

@dataclass
class Plan:
    """What a source holds, before anything is read beyond its metadata."""

    images: dict[str, Entry]
    sidecars: dict[str, Entry]  # image path -> .js entry
    metadata: dict[str, dict]  # image path -> merged fields
    metadata_origin: dict[str, str]  # image path -> directory of the metadata.jsonl that listed it
    listed_missing: list[str]
    pool_document: dict | None
    pool_directory: str
    problems: dict[str, FileProblem]  # image path -> a problem found while planning


def plan_source(entries: list[Entry], limits: ImportLimits, notes: list[ImportRow]) -> Plan:
    """Sort the entries into images, sidecars and metadata; skipped files go to `notes`."""
    by_path: dict[str, Entry] = {}
    for entry in entries:
        if entry.path in by_path:
            notes.append(ImportRow(
                entry.path, "rejected", "duplicate_name", f"{entry.path} appears twice; the first was used"
            ))
            continue
        by_path[entry.path] = entry

    image_entries = {p: e for p, e in by_path.items() if posixpath.splitext(p)[1].lower() in IMAGE_SUFFIXES}
    plan = Plan(images=image_entries, sidecars={}, metadata={}, metadata_origin={}, listed_missing=[],
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
                notes.append(
                    ImportRow(path, "skipped", "extra_pool_file", f"only {pool_files[0]} describes the pool")
                )
        elif base == PARQUET_FILE or (pool_files and path == posixpath.join(posixpath.dirname(pool_files[0]), CARD_FILE)):
            notes.append(ImportRow(
                path, "skipped", "export_companion",
                f"{path} belongs to the pool export; its images and {METADATA_FILE} hold the same data",
            ))
        elif suffix == SIDECAR_SUFFIX:
            notes.append(
                ImportRow(path, "skipped", "orphan_sketch", f"{path} has no image with the same name")
            )
        else:
            notes.append(ImportRow(
                path, "skipped", "unsupported_file", f"{path} is not an image, sketch or metadata file; ignored"
            ))
    plan.listed_missing = sorted(p for p in plan.metadata if p not in image_entries)
    return plan


def _resolve(listed: str, image_entries: dict[str, Entry], basenames: Counter) -> str:
    # A name without a folder may mean the one image of that name wherever it lies.
    if listed not in image_entries and "/" not in listed and basenames.get(listed) == 1:
        return next(p for p in image_entries if posixpath.basename(p) == listed)
    return listed


def _merge(plan: Plan, image_path: str, fields: dict, *, origin: str | None) -> None:
    merged = plan.metadata.setdefault(image_path, {})
    for key, value in fields.items():
        known = merged.get(key)
        if known not in ("", None) and value not in ("", None) and known != value:
            plan.problems.setdefault(image_path, FileProblem(
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


def _read_text(entry: Entry, limit: int) -> str:
    try:
        return entry.read(limit, "metadata").decode("utf-8-sig")
    except FileProblem as exc:
        raise SourceRefused("bad_metadata", exc.message) from exc
    except UnicodeDecodeError as exc:
        raise SourceRefused("bad_metadata", f"{entry.path} is not UTF-8 text") from exc


def _read_metadata_jsonl(entry: Entry, limits: ImportLimits) -> Iterable[tuple[str, dict]]:
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


def _read_grades_csv(entry: Entry, limits: ImportLimits) -> Iterable[tuple[str, dict]]:
    directory = posixpath.dirname(entry.path)
    reader = csv.DictReader(io.StringIO(_read_text(entry, limits.max_metadata_bytes)))
    if not reader.fieldnames or not {"file_name", "tier"} <= {f.strip() for f in reader.fieldnames}:
        raise SourceRefused("bad_metadata", f"{entry.path} needs the columns file_name,tier")
    for number, row in enumerate(reader, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        path = _listed_path(directory, row.get("file_name"), f"{entry.path} line {number}")
        yield path, {"tier": row.get("tier", "")}


def _read_pool_document(entry: Entry, limits: ImportLimits) -> dict:
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


def validated_fields(fields: dict, *, default_provenance: str, default_subject: str, name: str) -> dict:
    """The metadata of one image as Reference fields; unknown keys are kept as metadata."""
    def bad(message: str) -> FileProblem:
        return FileProblem("bad_metadata", f"{name}: {message}")

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
    graders, agreed = fields.get("graders", 1), fields.get("agreed", 1)
    for key, value in (("graders", graders), ("agreed", agreed)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
            raise bad(f"{key} {value!r} is not a count of curators")
    if graders < 1 or agreed > graders:
        raise bad(f"agreed {agreed} of graders {graders} is not possible")
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
        "original_name": text["original_name"], "graders": graders, "agreed": agreed, "extra": extra,
    }

