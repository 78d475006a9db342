"""Agreement between curators: is the taste in a pool one person's, or shared?

Plain mappings in, dataclasses out; no queries here (curation.selectors.agreement_input
reads the grades). Tiers are ordinal: reject < okay < love. Grades may be missing.

- Per pair of curators, on the references both graded: n, percent agreement, Cohen's kappa
  (unweighted, scikit-learn) and linear-weighted kappa (a love/reject split counts twice an
  adjacent one), and the 3×3 confusion table (rows: the first curator, columns: the second).
- Over all chosen curators: Krippendorff's alpha at the ordinal level (the `krippendorff`
  package; any number of curators, missing grades allowed) and percent agreement: for every
  reference graded by two or more, the share of its pairs of grades that agree, averaged
  over those references (each reference counts once).
- 95% percentile bootstrap intervals for all of them, resampling references, seeded.
- The same per subject.

A figure that cannot be computed (one curator, too few shared references, a single tier
throughout) is None with a reason, never a made-up 0.

Imports: `krippendorff` and scikit-learn are imported inside the two functions that compute
with them, not here. Every process that loads the URLs imports this module (the pool pages
link to the agreement report), the train worker and `migrate` included, and a lean GPU image
without those packages must still train and migrate (tests/test_lean_imports.py).
"""
from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

TIERS_IN_ORDER = ("reject", "okay", "love")  # ordinal: index is rank
_CODE = {tier: rank for rank, tier in enumerate(TIERS_IN_ORDER)}
_LABELS = list(range(len(TIERS_IN_ORDER)))

CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
# Fewer shared references than this and a figure is noise: it is left out, with the reason.
MIN_SHARED = 5
# Figures on fewer shared references than this are shown, flagged as resting on few.
FEW_SHARED = 20
# A bootstrap where more resamples than this share have an undefined figure (say, a single
# tier drawn throughout) gives no interval: the defined ones alone would flatter it.
MAX_UNDEFINED_SHARE = 0.1
NO_SUBJECT = "(no subject)"

# Disagreement weights for kappa, as scikit-learn builds them: unweighted counts every
# disagreement as 1, linear counts a love/reject split as 2.
_UNWEIGHTED = 1.0 - np.eye(len(TIERS_IN_ORDER))
_LINEAR = np.abs(np.subtract.outer(_LABELS, _LABELS)).astype(float)

Progress = Callable[..., Iterable]  # tqdm's signature: progress(iterable, total=..., desc=...)


@dataclass(frozen=True)
class Estimate:
    """A figure with its bootstrap interval. `value` None: not computable, `reason` says why;
    a value without an interval also says why in `reason`."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str = ""

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


@dataclass(frozen=True)
class PairAgreement:
    a: str
    b: str
    n: int  # references both graded
    percent: Estimate
    kappa: Estimate  # Cohen's, unweighted
    weighted_kappa: Estimate  # Cohen's, linear weights
    confusion: tuple[tuple[int, ...], ...]  # rows: a's tier, columns: b's tier, in TIERS_IN_ORDER

    @property
    def few(self) -> bool:
        return self.n < FEW_SHARED

    @property
    def confusion_rows(self) -> list[dict]:
        """For a heat-coloured table: each cell's count and its share of n in whole percent."""
        return [
            {"tier": tier, "cells": [
                {"tier": other, "count": count, "share": round(100 * count / self.n) if self.n else 0,
                 "agree": tier == other}
                for other, count in zip(TIERS_IN_ORDER, row, strict=True)
            ]}
            for tier, row in zip(TIERS_IN_ORDER, self.confusion, strict=True)
        ]


@dataclass(frozen=True)
class GroupAgreement:
    """Agreement over one set of references: all of them, or one subject's."""

    subject: str | None  # None: every reference in scope
    references: int  # graded by at least one chosen curator
    shared: int  # graded by at least two
    percent: Estimate
    alpha: Estimate  # Krippendorff's, ordinal
    pairs: tuple[PairAgreement, ...]

    @property
    def few(self) -> bool:
        return self.shared < FEW_SHARED


@dataclass(frozen=True)
class CuratorCount:
    name: str
    graded: int


