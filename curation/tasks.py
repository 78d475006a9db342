"""Thin Celery tasks for curation (queue `score`: they need the image-feature code)."""
from __future__ import annotations

from celery import shared_task

from curation.audit import judge_audit_execute
from curation.models import JudgeAudit, Pool, PoolExport


@shared_task(name="curation.tasks.train_taste_model", acks_late=True)
def train_taste_model(pool_id: int) -> dict:
    from curation.taste import taste_model_train

    taste = taste_model_train(pool=Pool.objects.get(id=pool_id))
    return {"pool_id": pool_id, "accuracy": taste.accuracy, "train_pairs": taste.train_pairs}


@shared_task(name="curation.tasks.build_pool_export", acks_late=True)
def build_pool_export(export_id: int) -> dict:
    """Build a requested pool export's zip with progress (see paintapp.lib.exports)."""
    from curation.export import pool_export_build  # datasets is heavy: loaded by the task, not the module

    export = pool_export_build(export=PoolExport.objects.select_related("pool").get(id=export_id))
    return {"export_id": export_id, "status": export.status, "size_bytes": export.size_bytes}


@shared_task(name="curation.tasks.run_judge_audit", acks_late=True)
def run_judge_audit(audit_id: int) -> dict:
    """Run a judge audit the pool page asked for, with progress on its row (see curation.audit)."""
    audit = judge_audit_execute(audit=JudgeAudit.objects.select_related("pool").get(id=audit_id))
    return {"audit_id": audit_id, "status": audit.status, "pairs": audit.pairs}
