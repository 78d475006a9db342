"""Training the embedded taste judge on a frozen pool (runs on a score worker at freeze time)."""
from __future__ import annotations

from django.core.files.storage import default_storage
from django.db import transaction

from curation.models import Pool, TasteModel


def _features_of(members) -> list[tuple[dict, str]]:
    # The image-feature code loads scipy (seconds): only score workers need it, not every web process.
    from paintapp.env.features import image_features

    items = []
    for member in members:
        with default_storage.open(member.reference.image, "rb") as fh:
            items.append((image_features(fh.read()), member.tier))
    return items


def taste_model_train(*, pool: Pool, seed: int = 0) -> TasteModel:
    """Fit the pairwise preference model on the train split, its temperature on the eval
    split's pairs (see paintapp.env.judges.taste); measure it on the eval split."""
    from paintapp.env.judges.taste import evaluate_taste_model, fit_taste_model

    members = pool.members.select_related("reference")
    train = _features_of(members.filter(split="train"))
    held_out = _features_of(members.filter(split="eval"))
    model = fit_taste_model(train, held_out=held_out, seed=seed)
    accuracy = evaluate_taste_model(model, held_out) if held_out else {}
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
