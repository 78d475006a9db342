"""Reads of the rollout editor: what a rollout was judged with, its neighbours and verdicts."""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from curation.models import PoolMember, Provenance, Reference
from paintenv.reward import Recipe
from painting.pipeline import render_seed
from training.models import Revision, Rollout


def rollout_recipe(rollout: Rollout) -> Recipe:
    return Recipe.from_dict(rollout.run.recipe)


def rollout_render_settings(rollout: Rollout) -> dict:
    """The seed and size the trainer rendered this rollout with."""
    args = rollout.run.arguments
    index = rollout.group * args.num_generations + rollout.position
    return {"seed": render_seed(rollout.run.seed, rollout.step, index), "size": args.render_size}


def promoted_reference(rollout: Rollout) -> Reference | None:
    return Reference.objects.filter(provenance=Provenance.ROLLOUT, metadata__rollout_id=rollout.id).first()


def rollout_neighbours(rollout: Rollout) -> tuple[Rollout | None, Rollout | None]:
    """The previous and next rollout of the same run, in step / group / position order."""
    same_run = Rollout.objects.filter(run_id=rollout.run_id).only("id", "step", "group", "position")
    s, g, p = rollout.step, rollout.group, rollout.position
    before = Q(step__lt=s) | Q(step=s, group__lt=g) | Q(step=s, group=g, position__lt=p)
    after = Q(step__gt=s) | Q(step=s, group__gt=g) | Q(step=s, group=g, position__gt=p)
    return (
        same_run.filter(before).order_by("-step", "-group", "-position").first(),
        same_run.filter(after).order_by("step", "group", "position").first(),
    )


def reference_verdicts(rollout: Rollout, revision: Revision | None = None) -> list[dict]:
    """Each reference the rollout was judged against, its tier in the run's pool, and the
    verdicts of the original and of `revision`: the mean, then each presentation order with
    P(the painting is the better one) and the judge's reason."""
    references = {r.id: r for r in Reference.objects.filter(id__in=rollout.reference_ids)}
    tiers = dict(
        PoolMember.objects.filter(pool_id=rollout.run.pool_id, reference_id__in=rollout.reference_ids)
        .values_list("reference_id", "tier")
    )

    def by_reference(detail: dict) -> dict:
        return {v.get("reference_id"): v for v in (detail or {}).get("references", [])}

    def order(verdict: dict | None, candidate_first: bool) -> dict | None:
        found = [o for o in (verdict or {}).get("orders", []) if o.get("candidate_first") is candidate_first]
        return found[0] if found else None

    original = by_reference(rollout.judge_detail)
    edited = by_reference(revision.judge_detail) if revision is not None else {}
    rows = []
    for rid in rollout.reference_ids:
        mine, theirs = original.get(rid), edited.get(rid)
        rows.append({
            "id": rid, "reference": references.get(rid), "tier": tiers.get(rid, ""),
            "original_score": (mine or {}).get("score"), "revision_score": (theirs or {}).get("score"),
            "judged": mine is not None, "revision_judged": theirs is not None,
            "orders": [
                {"label": label, "original": order(mine, first), "revision": order(theirs, first)}
                for label, first in (("painting shown first", True), ("reference shown first", False))
            ],
        })
    return rows


def revision_elapsed_s(revision: Revision) -> float:
    if not revision.stage_started_at:
        return 0.0
    end = revision.finished_at or timezone.now()
    return max(0.0, (end - revision.stage_started_at) / timedelta(seconds=1))
