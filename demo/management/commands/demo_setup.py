"""Everything `make demo` needs before the studio starts; each part is skipped when done.

1. the tiny base model (manage.py build_tiny_model), registered as the default base model
2. the seed pool: ≥ 200 rendered references with demo grades (manage.py seed_pool)
3. a frozen pool of the demo grades, `demo` (manage.py freeze_pool)
"""
from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand

from curation.models import Pool, Reference
from demo.curator import DEMO_CURATOR
from training.services import default_base_model


class Command(BaseCommand):
    help = "Build the tiny model, seed and grade the demo pool, freeze it (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, default=200, help="seed references")
        parser.add_argument("--size", type=int, default=512, help="render size of the seed references (512: 2 s each here)")
        parser.add_argument("--skip-model", action="store_true")

    def handle(self, *args, count, size, skip_model, **options):
        model = Path(default_base_model())
        if skip_model:
            self.stdout.write("1/3 tiny model: skipped")
        elif (model / "config.json").exists():
            self.stdout.write(f"1/3 tiny model: already built at {model}")
        else:
            self.stdout.write(f"1/3 building the tiny model at {model} (a few minutes, once)")
            call_command("build_tiny_model", out=str(model), stdout=self.stdout, stderr=self.stderr)

        seeded = Reference.objects.filter(provenance="seed-generator").count()
        if seeded >= count:
            self.stdout.write(f"2/3 seed pool: {seeded} references already")
        else:
            self.stdout.write(f"2/3 rendering {count} seed references with demo grades (a few minutes, once)")
            options = {"count": count, "demo_grades": True, "in_process": True}
            if size:
                options["size"] = size
            call_command("seed_pool", stdout=self.stdout, stderr=self.stderr, **options)

        if Pool.objects.filter(name="demo").exists():
            self.stdout.write("3/3 pool demo: already frozen")
        else:
            call_command(
                "freeze_pool", "demo", curator=DEMO_CURATOR, description="The seed pool graded by the demo rule.",
                stdout=self.stdout, stderr=self.stderr,
            )
