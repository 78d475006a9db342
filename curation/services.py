"""Writes for curation: references, grades (with history), frozen pools."""
from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from curation.consensus import Consensus, ConsensusError, ConsensusSettings, consensus
from curation.errors import CurationError
from curation.models import (
    Grade,
    GradeBatch,
    GradeEvent,
    Pool,
    PoolMember,
    Provenance,
    Reference,
    Split,
    Tier,
)
from curation.selectors import (
    ConsensusScope,
    ReferenceFilter,
    UnknownCurator,
    consensus_scope,
    reference_list,
)
from curation.tasks import train_taste_model
from paintapp.lib.storage import sha256_hex, store_content_addressed

logger = logging.getLogger(__name__)


def reference_create(
    *,
    png: bytes,
    width: int,
    height: int,
    provenance: str,
    source: str = "",
    seed: int | None = None,
    subject: str = "",
    original_name: str = "",
    metadata: dict | None = None,
    created_by: AbstractBaseUser | None = None,
) -> tuple[Reference, bool]:
    """Store a normalised PNG as a reference; the same content twice returns the first.

    Returns (reference, created). The file is written before the row, content-addressed,
    so a failure leaves at most an orphan file, never a row without its image.
    """
    if provenance not in Provenance.values:
        raise CurationError(f"unknown provenance {provenance!r}")
    digest = sha256_hex(png)
    existing = Reference.objects.filter(sha256=digest).first()
    if existing:
        return existing, False
    name = store_content_addressed(png, folder="references")
    try:
        with transaction.atomic():
            reference = Reference.objects.create(
                sha256=digest, image=name, width=width, height=height, file_size=len(png),
                source=source, seed=seed, subject=subject[:120], provenance=provenance,
                original_name=original_name[:255], metadata=metadata or {}, created_by=created_by,
            )
    except IntegrityError:  # a concurrent import of the same bytes won
        return Reference.objects.get(sha256=digest), False
    return reference, True


def grade_set(
    *, reference: Reference, curator: AbstractBaseUser, tier: str | None, source: str = "ui",
    batch: GradeBatch | None = None,
) -> Grade | None:
    """Set (or clear, with tier=None) a curator's grade. Idempotent; every change is an event."""
    if tier is not None and tier not in Tier.values:
        raise CurationError(f"unknown tier {tier!r}; use love, okay or reject")
    with transaction.atomic():
        grade = Grade.objects.select_for_update().filter(reference=reference, curator=curator).first()
        previous = grade.tier if grade else ""
        if (tier or "") == previous:
            return grade
        if tier is None:
            grade.delete()
            grade = None
        elif grade is None:
            grade = Grade.objects.create(reference=reference, curator=curator, tier=tier)
        else:
            grade.tier = tier
            grade.save(update_fields=["tier", "updated_at"])
        GradeEvent.objects.create(
            reference=reference, curator=curator, previous_tier=previous, tier=tier or "", source=source, batch=batch
        )
    return grade


def grade_bulk(
    *, curator: AbstractBaseUser, flt: ReferenceFilter, tier: str | None, source: str = "bulk"
) -> GradeBatch:
    """Grade every reference the filter selects (server-side, not just a page), as one batch
    that grade_bulk_undo can take back."""
    if tier is not None and tier not in Tier.values:
        raise CurationError(f"unknown tier {tier!r}")
    ids = list(reference_list(curator=curator, flt=flt).values_list("id", flat=True))
    with transaction.atomic():
        batch = GradeBatch.objects.create(curator=curator, tier=tier or "", filters=flt.to_dict(), matched=len(ids))
        for reference in Reference.objects.filter(id__in=ids).order_by("id"):
            before = Grade.objects.filter(reference=reference, curator=curator).values_list("tier", flat=True).first()
            if (before or None) != tier:
                grade_set(reference=reference, curator=curator, tier=tier, source=source, batch=batch)
                batch.changed += 1
        batch.save(update_fields=["changed"])
    return batch


@dataclass(frozen=True)
class BulkUndo:
    restored: int  # grades put back as they were before the bulk action
    kept: int  # grades changed again since the bulk action: left as they are


