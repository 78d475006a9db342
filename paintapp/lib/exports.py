"""Export zips built by a worker, not in the web request.

A curator asks for an export: the owning app's export model gets a row (queued) and its
build task is queued when the row commits. The task writes the zip to a temporary file
with progress, stores it under `exports/` in the default storage (shared by web and
workers, like MEDIA_ROOT) and marks the row ready, or failed with the error. The export
page polls the row; the download view streams the stored file.

Each app declares its own model on `ExportJob` (an abstract model) with the owner's foreign
key and three class attributes: `owner_field`, `task_name` and `reuse_ready`.
"""
from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import models, transaction
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from paintapp.celery import app as celery_app

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]  # (done, total, what was just written)

# A build reports progress many times a second; one silent this long lost its worker.
STALLED_AFTER = timedelta(minutes=10)
PROGRESS_INTERVAL_S = 0.5  # at most this often a progress write to the database


class ExportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class ExportJob(models.Model):
    """One export zip of one owner (a pool, a run): its build's state, then its stored file."""

    owner_field: str = ""  # the foreign key to what is exported
    task_name: str = ""  # the Celery task that builds it, called with the row's id
    reuse_ready: bool = False  # True when the owner never changes, so a built zip stays true

    status = models.CharField(max_length=10, choices=ExportStatus.choices, default=ExportStatus.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(null=True, blank=True, help_text="unknown until the build counts")
    current = models.CharField(max_length=200, blank=True, help_text="what the build wrote last")
    file = models.CharField(max_length=255, blank=True, help_text="storage name of the zip")
    file_name = models.CharField(max_length=255, blank=True, help_text="name of the download")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def is_active(self) -> bool:
        return self.status in (ExportStatus.QUEUED, ExportStatus.BUILDING)

    @property
    def is_stalled(self) -> bool:
        return self.status == ExportStatus.BUILDING and timezone.now() - self.updated_at > STALLED_AFTER

    @property
    def percent(self) -> int | None:
        if not self.total:
            return None
        return min(100, round(100 * self.done / self.total))

    def file_exists(self) -> bool:
        return bool(self.file) and default_storage.exists(self.file)


def _set(job: ExportJob, **fields) -> None:
    """Update the row without loading it (a worker and the web both write it)."""
    type(job).objects.filter(pk=job.pk).update(updated_at=timezone.now(), **fields)


def export_request(model: type[ExportJob], *, owner: models.Model, created_by=None) -> ExportJob:
    """The owner's export to show: the one being built, or a built one when the owner never
    changes; otherwise a new one, whose build is queued once the row commits."""
    latest = model.objects.filter(**{model.owner_field: owner}).exclude(status=ExportStatus.FAILED).first()
    if latest is not None:
        if latest.is_stalled:
            _set(latest, status=ExportStatus.FAILED, finished_at=timezone.now(),
                 error="the worker building it stopped reporting progress")
        elif latest.is_active or (model.reuse_ready and latest.file_exists()):
            return latest
    job = model.objects.create(**{model.owner_field: owner}, created_by=created_by)
    transaction.on_commit(lambda: _queue(job))
    return job


def _queue(job: ExportJob) -> None:
    try:
        celery_app.send_task(job.task_name, args=[job.pk])
    except Exception as exc:  # noqa: BLE001 - the broker is down: say so on the page, never wait forever
        logger.warning("could not queue %s %s", job.task_name, job.pk, exc_info=True)
        _set(job, status=ExportStatus.FAILED, finished_at=timezone.now(),
             error=f"the build could not be queued (is the broker running?): {exc}")


class _ProgressRecorder:
    """The `progress(done, total, name)` callback of the export services, written to the row
    at most every PROGRESS_INTERVAL_S (and always at the end)."""

    def __init__(self, job: ExportJob):
        self.job = job
        self.last = 0.0

    def __call__(self, done: int, total: int, name: str = "") -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_INTERVAL_S:
            return
        self.last = now
        _set(self.job, done=done, total=total, current=name[:200])


def export_build(
    job: ExportJob, *, file_name: str, write: Callable[[BinaryIO, Progress], None],
    expected: tuple[type[Exception], ...] = (),
) -> ExportJob:
    """Run `write(file, progress)` into a temporary file, store it and mark the job ready.

    A failure marks the job failed with its message (an `expected` error's message is meant
    for the curator as it is; any other is logged with its traceback too). A job that is
    already ready (a redelivered task) is left as it is.
    """
    job.refresh_from_db()
    if job.status == ExportStatus.READY:
        return job
    _set(job, status=ExportStatus.BUILDING, done=0, total=None, current="", error="", file_name=file_name)
    try:
        with tempfile.TemporaryFile(prefix="export-") as scratch:
            write(scratch, _ProgressRecorder(job))
            size = scratch.tell()
            scratch.seek(0)
            name = f"exports/{job._meta.model_name}/{job.pk}/{file_name}"
            stored = default_storage.save(name, File(scratch))
    except Exception as exc:  # noqa: BLE001 - every failure ends on the page, not in a log alone
        if not isinstance(exc, expected):
            logger.exception("export %s %s failed", job._meta.label, job.pk)
        message = str(exc) if isinstance(exc, expected) else f"{type(exc).__name__}: {exc}"
        _set(job, status=ExportStatus.FAILED, error=message, finished_at=timezone.now())
    else:
        _set(job, status=ExportStatus.READY, file=stored, size_bytes=size, finished_at=timezone.now())
        _delete_older(job)
    job.refresh_from_db()
    return job


def _delete_older(job: ExportJob) -> None:
    """Only the newest built export of an owner is kept (the rows' post_delete takes the files)."""
    owner = {f"{job.owner_field}_id": getattr(job, f"{job.owner_field}_id")}
    older = type(job).objects.filter(**owner, created_at__lte=job.created_at).exclude(pk=job.pk)
    older.exclude(status__in=(ExportStatus.QUEUED, ExportStatus.BUILDING)).delete()


def export_page(request, *, model: type[ExportJob], export: ExportJob | None, download_url: str,
                **context) -> HttpResponse:
    """The export page (templates/export.html), or only its status for htmx, which polls it
    while the build runs; without JavaScript the page refreshes itself meanwhile."""
    can_build = export is None or export.status == ExportStatus.FAILED or (
        export.status == ExportStatus.READY and not (model.reuse_ready and export.file_exists())
    )
    template = "export.html#status" if request.htmx else "export.html"
    return render(request, template, {"export": export, "can_build": can_build, "download_url": download_url,
                                      **context})


def export_download_response(job: ExportJob) -> FileResponse:
    """The stored zip, streamed; 404 until it is ready or when its file is gone."""
    if job.status != ExportStatus.READY or not job.file:
        raise Http404("this export is not ready")
    try:
        handle = default_storage.open(job.file, "rb")
    except FileNotFoundError:
        raise Http404("this export's file is gone; build it again") from None
    return FileResponse(handle, as_attachment=True, filename=job.file_name, content_type="application/zip")


def delete_export_file(sender, instance: ExportJob, **kwargs) -> None:
    """post_delete receiver: a deleted export (or its deleted owner's) takes its file along."""
    if instance.file:
        default_storage.delete(instance.file)
