"""Export a frozen pool as a Hugging Face imagefolder + parquet + pool.json (folder or zip)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from curation.errors import CurationError
from curation.export import export_pool, pool_zip_name, write_pool_zip
from curation.models import Pool
from curation.selectors import pool_get
from paintapp.lib.progress import progress_bar

USAGE_ERROR = 2


class Command(BaseCommand):
    help = (
        "Export a pool to DIR: metadata.jsonl + images/<sha256>.png (Hugging Face imagefolder), "
        "pool.parquet, pool.json and a dataset card (README.md); with --zip, DIR/NAME-vVERSION.zip instead."
    )

    def add_arguments(self, parser):
        parser.add_argument("label", metavar="NAME[:VERSION]", help="pool name, latest version unless given")
        parser.add_argument("directory", metavar="DIR")
        parser.add_argument("--zip", action="store_true", dest="as_zip", help="write one .zip into DIR")

    def handle(self, *args, label: str, directory: str, as_zip: bool, **options):
        try:
            pool = pool_get(label)
        except (Pool.DoesNotExist, ValueError):
            raise CommandError(
                f"no pool {label!r} (use NAME or NAME:VERSION)", returncode=USAGE_ERROR
            ) from None
        target = Path(directory).expanduser()
        if not as_zip and target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise CommandError(f"{target} already exists and is not an empty folder", returncode=USAGE_ERROR)

        with progress_bar(f"exporting {pool.label}", "image") as progress:
            try:
                if as_zip:
                    written = self._write_zip(pool, target, progress)
                else:
                    written = export_pool(pool, target, progress=progress)
            except CurationError as exc:  # e.g. a stored image that no longer matches its sha256
                raise CommandError(str(exc), returncode=1) from exc

        members = pool.members.count()
        self.stdout.write(self.style.SUCCESS(f"Exported {pool.label} ({members} members) to {written}"))
        if not as_zip:
            for name in ("metadata.jsonl", "pool.parquet", "pool.json", "README.md"):
                self.stdout.write(f"  {written / name}")
            self.stdout.write(f"  {written / 'images'}/ ({members} PNG files)")

    def _write_zip(self, pool: Pool, target: Path, progress) -> Path:
        target.mkdir(parents=True, exist_ok=True)
        destination = target / pool_zip_name(pool)
        if destination.exists():
            raise CommandError(f"{destination} already exists", returncode=USAGE_ERROR)
        # Written under a temporary name and renamed: a failed export leaves no plausible zip.
        handle, partial = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial", dir=target)
        try:
            with os.fdopen(handle, "wb") as out:
                write_pool_zip(pool, out, progress=progress)
            os.replace(partial, destination)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        return destination