def grade_bulk_undo(*, batch: GradeBatch, curator: AbstractBaseUser) -> BulkUndo:
    """Put back the grades a bulk action replaced. A grade changed again since then is the
    curator's later decision and is kept (and counted), never overwritten."""
    with transaction.atomic():
        batch = GradeBatch.objects.select_for_update().get(pk=batch.pk)
        if batch.curator_id != curator.pk:
            raise CurationError("only the curator who made a bulk action can undo it")
        if batch.undone_at is not None:
            raise CurationError(f"this bulk action was already undone at {batch.undone_at:%Y-%m-%d %H:%M}")
        restored = kept = 0
        for event in batch.events.select_related("reference").order_by("id"):
            now = Grade.objects.filter(reference=event.reference, curator=curator).values_list("tier", flat=True).first()
            if (now or "") != event.tier:
                kept += 1
                continue
            grade_set(reference=event.reference, curator=curator, tier=event.previous_tier or None, source="undo")
            restored += 1
        batch.undone_at = timezone.now()
        batch.save(update_fields=["undone_at"])
    return BulkUndo(restored=restored, kept=kept)


def _stratified_split(members: list[tuple[Reference, str]], eval_share: float, seed: int) -> dict[int, str]:
    """Assign train/eval per tier: round(n × share) of each tier go to eval, chosen by seed."""
    by_tier: dict[str, list[Reference]] = defaultdict(list)
    for reference, tier in members:
        by_tier[tier].append(reference)
    rng = random.Random(seed)
    split: dict[int, str] = {}
    for tier in sorted(by_tier):
        refs = sorted(by_tier[tier], key=lambda r: r.sha256)  # stable under re-imports
        rng.shuffle(refs)
        n_eval = round(len(refs) * eval_share)
        if eval_share > 0 and n_eval == 0 and len(refs) >= 2:
            n_eval = 1  # a tier with a few members still gets held-out evidence
        for i, reference in enumerate(refs):
            split[reference.id] = Split.EVAL if i < n_eval else Split.TRAIN
    return split


def pool_freeze(
    *,
    name: str,
    curator: AbstractBaseUser,
    tiers: Iterable[str] = (Tier.LOVE, Tier.OKAY),
    flt: ReferenceFilter | None = None,
    eval_share: float = 0.2,
    seed: int = 0,
    description: str = "",
    created_by: AbstractBaseUser | None = None,
) -> Pool:
    """Freeze the curator's current grades (under the filter and tiers) as the next version of `name`."""
    slug, tiers = _pool_settings_checked(name=name, tiers=tiers, eval_share=eval_share)
    flt = flt or ReferenceFilter()
    chosen = reference_list(curator=curator, flt=flt.without_tier()).filter(tier__in=tiers)
    members = [(reference, reference.tier) for reference in chosen]
    if not members:
        raise CurationError("no graded reference matches: grade some first or widen the filter")
    split = _stratified_split(members, eval_share, seed)
    pool, _ = _pool_version_create(
        slug=slug, curator=curator, tiers=tiers, filters=flt.without_tier().to_dict(), eval_share=eval_share,
        split_seed=seed, description=description, created_by=created_by,
        members={reference.id: (tier, split[reference.id]) for reference, tier in members},
    )
    return pool


def consensus_of(*, scope: ConsensusScope, settings: ConsensusSettings, tiers: Iterable[str]) -> Consensus:
    """The consensus a freeze would make (the builder's preview shows it before freezing)."""
    if len(scope.curators) < 2:
        raise CurationError("a consensus needs at least two curators")
    try:
        return consensus(scope.grades, scope.references, settings=settings, tiers=tiers)
    except ConsensusError as exc:
        raise CurationError(str(exc)) from exc


