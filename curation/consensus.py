"""Consensus of several curators' grades: which tier each reference gets, or why it has none.

Plain mappings in, a dataclass out; no queries (curation.selectors.consensus_grades reads the
grades, curation.services.pool_freeze_consensus freezes the outcome). A curator who did not
grade a reference is simply not one of its graders: nothing is imputed.

Rules, over the graders of one reference (at least `min_graders` of them, else TOO_FEW):
- majority: the tier more than half of its graders gave. Otherwise TIE when the two commonest
  tiers are given equally often (1 love / 1 okay), NO_MAJORITY when not (2 love / 1 okay /
  1 reject of four: love is the most, but not more than half).
- unanimous: the tier when every grader gave it, else DISAGREE.
- mean: the mean of reject=0, okay=1, love=2 mapped to a tier: love from `love_at` (default
  1.5), okay from `okay_at` (default 0.5), reject below; a mean exactly on a threshold takes
  the higher tier. Every reference with enough graders gets a tier, so there is no tie.
A reference whose consensus tier is not one the pool takes is OUTSIDE_TIERS.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

RANK = {"reject": 0, "okay": 1, "love": 2}
RULES = ("majority", "unanimous", "mean")
DEFAULT_LOVE_AT = 1.5
DEFAULT_OKAY_AT = 0.5
DEFAULT_MIN_GRADERS = 2

# Why a reference is left out, in the order the builder shows them.
TIE = "tie"
NO_MAJORITY = "no_majority"
DISAGREE = "disagree"
TOO_FEW = "too_few"
OUTSIDE_TIERS = "outside_tiers"
LEFT_OUT = {
    TIE: "a tie between tiers",
    NO_MAJORITY: "no tier from more than half",
    DISAGREE: "graders disagree",
    TOO_FEW: "too few grades",
    OUTSIDE_TIERS: "consensus tier not taken",
}


class ConsensusError(ValueError):
    """ConsensusSettings a consensus cannot be built with, with a message fit for the curator."""


@dataclass(frozen=True)
class ConsensusSettings:
    rule: str = "majority"
    min_graders: int = DEFAULT_MIN_GRADERS
    love_at: float = DEFAULT_LOVE_AT
    okay_at: float = DEFAULT_OKAY_AT

    def checked(self) -> ConsensusSettings:
        if self.rule not in RULES:
            raise ConsensusError(f"unknown consensus rule {self.rule!r}; use majority, unanimous or mean")
        if self.min_graders < 1:
            raise ConsensusError("a consensus needs at least one grader per reference")
        if not 0 <= self.okay_at <= self.love_at <= 2:
            raise ConsensusError("mean thresholds must satisfy 0 ≤ okay-at ≤ love-at ≤ 2")
        return self

    def to_dict(self) -> dict:
        out = {"rule": self.rule, "min_graders": self.min_graders}
        if self.rule == "mean":
            out |= {"love_at": self.love_at, "okay_at": self.okay_at}
        return out


@dataclass(frozen=True)
class Outcome:
    tier: str | None  # None: left out, `reason` says why
    graders: int  # curators who graded it
    agreed: int  # graders who gave `tier` (0 when left out)
    reason: str = ""


@dataclass
class Consensus:
    settings: ConsensusSettings
    curators: list[str]
    outcomes: dict[int, Outcome]  # every reference in scope that at least one chosen curator graded
    ungraded: int  # references in scope nobody chosen graded
    graded_by: dict[str, int] = field(default_factory=dict)  # curator -> references in scope graded

    @property
    def members(self) -> dict[int, Outcome]:
        return {ref: o for ref, o in self.outcomes.items() if o.tier is not None}

    @property
    def left_out(self) -> dict[str, int]:
        """Counts per reason, every reason listed (0 included) so the page shows each rule."""
        counts = Counter(o.reason for o in self.outcomes.values() if o.tier is None)
        return {reason: counts.get(reason, 0) for reason in LEFT_OUT}

    def summary(self) -> dict:
        """What the Pool records of how it was made."""
        return {
            **self.settings.to_dict(), "curators": self.curators, "in": len(self.members),
            "left_out": self.left_out, "ungraded": self.ungraded, "graded_by": self.graded_by,
        }


def consensus(
    grades: Mapping[str, Mapping[int, str]], references: Iterable[int], *, settings: ConsensusSettings,
    tiers: Iterable[str],
) -> Consensus:
    """The consensus of `grades` ({curator: {reference: tier}}) over `references`."""
    settings = settings.checked()
    taken = set(tiers)
    outcomes: dict[int, Outcome] = {}
    ungraded = 0
    for ref in sorted(set(references)):
        given = [by_curator[ref] for by_curator in grades.values() if ref in by_curator]
        if not given:
            ungraded += 1
            continue
        outcome = _outcome(given, settings)
        if outcome.tier is not None and outcome.tier not in taken:
            outcome = Outcome(tier=None, graders=outcome.graders, agreed=0, reason=OUTSIDE_TIERS)
        outcomes[ref] = outcome
    refs = set(outcomes)
    graded_by = {name: len(refs & set(by_curator)) for name, by_curator in grades.items()}
    return Consensus(settings=settings, curators=list(grades), outcomes=outcomes, ungraded=ungraded,
                     graded_by=graded_by)


def _outcome(given: list[str], settings: ConsensusSettings) -> Outcome:
    n = len(given)
    if n < settings.min_graders:
        return Outcome(tier=None, graders=n, agreed=0, reason=TOO_FEW)
    counts = Counter(given).most_common()
    if settings.rule == "mean":
        mean = sum(RANK[t] for t in given) / n
        tier = "love" if mean >= settings.love_at else "okay" if mean >= settings.okay_at else "reject"
        return Outcome(tier=tier, graders=n, agreed=given.count(tier))
    top, top_n = counts[0]
    if settings.rule == "unanimous":
        return Outcome(tier=top, graders=n, agreed=n) if top_n == n else Outcome(None, n, 0, DISAGREE)
    if 2 * top_n > n:
        return Outcome(tier=top, graders=n, agreed=top_n)
    return Outcome(None, n, 0, TIE if counts[1][1] == top_n else NO_MAJORITY)
