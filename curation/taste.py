"""Training the embedded taste judge on a frozen pool (runs on a score worker at freeze time)."""
from __future__ import annotations

from django.db import transaction

from curation.measuring import reference_features
from curation.models import Grade, Pool, TasteModel


def _features_of(members) -> list[tuple[dict, str, int]]:
    """(image features, tier, reference id) per member."""
    members = list(members)
    features = reference_features(references=[member.reference for member in members])
    return [(f, member.tier, member.reference_id) for f, member in zip(features, members, strict=True)]


def _by_curator(model, held_out: list[tuple[dict, str, int]], pool: Pool) -> dict[str, dict]:
    """The judge's held-out figures against every curator who graded the eval references, by
    username (the pool's own curator included, on their current grades), each with the
    number of eval references that curator graded."""
    from paintenv.judges.taste import evaluate_taste_model

    features_of = {ref: features for features, _, ref in held_out}
    grades: dict[str, list[tuple[dict, str]]] = {}
    rows = (Grade.objects.filter(reference_id__in=features_of).select_related("curator")
            .order_by("curator__username", "reference_id"))
    for grade in rows:
        grades.setdefault(grade.curator.get_username(), []).append((features_of[grade.reference_id], grade.tier))
    own = pool.curator.get_username() if pool.curator_id else None
    report = {}
    for username, items in grades.items():
        figures = evaluate_taste_model(model, items)
        figures.pop("reliability", None)
        report[username] = {"graded": len(items), "own": username == own, **figures}
    return report


def taste_model_train(*, pool: Pool, seed: int = 0) -> TasteModel:
    """Fit the pairwise preference model on the train split, its temperature on the eval
    split's pairs (see paintenv.judges.taste); measure it on the eval split, per pair kind
    with intervals, and against each curator who graded the eval references ("by_curator")."""
    from paintenv.judges.taste import evaluate_taste_model, fit_taste_model

    members = pool.members.select_related("reference")
    train = [(f, tier) for f, tier, _ in _features_of(members.filter(split="train"))]
    held_out_refs = _features_of(members.filter(split="eval"))
    held_out = [(f, tier) for f, tier, _ in held_out_refs]
    model = fit_taste_model(train, held_out=held_out, seed=seed)
    accuracy = evaluate_taste_model(model, held_out) if held_out else {}
    if held_out:
        accuracy["by_curator"] = _by_curator(model, held_out_refs, pool)
    params = model.to_dict()
    with transaction.atomic():
        taste, _ = TasteModel.objects.update_or_create(
            pool=pool,
            defaults={"params": params, "accuracy": accuracy, "train_pairs": int(params.get("trained_pairs", 0) or 0)},
        )
    return taste


def taste_model_for(pool: Pool) -> TasteModel:
    """The pool's taste model, trained now if the freeze-time task has not run yet."""
    existing = TasteModel.objects.filter(pool=pool).first()
    return existing or taste_model_train(pool=pool)