def pool_freeze_consensus(
    *,
    name: str,
    curators: Sequence[str],
    created_by: AbstractBaseUser,
    settings: ConsensusSettings | None = None,
    tiers: Iterable[str] = (Tier.LOVE, Tier.OKAY),
    flt: ReferenceFilter | None = None,
    eval_share: float = 0.2,
    seed: int = 0,
    description: str = "",
) -> Pool:
    """Freeze the consensus of several curators' current grades as the next version of `name`.

    `created_by` is also the pool's `curator`; the curators are its `graders`, and its
    `consensus` records the rule, thresholds and how many references were left out and why.
    """
    slug, tiers = _pool_settings_checked(name=name, tiers=tiers, eval_share=eval_share)
    flt = (flt or ReferenceFilter()).without_tier()
    scope = _scope(curators, flt)
    result = consensus_of(scope=scope, settings=settings or ConsensusSettings(), tiers=tiers)
    chosen = result.members
    if not chosen:
        raise CurationError(f"no reference has a consensus under these settings ({_left_out_text(result)})")
    by_id = {reference.id: reference for reference in Reference.objects.filter(id__in=chosen)}
    split = _stratified_split([(by_id[ref], o.tier) for ref, o in chosen.items()], eval_share, seed)
    summary = result.summary() | {
        "members_graded": {name: len(chosen.keys() & grades.keys()) for name, grades in scope.grades.items()},
    }
    pool, _ = _pool_version_create(
        slug=slug, curator=created_by, tiers=tiers, filters=flt.to_dict(), eval_share=eval_share, split_seed=seed,
        description=description, created_by=created_by, graders=scope.curators, consensus_summary=summary,
        members={ref: (o.tier, split[ref]) for ref, o in chosen.items()},
        member_counts={ref: (o.graders, o.agreed) for ref, o in chosen.items()},
    )
    return pool


def per_curator_name(name: str, username: str) -> str:
    return slugify(f"{name}-{username}")[:80]


def pool_freeze_per_curator(
    *,
    name: str,
    curators: Sequence[str],
    created_by: AbstractBaseUser | None = None,
    tiers: Iterable[str] = (Tier.LOVE, Tier.OKAY),
    flt: ReferenceFilter | None = None,
    eval_share: float = 0.2,
    seed: int = 0,
    description: str = "",
) -> list[Pool]:
    """One pool per curator, NAME-<username>, same filter, tiers, share and seed, in one
    transaction: when any of them cannot be made, none is."""
    if not curators:
        raise CurationError("choose the curators to make one pool each for")
    _pool_settings_checked(name=name, tiers=tiers, eval_share=eval_share)  # a bad name fails before any pool
    scope = _scope(curators, (flt or ReferenceFilter()).without_tier())
    with transaction.atomic():
        pools = []
        for user in scope.curators:
            try:
                pools.append(pool_freeze(
                    name=per_curator_name(name, user.get_username()), curator=user, tiers=tiers, flt=flt,
                    eval_share=eval_share, seed=seed, description=description, created_by=created_by,
                ))
            except CurationError as exc:
                raise CurationError(f"{user.get_username()}'s pool: {exc}; no pool was made") from exc
    return pools


def _scope(curators: Sequence[str], flt: ReferenceFilter) -> ConsensusScope:
    try:
        return consensus_scope(usernames=list(curators), flt=flt)
    except UnknownCurator as exc:
        raise CurationError(str(exc)) from exc


def _left_out_text(result: Consensus) -> str:
    parts = [f"{n} {reason.replace('_', ' ')}" for reason, n in result.left_out.items() if n]
    return ", ".join(parts) or f"{result.ungraded} ungraded"


