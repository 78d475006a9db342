"""Import reference images (a folder, a .zip, an image, or a pool export) for a curator."""
from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from curation.errors import CurationError
from curation.importing import import_path
from curation.models import Provenance
from paintapp.lib.progress import progress_bar

USAGE_ERROR = 2  # bad arguments: nothing was attempted
REFUSED = 1  # the folder or archive was refused, or held nothing importable: nothing of it was stored


class Command(BaseCommand):
    help = (
        "Import reference images from a folder or .zip: optional NAME.js sketch sidecars, metadata.jsonl, "
        "grades.csv (tiers become the curator's grades), or a pool export (the pool is restored)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path", help="a folder, a .zip, an image file, or a folder/zip written by export_pool"
        )
        parser.add_argument(
            "--curator", help="user name whose grades the tiers become (default: the only staff user)"
        )
        parser.add_argument("--provenance", choices=Provenance.values, default=Provenance.IMPORT,
                            help="for files whose metadata does not say (default: import)")
        parser.add_argument("--subject", default="", help="for files whose metadata does not say")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print the full report as JSON"
        )

    def handle(
        self, *args, path: str, curator: str | None, provenance: str, subject: str, as_json: bool, **options
    ):
        source = Path(path).expanduser()
        if not source.exists():
            raise CommandError(f"{source} does not exist", returncode=USAGE_ERROR)
        user = self._curator(curator)

        # The bar goes to stderr, so stdout stays a clean report (or clean JSON).
        with progress_bar("importing", "file", show_name=True) as progress:
            try:
                report = import_path(
                    source, curator=user, provenance=provenance, subject=subject, progress=progress
                )
            except CurationError as exc:
                raise CommandError(str(exc), returncode=USAGE_ERROR) from exc

        if as_json:
            self.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        else:
            self._write_listing(report)
        if report.refused:
            raise CommandError("the import was refused; nothing from it was stored", returncode=REFUSED)
        if report.nothing_importable:
            raise CommandError(f"nothing importable in {source}: no image could be stored", returncode=REFUSED)

    def _curator(self, username: str | None):
        User = get_user_model()
        if username:
            try:
                return User.objects.get(username=username)
            except User.DoesNotExist:
                raise CommandError(f"no user named {username!r}", returncode=USAGE_ERROR) from None
        staff = list(User.objects.filter(is_staff=True, is_active=True).order_by("username")[:2])
        if len(staff) != 1:
            why = "several staff users" if staff else "there is no staff user yet: run manage.py demo_curator"
            raise CommandError(
                f"say whose grades these are with --curator USERNAME ({why})", returncode=USAGE_ERROR
            )
        return staff[0]

    def _write_listing(self, report) -> None:
        for row in report.rows:
            if row.status == "rejected":
                self.stdout.write(self.style.ERROR(f"  rejected  {row.name}: {row.message} [{row.code}]"))
            elif row.status == "duplicate":
                self.stdout.write(f"  duplicate {row.name}: {row.message}")
            elif row.status == "skipped":
                self.stdout.write(self.style.WARNING(f"  ignored   {row.name}: {row.message}"))
            elif row.message:
                self.stdout.write(f"  note      {row.name}: {row.message}")
        if report.pool_error:
            self.stdout.write(self.style.ERROR(f"  pool: {report.pool_error}"))
        style = self.style.SUCCESS if not report.rejected and not report.pool_error else self.style.WARNING
        self.stdout.write(style(report.summary()))