@dataclass(frozen=True)
class AgreementReport:
    curators: tuple[CuratorCount, ...]
    overall: GroupAgreement
    subjects: tuple[GroupAgreement, ...]
    resamples: int
    seed: int
    min_shared: int
    confidence: float = CONFIDENCE
    reason: str = ""  # non-empty when there is nothing to compare (fewer than two curators)
    tiers: tuple[str, ...] = field(default=TIERS_IN_ORDER)

    @property
    def comparable(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict:
        return asdict(self)


class AgreementError(ValueError):
    """The grades handed in cannot be read (an unknown tier)."""


def agreement(
    grades: Mapping[str, Mapping[int, str]],
    subjects: Mapping[int, str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    min_shared: int = MIN_SHARED,
    progress: Progress | None = None,
) -> AgreementReport:
    """grades: {curator name: {reference id: tier}}; subjects: {reference id: subject}.

    Every curator named in `grades` is compared, also one with no grades (whose pairs then
    say that nobody's references overlap with theirs). `progress`, if given, wraps the loop
    over the groups (overall, then each subject) like tqdm does.
    """
    if resamples < 0:
        raise AgreementError("resamples must be 0 or more")
    if min_shared < 2:
        raise AgreementError("min_shared must be at least 2: agreement needs two references to vary over")
    codes = _codes_of(grades)
    subjects = subjects or {}
    names = sorted(codes)
    counts = tuple(CuratorCount(name=name, graded=len(codes[name])) for name in names)
    graders = [name for name in names if codes[name]]
    reason = ""
    if len(graders) < 2:
        who = f"only {graders[0]} has" if graders else "nobody has"
        reason = f"agreement needs grades from at least two curators; {who} graded these references"
    by_subject: dict[str, set[int]] = {}
    for reference in sorted({ref for graded in codes.values() for ref in graded}):
        by_subject.setdefault(subjects.get(reference) or NO_SUBJECT, set()).add(reference)

    groups: list[tuple[str | None, set[int] | None]] = [(None, None), *sorted(by_subject.items())]
    wrapped = progress(groups, total=len(groups), desc="agreement") if progress else groups
    computed = [
        _group(codes, names, subject=subject, only=only, resamples=resamples, seed=seed,
               min_shared=min_shared, reason=reason)
        for subject, only in wrapped
    ]
    return AgreementReport(
        curators=counts, overall=computed[0], subjects=tuple(computed[1:]), resamples=resamples, seed=seed,
        min_shared=min_shared, reason=reason,
    )


def _codes_of(grades: Mapping[str, Mapping[int, str]]) -> dict[str, dict[int, int]]:
    codes: dict[str, dict[int, int]] = {}
    for name, graded in grades.items():
        codes[str(name)] = {}
        for reference, tier in graded.items():
            if tier not in _CODE:
                raise AgreementError(
                    f"{name}'s grade of reference {reference} is {tier!r}; tiers are {', '.join(TIERS_IN_ORDER)}"
                )
            codes[str(name)][reference] = _CODE[tier]
    return codes


def _rng(seed: int, *key: str) -> np.random.Generator:
    """One stream per figure, named by what it is about, so a subject's intervals do not
    change when another subject gains a reference."""
    return np.random.default_rng([seed, *(zlib.crc32(part.encode()) for part in key)])


def _group(
    codes: dict[str, dict[int, int]], names: list[str], *, subject: str | None, only: set[int] | None,
    resamples: int, seed: int, min_shared: int, reason: str,
) -> GroupAgreement:
    within = {name: {ref: code for ref, code in graded.items() if only is None or ref in only}
              for name, graded in codes.items()}
    references = sorted({ref for graded in within.values() for ref in graded})
    # value_counts: one row per reference graded by two or more, one column per tier
    rows = [[0] * len(TIERS_IN_ORDER) for _ in references]
    for graded in within.values():
        for position, ref in enumerate(references):
            if ref in graded:
                rows[position][graded[ref]] += 1
    value_counts = np.array([row for row in rows if sum(row) >= 2], dtype=int).reshape(-1, len(TIERS_IN_ORDER))
    shared = len(value_counts)
    key = subject if subject is not None else "*"
    if reason:
        percent = alpha = Estimate(None, reason=reason)
    elif shared < min_shared:
        percent = alpha = Estimate(None, reason=_too_few(shared, "graded by two or more curators", min_shared))
    else:
        percent, alpha = _group_figures(value_counts, resamples=resamples, rng=_rng(seed, key, "group"))
    pairs = tuple(
        _pair(a, b, within[a], within[b], resamples=resamples, rng=_rng(seed, key, a, b), min_shared=min_shared)
        for a, b in itertools.combinations(names, 2)
    )
    return GroupAgreement(
        subject=subject, references=len(references), shared=shared, percent=percent, alpha=alpha, pairs=pairs,
    )


def _too_few(n: int, what: str, min_shared: int) -> str:
    return f"only {n} reference{'' if n == 1 else 's'} {what}; needs at least {min_shared}"


# ---- overall: percent agreement and Krippendorff's alpha over references -----------------

def _group_figures(value_counts: np.ndarray, *, resamples: int, rng: np.random.Generator) -> tuple[Estimate, Estimate]:
    percent_point = float(_mean_reference_agreement(value_counts[np.newaxis]).item())
    alpha_point, alpha_reason = _alpha(value_counts)
    if resamples == 0:
        return (_without_interval(percent_point), Estimate(alpha_point, reason=alpha_reason or _NO_RESAMPLES))
    picks = rng.integers(0, len(value_counts), size=(resamples, len(value_counts)))
    percent = _interval(percent_point, _mean_reference_agreement(value_counts[picks]))
    if alpha_point is None:
        return percent, Estimate(None, reason=alpha_reason)
    # The coincidence matrix is a sum over references, so a resample's is the sum of its picks'.
    per_reference = _coincidences_per_reference(value_counts)
    return percent, _interval(alpha_point, ordinal_alpha_of_coincidences(per_reference[picks].sum(axis=1)))


def _mean_reference_agreement(value_counts: np.ndarray) -> np.ndarray:
    """(..., references, tiers) -> (...): per reference the share of its pairs of grades that
    agree, Σ c(c-1) / m(m-1), averaged over the references."""
    graders = value_counts.sum(axis=-1)
    agreeing = (value_counts * (value_counts - 1)).sum(axis=-1)
    return (agreeing / (graders * (graders - 1))).mean(axis=-1)


def _alpha(value_counts: np.ndarray) -> tuple[float | None, str]:
    used = value_counts.sum(axis=0)
    if np.count_nonzero(used) < 2:
        tier = TIERS_IN_ORDER[int(np.argmax(used))]
        return None, f"every grade on the shared references is {tier}: alpha needs more than one tier to compare"
    import krippendorff  # here, not at the top: see the module docstring

    value = krippendorff.alpha(value_counts=value_counts, value_domain=_LABELS, level_of_measurement="ordinal")
    return float(value), ""


def _coincidences_per_reference(value_counts: np.ndarray) -> np.ndarray:
    """(references, tiers) -> (references, tiers, tiers): each reference's ordered pairs of
    grades, over its number of grades less one (Krippendorff's coincidences)."""
    pairs = value_counts[:, :, np.newaxis] * value_counts[:, np.newaxis, :] - value_counts[:, :, np.newaxis] * np.eye(
        value_counts.shape[1], dtype=int)
    return pairs / (value_counts.sum(axis=1) - 1)[:, np.newaxis, np.newaxis]


def ordinal_alpha_of_coincidences(coincidences: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal alpha of many coincidence matrices at once, (k, V, V) -> (k,),
    nan where undefined (a single tier throughout).

    The bootstrap needs thousands of alphas; the `krippendorff` package gives the point
    estimate and takes a tenth of a millisecond a call, so the resamples use this, the same
    formula: alpha = 1 − (n − 1)·Σ o·δ² / Σ_(c≠k) n_c·n_k·δ², with the ordinal distance
    δ²(c, k) = (Σ_(g=c..k) n_g − (n_c + n_k) / 2)². The tests hold it equal to the package.
    """
    o = np.asarray(coincidences, dtype=float)
    n_v = o.sum(axis=1)  # (k, V)
    n = n_v.sum(axis=1)
    ranks = np.arange(o.shape[1])
    low, high = np.minimum.outer(ranks, ranks), np.maximum.outer(ranks, ranks)
    through = np.cumsum(n_v, axis=1)
    between = through[:, high] - through[:, low] + n_v[:, low]  # Σ n_g for g from low to high
    distance = (between - (n_v[:, :, np.newaxis] + n_v[:, np.newaxis, :]) / 2) ** 2
    expected = n_v[:, :, np.newaxis] * n_v[:, np.newaxis, :]  # the diagonal's distance is 0
    observed_disagreement = (o * distance).sum(axis=(1, 2))
    expected_disagreement = (expected * distance).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected_disagreement > 0, 1 - (n - 1) * observed_disagreement / expected_disagreement, np.nan)


# ---- pairs: percent agreement, Cohen's kappa, the confusion table ------------------------

def _pair(
    a: str, b: str, a_grades: dict[int, int], b_grades: dict[int, int], *,
    resamples: int, rng: np.random.Generator, min_shared: int,
) -> PairAgreement:
    from sklearn.metrics import cohen_kappa_score, confusion_matrix  # here, not at the top: see the docstring

    both = sorted(a_grades.keys() & b_grades.keys())
    a_codes = np.array([a_grades[ref] for ref in both], dtype=int)
    b_codes = np.array([b_grades[ref] for ref in both], dtype=int)
    n = len(both)
    table = confusion_matrix(a_codes, b_codes, labels=_LABELS) if n else np.zeros((3, 3), dtype=int)
    confusion = tuple(tuple(int(count) for count in row) for row in table)
    if n < min_shared:
        missing = Estimate(None, reason=_too_few(n, f"graded by both {a} and {b}", min_shared))
        return PairAgreement(a=a, b=b, n=n, percent=missing, kappa=missing, weighted_kappa=missing, confusion=confusion)
    percent_point = float(np.mean(a_codes == b_codes))
    kappa_reason = ""
    if len(set(a_codes) | set(b_codes)) < 2:
        kappa_reason = (f"{a} and {b} graded every shared reference {TIERS_IN_ORDER[a_codes[0]]}: "
                        "kappa needs more than one tier to compare")
        kappa_point = weighted_point = None
    else:
        kappa_point = float(cohen_kappa_score(a_codes, b_codes, labels=_LABELS))
        weighted_point = float(cohen_kappa_score(a_codes, b_codes, labels=_LABELS, weights="linear"))
    if resamples == 0:
        return PairAgreement(
            a=a, b=b, n=n, percent=_without_interval(percent_point),
            kappa=Estimate(kappa_point, reason=kappa_reason or _NO_RESAMPLES),
            weighted_kappa=Estimate(weighted_point, reason=kappa_reason or _NO_RESAMPLES), confusion=confusion,
        )
    # Resample references: each resample's confusion table, as counts of a*3+b per row.
    picks = rng.integers(0, n, size=(resamples, n))
    cell = (a_codes * len(_LABELS) + b_codes)[picks] + len(_LABELS) ** 2 * np.arange(resamples)[:, np.newaxis]
    tables = np.bincount(cell.ravel(), minlength=resamples * len(_LABELS) ** 2).reshape(resamples, 3, 3)
    percent = _interval(percent_point, np.trace(tables, axis1=1, axis2=2) / n)
    if kappa_point is None:
        kappa = weighted = Estimate(None, reason=kappa_reason)
    else:
        kappa = _interval(kappa_point, kappa_of_tables(tables, _UNWEIGHTED))
        weighted = _interval(weighted_point, kappa_of_tables(tables, _LINEAR))
    return PairAgreement(a=a, b=b, n=n, percent=percent, kappa=kappa, weighted_kappa=weighted, confusion=confusion)


def kappa_of_tables(tables: np.ndarray, disagreement: np.ndarray) -> np.ndarray:
    """Cohen's kappa of many confusion tables at once, (k, 3, 3) -> (k,), nan where undefined.

    The bootstrap needs thousands of kappas and scikit-learn's takes milliseconds a call,
    so the resamples use this, the same formula on the resampled tables: 1 − Σ w·observed /
    Σ w·expected, expected = outer(row sums, column sums) / n. The tests hold it equal to
    cohen_kappa_score, which gives the point estimates.
    """
    tables = np.asarray(tables, dtype=float)
    n = tables.sum(axis=(1, 2))
    expected = tables.sum(axis=2)[:, :, np.newaxis] * tables.sum(axis=1)[:, np.newaxis, :] / n[:, np.newaxis, np.newaxis]
    observed_disagreement = (tables * disagreement).sum(axis=(1, 2))
    expected_disagreement = (expected * disagreement).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected_disagreement > 0, 1 - observed_disagreement / expected_disagreement, np.nan)


# ---- intervals ----------------------------------------------------------------------------

_NO_RESAMPLES = "no interval: no bootstrap resamples were asked for"


def _without_interval(point: float) -> Estimate:
    return Estimate(point, reason=_NO_RESAMPLES)


def _interval(point: float, samples: np.ndarray) -> Estimate:
    """The percentile interval of the resampled figures."""
    samples = np.asarray(samples, dtype=float)
    defined = samples[np.isfinite(samples)]
    undefined = len(samples) - len(defined)
    if undefined > MAX_UNDEFINED_SHARE * len(samples):
        return Estimate(point, reason=(
            f"no interval: in {undefined} of {len(samples)} resamples the figure was undefined "
            "(a single tier drawn throughout); grade more shared references"
        ))
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return Estimate(point, low=float(low), high=float(high))
