"""paintapp.lib.exports: an export job's progress, its states and its stored file (with the pool
export model as the concrete one)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone
from kombu.exceptions import OperationalError

from curation.models import PoolExport
from curation.services import grade_set, pool_freeze
from paintapp.lib import exports
from paintapp.lib.exports import export_build, export_request
from tests.curation.factories import make_reference

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    grade_set(reference=make_reference(), curator=curator, tier="love")
    return pool_freeze(name="p", curator=curator)


def row(export: PoolExport) -> tuple:
    export.refresh_from_db()
    return export.status, export.done, export.total, export.current


def test_progress_reaches_the_row_while_building_at_most_twice_a_second_and_always_at_the_end(pool, curator):
    export = export_request(PoolExport, owner=pool, created_by=curator)
    seen = []

    def write(fileobj, progress):
        progress(1, 4, "first")
        seen.append(row(export))
        progress(2, 4, "second")  # within the interval: not written
        seen.append(row(export))
        progress(4, 4, "last")  # the end is always written
        seen.append(row(export))
        fileobj.write(b"zip bytes")

    built = export_build(export, file_name="p.zip", write=write)
    assert seen == [("building", 1, 4, "first"), ("building", 1, 4, "first"), ("building", 4, 4, "last")]
    assert (built.status, built.size_bytes, built.file_name, built.percent) == ("ready", 9, "p.zip", 100)
    assert default_storage.open(built.file).read() == b"zip bytes"


def test_an_unexpected_error_fails_the_export_with_its_type_and_an_expected_one_with_its_message(pool):
    def broken(fileobj, progress):
        raise KeyError("sha256")

    def refused(fileobj, progress):
        raise ValueError("the stored image cannot be read")

    failed = export_build(export_request(PoolExport, owner=pool), file_name="p.zip", write=broken)
    assert (failed.status, failed.error, failed.file) == ("failed", "KeyError: 'sha256'", "")
    clear = export_build(export_request(PoolExport, owner=pool), file_name="p.zip", write=refused,
                         expected=(ValueError,))
    assert clear.error == "the stored image cannot be read"


def test_a_request_while_one_is_being_built_gets_that_one_unless_it_stalled(pool):
    first = export_request(PoolExport, owner=pool)
    PoolExport.objects.filter(pk=first.pk).update(status="building")
    assert export_request(PoolExport, owner=pool).pk == first.pk
    PoolExport.objects.filter(pk=first.pk).update(updated_at=timezone.now() - timedelta(minutes=11))
    second = export_request(PoolExport, owner=pool)
    assert second.pk != first.pk and second.status == "queued"
    first.refresh_from_db()
    assert first.status == "failed" and "stopped reporting progress" in first.error


def test_a_broker_that_cannot_be_reached_fails_the_export_instead_of_leaving_it_queued(
    pool, monkeypatch, django_capture_on_commit_callbacks
):
    def unreachable(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(exports.celery_app, "send_task", unreachable)
    with django_capture_on_commit_callbacks(execute=True):
        export = export_request(PoolExport, owner=pool)
    export.refresh_from_db()
    assert export.status == "failed"
    assert "could not be queued" in export.error and "Connection refused" in export.error


def test_a_new_build_replaces_the_older_ones_and_deleting_the_owner_deletes_the_file(pool):
    def write(fileobj, progress):
        fileobj.write(b"zip")

    older = export_build(export_request(PoolExport, owner=pool), file_name="p.zip", write=write)
    PoolExport.objects.filter(pk=older.pk).update(file="")  # its file is gone: a new request builds again
    newer = export_build(export_request(PoolExport, owner=pool), file_name="p.zip", write=write)
    assert list(PoolExport.objects.values_list("pk", flat=True)) == [newer.pk]
    assert default_storage.exists(newer.file)
    pool.delete()
    assert not PoolExport.objects.exists() and not default_storage.exists(newer.file)
