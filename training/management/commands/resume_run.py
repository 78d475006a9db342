"""`manage.py resume_run RUN [--follow]` — what the run page's Resume button does: continue a
stopped, failed, interrupted or waiting run from its last complete checkpoint."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from training import services
from training.management.follow import ending, follow_run
from training.models import Run
from training.trainer.lifecycle import resume_point


class Command(BaseCommand):
    help = ("Resume a run from its last complete checkpoint on the train workers; with --follow, show its "
            "steps until it ends (exit status 0 only when it finishes).")

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, help="the run's number (as on its page, /runs/N/)")
        parser.add_argument("--follow", action="store_true", help="show a progress bar of steps until the run ends")
        parser.add_argument("--poll", type=float, default=1.0, help="seconds between looks at the run")
        parser.add_argument("--remove-revisions", type=int, default=0, metavar="N",
                            help="confirm that resuming removes the N curators' revisions of the steps it redoes")

    def handle(self, *args, run, follow, poll, remove_revisions, **options):
        try:
            found = Run.objects.get(id=run)
        except Run.DoesNotExist:
            raise CommandError(f"no run {run}", returncode=2) from None
        try:
            resumed = services.run_resume(run=found, revisions_seen=remove_revisions)
        except services.RevisionsAtStake as exc:
            raise CommandError(f"{exc} with --remove-revisions N", returncode=2) from exc
        except services.LaunchError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(self.style.SUCCESS(f"Resuming run {resumed.id} ({resumed.name}) from {resume_point(found)}"))
        if not follow:
            return
        ended = follow_run(resumed, poll=poll, initial=found.checkpoint_step or 0)
        self.stdout.write(ending(ended))
        if ended.status != Run.Status.FINISHED:
            raise CommandError(f"the run did not finish: it is {ended.status}", returncode=1)
