"""Thin Celery tasks of training: train one run, merge a run's adapter, write the editor's
revisions by the model and resume runs waiting for workers (queue `train`); build a run's export zip and reap runs whose trainer went silent (queue `score`).

Routing is in paintapp/celery.py. The render and score tasks live in the painting app.
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from paintapp.lib.workers import answering_queues
from training.models import Run, RunExport
from training.services import runs_resume_waiting
from training.trainer.lifecycle import runs_reap, train_run


@shared_task(
    name="training.tasks.run_training", bind=True, acks_late=True, reject_on_worker_lost=True,
    time_limit=settings.TRAIN_TIME_LIMIT_S, soft_time_limit=settings.TRAIN_TIME_LIMIT_S - 300,
)
def run_training(self, run_id: int, resume: bool = False) -> str:
    """Train one run to its end, stop or failure. Redelivered after a lost worker, it resumes
    (up to TRAIN_MAX_ATTEMPTS deliveries; an old task of a resumed run does nothing)."""
    # A worker that consumes `train` runs each task in a child of its own (paintapp/celery.py).
    return train_run(run_id, task_id=self.request.id, resume=resume,
                     one_run_process=self.app.conf.worker_max_tasks_per_child == 1)


@shared_task(name="training.tasks.reap_runs")
def reap_runs() -> list[int]:
    """Celery beat's periodic sweep: mark runs whose trainer stopped beating interrupted."""
    return runs_reap(now=timezone.now())


@shared_task(name="training.tasks.resume_waiting_runs")
def resume_waiting_runs() -> list[int]:
    """Celery beat's periodic check: resume the runs waiting for workers that answer again."""
    return [run.id for run in runs_resume_waiting(answering=answering_queues())]


@shared_task(name="training.tasks.build_run_export", acks_late=True)
def build_run_export(export_id: int) -> dict:
    """Build a requested run export's zip with progress (see paintapp.lib.exports)."""
    from training.export.dataset import (
        run_export_build,  # datasets is heavy: loaded by the task, not the module
    )

    export = run_export_build(export=RunExport.objects.select_related("run", "run__pool").get(id=export_id))
    return {"export_id": export_id, "status": export.status, "size_bytes": export.size_bytes}


@shared_task(name="training.tasks.merge_run_adapter", bind=True, acks_late=True)
def merge_run_adapter(self, run_id: int) -> dict:
    """Merge a run's adapter into its base model in the run's folder (the run page's button)."""
    from training.export.model import merge_run  # peft and transformers load in the task, not the module

    return merge_run(run=Run.objects.select_related("pool", "created_by").get(id=run_id), task_id=self.request.id)


@shared_task(name="training.tasks.revise_with_model", acks_late=True)
def revise_with_model(revision_id: int) -> dict:
    """The editor's "Ask the model to revise": the run's model writes the revision (queue
    `train`, where the model is); its time limits come with the request."""
    from training.editor.model_revision import revision_write  # torch loads in the task, not the module

    revision = revision_write(revision_id=revision_id)
    return {"revision_id": revision_id, "status": revision.status}
