"""`manage.py export_run RUN DIR [--overwrite]` — a run's rollouts, steps and thirds as a
Hugging Face dataset folder (see training/export/dataset.py for the layout)."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from paintapp.lib.progress import progress_bar
from paintapp.lib.storage import human_size
from training.export.dataset import ExportError, ExportRefused, ExportResult, export_run
from training.models import Run
from training.stats import format_number

USAGE_ERROR = 2



class Command(BaseCommand):
    help = (
        "Export a run to DIR as a Hugging Face dataset folder: data/train-*.parquet (rollouts with "
        "their paintings), steps.csv, run.json and README.md. DIR must be new or empty, or hold an "
        "earlier export of the same run (replaced with --overwrite)."
    )

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, metavar="RUN", help="run id")
        parser.add_argument("directory", metavar="DIR")
        parser.add_argument(
            "--overwrite", action="store_true", help="replace an earlier export of the same run in DIR"
        )

    def handle(self, *args, run: int, directory: str, overwrite: bool, **options):
        instance = Run.objects.filter(id=run).select_related("pool").first()
        if instance is None:
            raise CommandError(f"no run {run}", returncode=USAGE_ERROR)
        target = Path(directory).expanduser()

        with progress_bar(f"exporting run {run}", "rollout") as progress:
            try:
                result = export_run(run=instance, out_dir=target, progress=progress, replace_previous=overwrite)
            except ExportRefused as exc:
                raise CommandError(str(exc), returncode=USAGE_ERROR) from exc
            except (ExportError, OSError) as exc:
                raise CommandError(f"export failed: {exc}", returncode=1) from exc
        self._summary(instance, result)

    def _summary(self, run: Run, result: ExportResult) -> None:
        shards = len(result.shards)
        self.stdout.write(self.style.SUCCESS(f"Exported run {run.pk} ({run.name}) to {result.out_dir}"))
        self.stdout.write(
            f"  {result.rows} rollouts in {shards} shard{'s' * (shards != 1)}, "
            + (f"{result.chain_rows} turns of their chains, " if result.chain_rows else "")
            + f"{result.steps} steps, {human_size(result.size_bytes)}"
        )
        if result.missing_images:
            self.stdout.write(self.style.WARNING(
                f"  {result.missing_images} stored painting(s) could not be read; their image is empty"
            ))
        t = result.thirds
        if t.first_mean is None:
            self.stdout.write(f"  thirds: none ({t.reason})")
            return
        self.stdout.write(
            f"  mean group reward by thirds: {format_number(t.first_mean)} → {format_number(t.middle_mean)} → "
            f"{format_number(t.last_mean)} (steps {t.first_steps[0]}-{t.first_steps[1]}, "
            f"{t.middle_steps[0]}-{t.middle_steps[1]}, {t.last_steps[0]}-{t.last_steps[1]})"
        )
        self.stdout.write(
            f"  slope {format_number(t.slope, '.5f')} per step, SE {format_number(t.slope_se, '.5f')}, "
            f"t {format_number(t.t_stat, '.2f', missing='-')}"
        )
        self.stdout.write(
            f"  rollouts under {t.low_threshold:g}: {t.first_low} → {t.last_low} (first → last third)"
        )
