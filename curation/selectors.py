"""Reads for curation: filtered reference lists, tier counts, pool balance and diffs, the
grades that agreement between curators is computed from."""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery

from curation.models import (
    AuditStatus,
    Grade,
    GradeBatch,
    GradeEvent,
    JudgeAudit,
    Pool,
    PoolMember,
    Reference,
    Tier,
)

TIER_FILTERS = ("all", "ungraded", "graded", *Tier.values)


@dataclass(frozen=True)
class ReferenceFilter:
    """What the grid, the bulk actions and the pool builder select — always server-side.

    Read from request parameters by curation.forms.ReferenceFilterForm.
    """

    tier: str = "all"
    subject: str = ""
    provenance: str = ""
    has_source: bool | None = None

    def to_params(self) -> dict[str, str]:
        params = {"tier": self.tier, "subject": self.subject, "provenance": self.provenance}
        if self.has_source is not None:
            params["has_source"] = "yes" if self.has_source else "no"
        return {k: v for k, v in params.items() if v and v != "all"}

    def to_dict(self) -> dict:
        return asdict(self)

    def without_tier(self) -> ReferenceFilter:
        return ReferenceFilter(subject=self.subject, provenance=self.provenance, has_source=self.has_source)


SHOW_MODES = ("one", "all", "disagree")
ORDERS = ("", "uncertain")


@dataclass(frozen=True)
class GradeView:
    """How the grid and the focus view show grades, beside the ReferenceFilter (read from the
    query string by curation.forms.GradeViewForm, so links carry it without JavaScript).

    show: "one" (one curator's grades), "all" (every curator's grade on each reference), or
    "disagree" (only references two or more of `among` — everyone when empty — graded
    differently). order "uncertain": the signed-in curator's ungraded references first, the
    ones the taste judge is least sure of leading (curation.active).
    """

    show: str = "one"
    among: tuple[str, ...] = ()
    order: str = ""

    def to_params(self) -> dict[str, str | list[str]]:
        params: dict[str, str | list[str]] = {}
        if self.show != "one":
            params["show"] = self.show
        if self.among and self.show == "disagree":
            params["among"] = list(self.among)
        if self.order:
            params["order"] = self.order
        return params

    @property
    def shows_others(self) -> bool:
        return self.show in ("all", "disagree")


def graded_by(queryset: QuerySet, curator: AbstractBaseUser) -> QuerySet:
    """Only the references the curator has graded (what a blind curator may see others' grades of)."""
    return queryset.filter(Exists(Grade.objects.filter(reference=OuterRef("pk"), curator=curator)))


def disagreed(queryset: QuerySet, *, among: tuple[str, ...] = ()) -> QuerySet:
    """The references graded by two or more of the curators `among` (usernames; everyone when
    empty) with differing tiers."""
    split = (_grades_of(among).values("reference").annotate(n=Count("id"), kinds=Count("tier", distinct=True))
             .filter(n__gte=2, kinds__gte=2).values("reference"))
    return queryset.filter(id__in=split)


def shared_count(*, references: QuerySet, among: tuple[str, ...] = ()) -> int:
    """How many of `references` two or more of the curators `among` (everyone when empty) graded."""
    return references.filter(id__in=_grades_of(among).values("reference").annotate(n=Count("id"))
                             .filter(n__gte=2).values("reference")).count()


def _grades_of(among: tuple[str, ...]) -> QuerySet:
    grades = Grade.objects.all()
    if among:
        grades = grades.filter(**{f"curator__{get_user_model().USERNAME_FIELD}__in": among})
    return grades


@dataclass(frozen=True)
class CuratorGrade:
    curator: str
    tier: str | None  # None: hidden from a blind viewer who has not graded the reference yet


def curator_grades(reference_ids: list[int], *, viewer: AbstractBaseUser, blind: bool) -> dict[int, list[CuratorGrade]]:
    """Every curator's grade on these references, the viewer's first, then by name. Blind: on
    a reference the viewer has not graded, the others' tiers are None (hidden)."""
    name_field = get_user_model().USERNAME_FIELD
    rows = (Grade.objects.filter(reference_id__in=reference_ids)
            .values_list("reference_id", "curator_id", f"curator__{name_field}", "tier")
            .order_by("reference_id", f"curator__{name_field}"))
    mine = {ref for ref, curator_id, _, _ in rows if curator_id == viewer.pk}
    out: dict[int, list[CuratorGrade]] = {ref: [] for ref in reference_ids}
    for ref, curator_id, name, tier in rows:
        if curator_id == viewer.pk:
            out[ref].insert(0, CuratorGrade(name, tier))
        else:
            out[ref].append(CuratorGrade(name, tier if (ref in mine or not blind) else None))
    return out


