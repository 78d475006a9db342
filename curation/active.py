"""Active grading: a curator's ungraded references ordered by how much grading each would teach
the taste judge, the ones it is least sure of first.

The judge (paintenv.judges.taste) is fitted on the curator's current grades, every time
they change (a fit is cached per set of grades). Its utility u is the judge's one-number view
of a painting; to say which tier that number points to, each tier's graded paintings give a
Gaussian on u (their mean utility, one spread pooled over the tiers: linear discriminant
analysis in one dimension) weighted by how often the curator used the tier. Uncertainty is
the entropy of that tier distribution in bits: 0 where u sits among one tier's paintings, 1
midway between two tiers, log2 3 where all three overlap. A pairwise model learns most from
the paintings it cannot yet place, and this reads "cannot place" on the tiers the curator
actually uses, not on an absolute utility scale (only differences of u mean anything).

The judge's guess itself is never returned: only the order, so nothing shown before a grade
can lean the curator towards it.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from curation.measuring import reference_features
from curation.models import Grade, Reference, Tier

# Fewer grades than this in a tier leave it out; fewer than two tiers with this many, no order.
# With 3 a tier, a judge fitted on two of each (the out-of-fold fits below) placed nothing: every
# painting came out near log2 3 bits, on sheets whose tier is plain from their paint coverage.
MIN_PER_TIER = 5
MIN_TIERS = 2


@dataclass(frozen=True)
class ActiveOrder:
    ids: list[int] | None  # ungraded references, most uncertain first; None: the usual order
    reason: str  # what the order is, or why it could not be made
    seconds: float = 0.0  # features, fit and scoring
    uncertainty: dict[int, float] | None = None  # bits per ungraded id (never a tier: no guess leaves here)


def tier_distribution(utilities: np.ndarray, graded: dict[str, np.ndarray]) -> np.ndarray:
    """P(tier | u) for each utility, one column per tier of `graded` ({tier: the utilities
    of that tier's graded paintings}): Gaussians at the tier means with the pooled
    within-tier spread, priors the tiers' shares."""
    tiers = list(graded)
    means = np.array([graded[t].mean() for t in tiers])
    counts = np.array([len(graded[t]) for t in tiers], dtype=np.float64)
    within = sum(float(((graded[t] - graded[t].mean()) ** 2).sum()) for t in tiers)
    spread = max(np.sqrt(within / max(counts.sum() - len(tiers), 1.0)), 1e-6)
    u = np.asarray(utilities, dtype=np.float64)[:, None]
    log_p = np.log(counts / counts.sum()) - 0.5 * ((u - means) / spread) ** 2
    log_p -= log_p.max(axis=1, keepdims=True)
    p = np.exp(log_p)
    return p / p.sum(axis=1, keepdims=True)


def entropy_bits(p: np.ndarray) -> np.ndarray:
    """Row-wise entropy in bits (0 · log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=1)


FOLDS = 5


@functools.lru_cache(maxsize=32)
def _fitted(grades: tuple[tuple[str, str], ...]):
    """judge_fit of these (image sha256, tier) grades, cached: the same grades of the same
    images, the same fit."""
    references = list(Reference.objects.filter(sha256__in=[sha for sha, _ in grades]).only("id", "sha256", "image"))
    features = dict(zip((r.sha256 for r in references), reference_features(references=references), strict=True))
    return judge_fit([(features[sha], tier) for sha, tier in grades])


def judge_fit(items: list[tuple[dict[str, float], str]]):
    """(model, {tier: graded utilities}) for (features, tier) items.

    The graded paintings' utilities are out of fold (each scored by a judge fitted without
    its fold): a nearly separable fit puts its own training paintings in tight clusters far
    apart, which would make every new painting look certain; out of fold, each tier's spread
    says how well the judge places a painting it has not seen, which is what a new one is.
    """
    from paintenv.judges.taste import fit_taste_model  # imports scipy (seconds): only this order pays it

    model = fit_taste_model(items, calibration_folds=0)
    tiers = [tier for _, tier in items]
    folds = min(FOLDS, *(tiers.count(tier) for tier in set(tiers)))
    fold_of = {}
    for tier in set(tiers):  # each tier dealt round the folds, so every fold's rest keeps every tier
        for n, i in enumerate(i for i, t in enumerate(tiers) if t == tier):
            fold_of[i] = n % folds
    utilities: dict[str, list[float]] = {}
    for fold in range(folds):
        rest = fit_taste_model([item for i, item in enumerate(items) if fold_of[i] != fold], calibration_folds=0)
        for i, (features, tier) in enumerate(items):
            if fold_of[i] == fold:
                utilities.setdefault(tier, []).append(rest.utility(features))
    return model, {tier: np.array(values) for tier, values in utilities.items()}


def uncertain_first(*, curator: AbstractBaseUser, queryset: QuerySet) -> ActiveOrder:
    """The references of `queryset` the curator has not graded, most uncertain first (see the
    module docstring); or ids None and the reason, with too few grades to fit a judge."""
    started = time.perf_counter()
    rows = list(Grade.objects.filter(curator=curator).order_by("reference_id").values_list("reference__sha256", "tier"))
    per_tier = {tier: sum(1 for _, t in rows if t == tier) for tier in Tier.values}
    usable = [tier for tier, n in per_tier.items() if n >= MIN_PER_TIER]
    if len(usable) < MIN_TIERS:
        have = ", ".join(f"{tier} {n}" for tier, n in per_tier.items())
        return ActiveOrder(None, f"Most-uncertain order needs at least {MIN_PER_TIER} grades in two tiers to fit "
                                 f"the taste judge; you have {have}. Showing the usual order.")
    model, graded = _fitted(tuple(row for row in rows if row[1] in usable))
    ungraded = list(queryset.exclude(grades__curator=curator).order_by("id").only("id", "image"))
    if not ungraded:
        return ActiveOrder([], "Nothing here is left ungraded by you.", time.perf_counter() - started)
    utilities = np.array([model.utility(features) for features in reference_features(references=ungraded)])
    uncertainty = entropy_bits(tier_distribution(utilities, graded))
    order = sorted(range(len(ungraded)), key=lambda i: (-uncertainty[i], ungraded[i].id))
    return ActiveOrder(
        [ungraded[i].id for i in order],
        f"Ungraded by you, the ones the taste judge (fitted on your {sum(per_tier.values())} grades) is least sure "
        "of first; its guesses stay hidden.",
        time.perf_counter() - started,
        {ungraded[i].id: float(uncertainty[i]) for i in order},
    )
