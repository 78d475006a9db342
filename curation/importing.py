"""Import references (folders, zips, web uploads), and restore an exported pool.

Import rules, the same for every way in:
- every image is read, validated and normalised before anything is stored, then stored
  whole (file + Reference + the importing curator's grade, one transaction) or reported
  with its error — never half-stored;
- a duplicate (same normalised sha256 as a stored reference, or as an earlier file of the
  same import) is reported as `duplicate` and stored once; its tier IS applied as the
  curator's grade, because re-importing a graded folder is how grades move between
  studios (every change is still a GradeEvent, so an overwritten grade can be traced);
- a source is read through curation.archive, which refuses an unsafe archive or unreadable
  metadata whole, before anything of it is stored.

Importing an export (recognised by its pool.json) restores the pool — same members, tiers
and splits — as the next version of its name, held by the importing curator.
"""
from __future__ import annotations

import io
import os
import posixpath
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from curation.archive import (
    DEFAULT_LIMITS,
    IMAGE_SUFFIXES,
    Entry,
    FileProblem,
    ImportLimits,
    ImportRow,
    Plan,
    SourceRefused,
    folder_entries,
    is_junk,
    junk_row,
    plan_source,
    validated_fields,
    zip_entries,
)
from curation.errors import CurationError
from curation.images import ImageRejected, normalise_image
from curation.models import Provenance, Reference, Split, Tier
from curation.services import grade_set, pool_restore, reference_create

Progress = Callable[[int, int, str], None]


@dataclass
class ImportReport:
    """Every file an import saw, with what became of it, and the restored pool if any."""

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
    def nothing_importable(self) -> bool:
        """True when no file became (or matched) a reference and no pool was restored."""
        return not (self.created or self.duplicates or self.pool)

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
            f"{self.created} imported, {self.duplicates} duplicate{'s' * (self.duplicates != 1)}, "
            f"{self.graded} graded, {self.rejected} rejected"
        )
        if self.skipped:
            text += f", {self.skipped} ignored"
        if self.pool:
            text += f"; pool {self.pool} restored"
        elif self.pool_error:
            text += "; pool NOT restored"
        return text


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
            lambda notes: folder_entries(path, notes, limits), label=str(path), prefix="", report=report,
            curator=curator, provenance=provenance, subject=subject, progress=progress, limits=limits,
        )
    elif path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
        single = [Entry(path.name, path.stat().st_size, lambda: open(path, "rb"))]
        _import_source(lambda notes: single, label=str(path), prefix="", report=report, curator=curator,
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
    loose: list[Entry] = []
    for upload_name, data in files:
        name = posixpath.basename((upload_name or "upload").replace("\\", "/")) or "upload"
        if data[:4] == b"PK\x03\x04" or name.lower().endswith(".zip"):
            _import_zip(io.BytesIO(data), label=name, prefix=f"{name}:", report=report, curator=curator,
                        provenance=provenance, subject=subject, progress=progress, limits=limits)
        elif is_junk(name):
            report.rows.append(junk_row(name, folder=False))
        else:
            loose.append(Entry(name, len(data), lambda data=data: io.BytesIO(data)))
    if loose:
        _import_source(lambda notes: loose, label="upload", prefix="", report=report, curator=curator,
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
            lambda notes: zip_entries(
                archive, label=label, archive_size=archive_size, limits=options["limits"], notes=notes
            ),
            label=label, prefix=prefix, report=report, **options,
        )


def _import_source(
    list_entries: Callable[[list[ImportRow]], list[Entry]], *, label: str, prefix: str, report: ImportReport,
    curator, provenance: str, subject: str, progress: Progress | None, limits: ImportLimits,
) -> None:
    """`list_entries(notes)` gives the source's files, noting those it leaves out in `notes`."""
    rows: list[ImportRow] = []
    planning = ImportReport()
    try:
        plan = plan_source(list_entries(planning.rows), limits, planning.rows)
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


def _import_one(path: str, entry: Entry, plan: Plan, *, curator, provenance: str, subject: str,
                limits: ImportLimits, prefix: str) -> tuple[ImportRow, Reference | None]:
    """Validate everything first; then store file, row and grade together, or nothing."""
    display = prefix + path
    try:
        if path in plan.problems:
            raise plan.problems[path]
        fields = validated_fields(plan.metadata.get(path, {}), default_provenance=provenance,
                                  default_subject=subject, name=path)
        fields["source"] = _source_for(path, fields["source"], plan.sidecars.get(path), limits)
        data = entry.read(limits.max_image_bytes, "an image")
        normalised = normalise_image(data, name=display, max_bytes=limits.max_image_bytes,
                                     max_pixels=limits.max_image_pixels)
    except (FileProblem, ImageRejected) as problem:
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


def _source_for(path: str, listed_source: str, sidecar: Entry | None, limits: ImportLimits) -> str:
    if sidecar is None:
        return listed_source
    try:
        source = sidecar.read(limits.max_sidecar_bytes, "a sketch").decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileProblem("bad_sidecar", f"{sidecar.path} is not UTF-8 text") from exc
    except FileProblem as exc:
        raise FileProblem("bad_sidecar", exc.message) from exc
    if listed_source and listed_source.strip() != source.strip():
        raise FileProblem("conflicting_metadata", f"{path}: the metadata source and {sidecar.path} differ")
    return source


def _restore_pool_from(plan: Plan, references: dict[str, Reference], *, curator, report: ImportReport,
                       source_label: str) -> None:
    document = plan.pool_document
    member_paths = sorted(p for p, origin in plan.metadata_origin.items() if origin == plan.pool_directory)
    members, missing = [], []
    counts: dict[int, tuple[int, int]] = {}
    for path in member_paths:
        fields = plan.metadata[path]
        reference = references.get(path)
        fits = fields.get("tier") in Tier.values and fields.get("split") in Split.values
        if reference is None or not fits:
            missing.append(path)
        else:
            members.append((reference, fields["tier"], fields["split"]))
            # Valid by now (validated_fields refused the file otherwise); 1 of 1 before format 2.
            counts[reference.pk] = (fields.get("graders", 1), fields.get("agreed", 1))
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
    consensus = document.get("consensus") or {}
    if not isinstance(consensus, dict) or (consensus and not isinstance(consensus.get("curators"), list)):
        report.pool_error = f"pool {document['name']} was not restored: its consensus record is not readable"
        return
    try:
        pool, _ = pool_restore(
            name=document["name"], curator=curator, members=members,
            tiers=document.get("tiers") or sorted({tier for _, tier, _ in members}),
            filters=document.get("filters") or {}, eval_share=float(document.get("eval_share") or 0),
            split_seed=int(document.get("split_seed") or 0),
            description=(
                document.get("description") or f"Restored from the export of {exported} ({source_label})."
            ),
            created_by=curator, consensus_summary=consensus, member_counts=counts,
        )
    except (CurationError, TypeError, ValueError) as exc:
        report.pool_error = f"pool {document['name']} was not restored: {exc}"
        return
    report.pool = pool.label