def with_tier(queryset: QuerySet, curator: AbstractBaseUser) -> QuerySet:
    """Annotate references with `tier`: the curator's current grade, or None."""
    grade = Grade.objects.filter(reference=OuterRef("pk"), curator=curator).values("tier")[:1]
    return queryset.annotate(tier=Subquery(grade))


def reference_list(*, curator: AbstractBaseUser, flt: ReferenceFilter) -> QuerySet:
    qs = with_tier(references_filtered(flt.without_tier()), curator)
    if flt.tier == "ungraded":
        qs = qs.filter(tier__isnull=True)
    elif flt.tier == "graded":
        qs = qs.filter(tier__isnull=False)
    elif flt.tier in Tier.values:
        qs = qs.filter(tier=flt.tier)
    return qs.order_by("id")


def references_filtered(flt: ReferenceFilter) -> QuerySet:
    """References under the filter's subject, provenance and source criteria (not its tier)."""
    qs = Reference.objects.all()
    if flt.subject:
        qs = qs.filter(subject=flt.subject)
    if flt.provenance:
        qs = qs.filter(provenance=flt.provenance)
    if flt.has_source is True:
        qs = qs.exclude(source="")
    elif flt.has_source is False:
        qs = qs.filter(source="")
    return qs.order_by("id")


@dataclass(frozen=True)
class ConsensusScope:
    """The current grades of the chosen curators on the references a filter selects."""

    grades: dict[str, dict[int, str]]  # {username: {reference id: tier}}, every chosen curator listed
    references: list[int]
    curators: list[AbstractBaseUser]


def consensus_scope(*, usernames: list[str], flt: ReferenceFilter) -> ConsensusScope:
    """Raises UnknownCurator for a name nobody has."""
    users = _named_curators(list(dict.fromkeys(usernames)))
    references = references_filtered(flt.without_tier())
    rows = Grade.objects.filter(reference__in=references, curator__in=users.values())
    return ConsensusScope(
        grades=_grades_by_curator(rows, users), references=list(references.values_list("id", flat=True)),
        curators=list(users.values()),
    )


def _named_curators(names: list[str]) -> dict[str, AbstractBaseUser]:
    """{username: user} for `names`, in their order; UnknownCurator for a name nobody has."""
    User = get_user_model()
    users = {user.get_username(): user for user in User.objects.filter(**{f"{User.USERNAME_FIELD}__in": names})}
    unknown = [name for name in names if name not in users]
    if unknown:
        raise UnknownCurator(f"no curator named {', '.join(repr(name) for name in unknown)}")
    return {name: users[name] for name in names}


def _grades_by_curator(grades: QuerySet, names: Iterable[str]) -> dict[str, dict[int, str]]:
    """{username: {reference id: tier}} of these Grade rows; every one of `names` is listed,
    with no grades where it has none."""
    out: dict[str, dict[int, str]] = {name: {} for name in names}
    rows = grades.values_list(f"curator__{get_user_model().USERNAME_FIELD}", "reference_id", "tier")
    for name, reference_id, tier in rows.order_by("reference_id"):
        out.setdefault(name, {})[reference_id] = tier
    return out


@dataclass(frozen=True)
class PoolGrader:
    username: str
    members_graded: int  # members of the pool this curator had graded when it was frozen


def pool_graders(pool: Pool) -> list[PoolGrader]:
    """Who graded the pool; a single curator's pool: its curator, who graded every member."""
    if not pool.is_consensus:
        return [PoolGrader(username=pool.curator.get_username(), members_graded=pool.members.count())]
    counts = pool.consensus.get("members_graded", {})
    return [PoolGrader(username=name, members_graded=counts.get(name, 0)) for name in pool.consensus["curators"]]


def tier_counts(
    *, curator: AbstractBaseUser, flt: ReferenceFilter | None = None, view: GradeView = GradeView(),
    viewer: AbstractBaseUser | None = None, blind: bool = False,
) -> dict[str, int]:
    """Counts per tier (and ungraded, and all) under the filter's other criteria and the view's
    mode, as `viewer` (default: the curator) may see them (see grade_view_list)."""
    base = grade_view_list(curator=curator, viewer=viewer or curator, flt=(flt or ReferenceFilter()).without_tier(),
                           view=view, blind=blind)
    rows = base.order_by().values("tier").annotate(n=Count("id")).values_list("tier", "n")
    by_tier = Counter(dict(rows))
    counts = {tier: by_tier.get(tier, 0) for tier in Tier.values}
    counts["ungraded"] = by_tier.get(None, 0)
    counts["all"] = sum(by_tier.values())
    return counts


