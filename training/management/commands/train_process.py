"""`manage.py train_process RUN ...` — one of a run's training processes. The train task starts
them with accelerate launch (training/trainer/launching.py) when a run asks for several processes or
an accelerate config; not meant to be run by hand."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from django.core.management.base import BaseCommand

from training.models import Run
from training.trainer import together
from training.trainer.launching import report_outcome, reporting_failure, watch_parent
from training.trainer.steps import train_steps
from training.trainer.tracking import leave_out_unchosen_trackers


class Command(BaseCommand):
    help = "One of a run's training processes, started by its train task with accelerate launch."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int)
        parser.add_argument("--task-id", required=True, help="the run's train task, which owns it")
        parser.add_argument("--checkpoint", default="", help="the complete checkpoint to resume from, if any")
        parser.add_argument("--processes", type=int, required=True, help="how many processes train together")
        parser.add_argument("--report-dir", required=True, help="where the outcome or a traceback goes")

    def handle(self, *args, run, task_id, checkpoint, processes, report_dir, **options):
        watch_parent()
        report_dir = Path(report_dir)
        with reporting_failure(report_dir):
            found = Run.objects.select_related("pool").get(id=run)
            leave_out_unchosen_trackers(found.arguments.report_to)  # this process trains this run only
            outcome = train_steps(found, found.arguments, task_id,
                                  checkpoint=Path(checkpoint) if checkpoint else None, processes=processes)
        if together.is_main():
            report_outcome(report_dir, asdict(outcome))