def pool_restore(
    *,
    name: str,
    curator: AbstractBaseUser,
    members: Sequence[tuple[Reference, str, str]],
    tiers: Sequence[str],
    filters: dict,
    eval_share: float,
    split_seed: int,
    description: str = "",
    created_by: AbstractBaseUser | None = None,
    consensus_summary: dict | None = None,
    member_counts: dict[int, tuple[int, int]] | None = None,
) -> tuple[Pool, bool]:
    """Recreate a frozen pool with exactly these (reference, tier, split) members.

    Tiers and splits are copied, never recomputed, and so are a consensus pool's record of
    how it was made and each member's {reference id: (graders, agreed)}; its graders' own
    grades stay where it was made, so `curator` holds it. Returns (pool, created): when the
    latest version of `name` already holds the same members for the same curator, it is
    reused, so importing one export twice does not pile up versions.
    """
    slug, tiers = _pool_settings_checked(name=name, tiers=tiers, eval_share=eval_share)
    wanted: dict[int, tuple[str, str]] = {}
    for reference, tier, split in members:
        if tier not in tiers or split not in Split.values:
            raise CurationError(
                f"reference #{reference.pk}: tier {tier!r} / split {split!r} do not fit the pool"
            )
        if reference.pk in wanted:
            raise CurationError(f"reference #{reference.pk} is listed twice")
        wanted[reference.pk] = (tier, split)
    if not wanted:
        raise CurationError("a pool needs at least one member")
    return _pool_version_create(
        slug=slug, curator=curator, tiers=tiers, filters=filters, eval_share=eval_share, split_seed=split_seed,
        description=description, created_by=created_by, members=wanted, reuse_same_members=True,
        consensus_summary=consensus_summary, member_counts=member_counts,
    )


def _pool_settings_checked(*, name: str, tiers: Iterable[str], eval_share: float) -> tuple[str, list[str]]:
    """(slug, tiers in canonical order), or a CurationError saying what is wrong."""
    slug = slugify(name)[:80]
    if not slug:
        raise CurationError("a pool needs a name made of letters, digits or dashes")
    tiers = [t for t in Tier.values if t in set(tiers)]
    if not tiers:
        raise CurationError("choose at least one tier (love, okay, reject)")
    if not 0 <= eval_share < 1:
        raise CurationError("the eval share must be at least 0 and below 1")
    return slug, tiers


def _pool_version_create(
    *,
    slug: str,
    curator: AbstractBaseUser,
    tiers: list[str],
    filters: dict,
    eval_share: float,
    split_seed: int,
    description: str,
    created_by: AbstractBaseUser | None,
    members: dict[int, tuple[str, str]],
    reuse_same_members: bool = False,
    graders: Sequence[AbstractBaseUser] = (),
    consensus_summary: dict | None = None,
    member_counts: dict[int, tuple[int, int]] | None = None,
) -> tuple[Pool, bool]:
    """The next version of `slug` with these {reference id: (tier, split)} members; its
    taste model is trained on a score worker once the transaction commits.

    With `reuse_same_members`, a latest version of the same curator holding exactly these
    members is returned instead (created False). `graders` default to [curator];
    `member_counts` are {reference id: (graders, agreed)} (default 1, 1).
    """
    member_counts = member_counts or {}
    with transaction.atomic():
        latest = Pool.objects.select_for_update().filter(name=slug).order_by("-version").first()
        if reuse_same_members and latest is not None and latest.curator_id == curator.pk \
                and latest.consensus == (consensus_summary or {}):
            held_rows = latest.members.values_list("reference_id", "tier", "split", "graders", "agreed")
            held = {ref: (tier, split, graders, agreed) for ref, tier, split, graders, agreed in held_rows}
            if held == {ref: (tier, split, *member_counts.get(ref, (1, 1))) for ref, (tier, split) in members.items()}:
                return latest, False
        pool = Pool.objects.create(
            name=slug, version=(latest.version + 1) if latest else 1, description=description,
            curator=curator, tiers=tiers, filters=filters, eval_share=eval_share, split_seed=split_seed,
            created_by=created_by or curator, consensus=consensus_summary or {},
        )
        pool.graders.set(graders or [curator])
        PoolMember.objects.bulk_create(
            PoolMember(pool=pool, reference_id=ref, tier=tier, split=split,
                       graders=member_counts.get(ref, (1, 1))[0], agreed=member_counts.get(ref, (1, 1))[1])
            for ref, (tier, split) in members.items()
        )
        transaction.on_commit(lambda: _train_taste_model_later(pool.id))
    return pool, True


def _train_taste_model_later(pool_id: int) -> None:
    """The taste judge is retrained on a score worker whenever a pool version is made."""
    try:
        train_taste_model.delay(pool_id)
    except Exception:  # noqa: BLE001 - broker down: the score worker trains it on first use instead
        logger.warning("could not queue the taste model of pool %s", pool_id, exc_info=True)