def subjects() -> list[str]:
    return list(Reference.objects.exclude(subject="").values_list("subject", flat=True).distinct().order_by("subject"))


@dataclass(frozen=True)
class FocusWalk:
    """The references the focus view walks through, in order, and which of them are graded."""

    ids: list[int]
    graded_ids: list[int]


def focus_walk(
    *, curator: AbstractBaseUser, flt: ReferenceFilter, reference_id: int, view: GradeView = GradeView(),
    blind: bool = False, order: list[int] | None = None,
) -> FocusWalk:
    """The filter's references (under the view's mode); the shown one is kept in the walk even
    when a grade took it out of the filter (an "ungraded" walk), so Previous and Next still lead
    from it. `order`: ids in the order to walk (active grading); the others follow by id, and a
    shown one outside it leads, so Next goes to the most uncertain one left."""
    rows = list(grade_view_list(curator=curator, viewer=curator, flt=flt, view=view, blind=blind).values_list("id", "tier"))
    if reference_id not in {ref for ref, _ in rows}:
        tier = Grade.objects.filter(reference_id=reference_id, curator=curator).values_list("tier", flat=True).first()
        rows = sorted([*rows, (reference_id, tier)])
    if order is not None:
        rank = {ref: i for i, ref in enumerate(order)}
        leads = reference_id not in rank  # just graded, so out of the order: it leads the walk
        rows.sort(key=lambda row: (not (leads and row[0] == reference_id), rank.get(row[0], len(rank)), row[0]))
    return FocusWalk(ids=[ref for ref, _ in rows], graded_ids=[ref for ref, tier in rows if tier])


def grade_view_list(
    *, curator: AbstractBaseUser, viewer: AbstractBaseUser, flt: ReferenceFilter, view: GradeView, blind: bool,
) -> QuerySet:
    """reference_list of `curator`'s grades under the view's mode, as `viewer` may see it: a
    blind viewer sees another curator's tiers, and disagreements, only on references they have
    graded themselves (a tier filter on another's grades would tell them otherwise)."""
    qs = reference_list(curator=curator, flt=flt)
    if view.show == "disagree":
        qs = disagreed(qs, among=view.among)
    if blind and (view.show == "disagree" or curator.pk != viewer.pk):
        qs = graded_by(qs, viewer)
    return qs


def pool_audits(pool: Pool) -> tuple[JudgeAudit | None, JudgeAudit | None]:
    """(the latest judge audit of the pool in any state, the latest one that is done)."""
    return pool.judge_audits.first(), pool.judge_audits.filter(status=AuditStatus.DONE).first()


def last_bulk_action(curator: AbstractBaseUser) -> GradeBatch | None:
    """The curator's latest bulk action, while it can still be undone."""
    latest = GradeBatch.objects.filter(curator=curator).first()
    return latest if latest is not None and latest.undone_at is None and latest.changed else None


HISTORY_LENGTH = 8


def grade_history(reference: Reference, *, viewer: AbstractBaseUser | None = None, blind: bool = False) -> list[GradeEvent]:
    """The latest grade changes of one reference, by every curator, newest first. A blind
    viewer who has not graded it sees only their own changes (a cleared grade counts as not graded)."""
    events = reference.grade_events.select_related("curator")
    if blind and viewer is not None and not Grade.objects.filter(reference=reference, curator=viewer).exists():
        events = events.filter(curator=viewer)
    return list(events[:HISTORY_LENGTH])


@dataclass
class PoolBalance:
    total: int
    by_tier: dict[str, int]
    by_split: dict[str, dict[str, int]]  # split -> tier -> n
    by_subject: dict[str, dict[str, int]] = field(default_factory=dict)  # subject -> tier -> n

    @property
    def split_totals(self) -> dict[str, int]:
        return {split: sum(self.by_split.get(split, {}).values()) for split in ("train", "eval")}

    @property
    def subject_rows(self) -> list[dict]:
        """One bar per subject, as wide as its count is against the largest subject's (so 4
        looks half of 8); each tier is its share of that bar."""
        largest = max((sum(tiers.values()) for tiers in self.by_subject.values()), default=0)
        return [
            {"subject": subject, "tiers": tiers, "total": sum(tiers.values()),
             "width": round(100 * sum(tiers.values()) / largest, 1)}
            for subject, tiers in self.by_subject.items()
        ]


