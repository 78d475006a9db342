"""Thin Celery tasks: they take plain values or ids and call services.

Routing (paintapp/celery.py): run_training -> `train`, render_sketch -> `render`,
score_painting and build_run_export -> `score`.
"""
from __future__ import annotations

from celery import shared_task
from celery.signals import worker_process_shutdown

from training import services
from training.models import RunExport


@shared_task(name="training.tasks.render_sketch", acks_late=True)
def render_sketch(
    code: str, seed: int = 0, size: int | None = None, strictness: str = "allowlist", render_failed_gate: bool = False
) -> dict:
    """Gate + sandboxed render of one sketch; the PNG is stored, its path returned.

    Idempotent: the same (code, seed, size) stores the same content-addressed file. A bad
    sketch is a verdict in the result; only infrastructure failure (RenderUnavailable)
    fails the task, which callers turn into a None reward.
    """
    return services.painting_render(
        code=code, seed=seed, size=size, strictness=strictness, render_failed_gate=render_failed_gate
    )


@shared_task(name="training.tasks.score_painting", acks_late=True)
def score_painting(png_path: str, prompt: str, recipe: dict, reference_ids: list[int], pool_id: int | None = None) -> dict:
    """Judge (both orders, against the group's references) and quality parts of one painting."""
    return services.painting_score_stored(
        png_path=png_path, prompt=prompt, recipe=recipe, reference_ids=reference_ids, pool_id=pool_id
    )


@shared_task(name="training.tasks.run_training", acks_late=True, reject_on_worker_lost=True)
def run_training(run_id: int, resume: bool = False) -> str:
    """Train one run to its end, stop or failure. Redelivered after a lost worker, it resumes."""
    from training.trainer import train_run

    return train_run(run_id, resume=resume)


@shared_task(name="training.tasks.build_run_export", acks_late=True)
def build_run_export(export_id: int) -> dict:
    """Build a requested run export's zip with progress (see paintapp.exports)."""
    from training.export import run_export_build  # datasets is heavy: loaded by the task, not the module

    export = run_export_build(export=RunExport.objects.select_related("run", "run__pool").get(id=export_id))
    return {"export_id": export_id, "status": export.status, "size_bytes": export.size_bytes}


@worker_process_shutdown.connect
def _close_renderer(**_kwargs) -> None:
    # Each pool process owns one warm browser; close it with the process, not by orphaning it.
    from paintapp.env.renderer import close_renderer

    close_renderer()