def balance_of(rows: list[tuple[str, str, str]]) -> PoolBalance:
    """rows: (tier, split, subject)."""
    by_tier: Counter = Counter()
    by_split: dict[str, Counter] = defaultdict(Counter)
    by_subject: dict[str, Counter] = defaultdict(Counter)
    for tier, split, subject in rows:
        by_tier[tier] += 1
        by_split[split][tier] += 1
        by_subject[subject or "(no subject)"][tier] += 1
    return PoolBalance(
        total=len(rows),
        by_tier={t: by_tier.get(t, 0) for t in Tier.values},
        by_split={s: dict(c) for s, c in sorted(by_split.items())},
        by_subject={s: dict(c) for s, c in sorted(by_subject.items())},
    )


def pool_balance(pool: Pool) -> PoolBalance:
    rows = list(pool.members.values_list("tier", "split", "reference__subject"))
    return balance_of(rows)


def pool_versions(name: str) -> QuerySet:
    return Pool.objects.filter(name=name).order_by("-version")


def pool_get(label: str) -> Pool:
    """`name` (latest version) or `name:VERSION` / `name:vVERSION`."""
    name, _, version = label.partition(":")
    qs = Pool.objects.filter(name=name)
    if version:
        return qs.get(version=int(version.lstrip("v")))
    pool = qs.order_by("-version").first()
    if pool is None:
        raise Pool.DoesNotExist(f"no pool named {name!r}")
    return pool


@dataclass
class PoolDiff:
    added: list[PoolMember]
    removed: list[PoolMember]
    tier_changed: list[tuple[PoolMember, PoolMember]]  # (old, new)
    unchanged: int


def pool_diff(old: Pool, new: Pool) -> PoolDiff:
    old_members = {m.reference_id: m for m in old.members.select_related("reference")}
    new_members = {m.reference_id: m for m in new.members.select_related("reference")}
    added = [new_members[r] for r in sorted(new_members.keys() - old_members.keys())]
    removed = [old_members[r] for r in sorted(old_members.keys() - new_members.keys())]
    changed, unchanged = [], 0
    for ref in sorted(old_members.keys() & new_members.keys()):
        if old_members[ref].tier != new_members[ref].tier:
            changed.append((old_members[ref], new_members[ref]))
        else:
            unchanged += 1
    return PoolDiff(added=added, removed=removed, tier_changed=changed, unchanged=unchanged)


def group_references(pool: Pool, *, count: int, key: tuple[int, ...]) -> list[PoolMember]:
    """The references a whole GRPO group is judged against: half love, half okay, train split only.

    Drawn reproducibly from `key` (run seed, step, group). A tier with too few members
    gives what it has; the eval split is never used as reward references.
    """
    rng = random.Random("/".join(str(k) for k in key))
    chosen: list[PoolMember] = []
    for tier in (Tier.LOVE, Tier.OKAY):
        members = list(
            pool.members.filter(split="train", tier=tier).select_related("reference").order_by("reference__sha256")
        )
        chosen += rng.sample(members, min(count // 2, len(members)))
    return chosen


@dataclass(frozen=True)
class AgreementInput:
    """What curation.agreement computes from: {curator: {reference id: tier}} and each
    reference's subject, for the references in scope."""

    grades: dict[str, dict[int, str]]
    subjects: dict[int, str]
    references: int  # in scope, graded or not


class UnknownCurator(LookupError):
    pass


def agreement_input(
    *, subject: str = "", pool: Pool | None = None, curators: list[str] | None = None,
) -> AgreementInput:
    """The current grades of the chosen curators (default: everyone who graded any of them)
    on all references, one subject's, or a pool's members (their live grades, not the tiers
    the pool froze). A chosen curator who graded none of them is kept, with no grades."""
    references = Reference.objects.all()
    if pool is not None:
        references = references.filter(pool_memberships__pool=pool)
    if subject:
        references = references.filter(subject=subject)
    rows = Grade.objects.filter(reference__in=references)
    if curators is not None:
        rows = rows.filter(curator__in=_named_curators(curators).values())
    return AgreementInput(
        grades=_grades_by_curator(rows, curators or ()),
        subjects=dict(references.values_list("id", "subject")),
        references=references.count(),
    )
