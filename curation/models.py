"""References, grades (with full history) and frozen pools.

The graded pool is the reward function, so nothing here is ever silently lost: images are
content-addressed, every grade change is an event, and a pool copies tiers at freeze time.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.signals import post_delete
from django.utils import timezone

from paintapp.lib.exports import ExportJob, delete_export_file


class Tier(models.TextChoices):
    LOVE = "love", "Love"
    OKAY = "okay", "Okay"
    REJECT = "reject", "Reject"


class Provenance(models.TextChoices):
    SEED_GENERATOR = "seed-generator", "Seed generator"
    UPLOAD = "upload", "Upload"
    IMPORT = "import", "Import"
    ROLLOUT = "rollout", "Rollout"


class Reference(models.Model):
    """One reference image, stored as a normalised PNG under its sha256."""

    sha256 = models.CharField(max_length=64, unique=True)
    image = models.CharField(max_length=200, help_text="storage name of the normalised PNG")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    file_size = models.PositiveIntegerField()
    source = models.TextField(blank=True, help_text="the p5.brush sketch that drew it, when known")
    seed = models.BigIntegerField(null=True, blank=True, help_text="render seed of the source")
    subject = models.CharField(max_length=120, blank=True, db_index=True)
    provenance = models.CharField(max_length=20, choices=Provenance.choices, db_index=True)
    original_name = models.CharField(max_length=255, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["provenance", "subject"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.subject or self.original_name or self.sha256[:12]}"

    @property
    def has_source(self) -> bool:
        return bool(self.source)


class ReferenceFeatures(models.Model):
    """A reference's image features, measured once (its image never changes) and kept, so a
    web request that orders references by the taste judge reads them instead of measuring
    every image again (~160 ms each). `measured_as` names the feature set and its version
    (curation.measuring): another set is measured again."""

    reference = models.OneToOneField(Reference, on_delete=models.CASCADE, related_name="features")
    measured_as = models.CharField(max_length=64)
    values = models.JSONField()
    measured_at = models.DateTimeField(auto_now=True)


class Grade(models.Model):
    """The current tier a curator gives a reference (one row per reference × curator)."""

    reference = models.ForeignKey(Reference, on_delete=models.CASCADE, related_name="grades")
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="grades")
    tier = models.CharField(max_length=10, choices=Tier.choices, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["reference", "curator"], name="one_grade_per_curator")]

    def __str__(self) -> str:
        return f"{self.curator} → {self.reference_id}: {self.tier}"


class GradeBatch(models.Model):
    """One bulk action over a filter result; its grade changes are its events, so undoing it
    puts back exactly the grades it replaced."""

    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="grade_batches")
    tier = models.CharField(max_length=10, choices=Tier.choices, blank=True, help_text="empty: grades cleared")
    filters = models.JSONField(default=dict, blank=True, help_text="the reference filter it applied to")
    matched = models.PositiveIntegerField(default=0, help_text="references the filter selected")
    changed = models.PositiveIntegerField(default=0, help_text="grades it changed (the others already were)")
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class GradeEvent(models.Model):
    """Every change of a grade: who changed what, when, from which tier to which.

    `tier` is empty when a grade was cleared (an undo back to ungraded). `batch` names the
    bulk action that made the change, if one did.
    """

    reference = models.ForeignKey(Reference, on_delete=models.CASCADE, related_name="grade_events")
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    previous_tier = models.CharField(max_length=10, choices=Tier.choices, blank=True)
    tier = models.CharField(max_length=10, choices=Tier.choices, blank=True)
    source = models.CharField(max_length=20, default="ui", help_text="ui, keyboard, bulk, undo, import, demo, api")
    batch = models.ForeignKey(GradeBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class Pool(models.Model):
    """A named, versioned, frozen snapshot of graded references.

    `graders` are the curators whose grades it holds: one for a single-curator pool (then
    also `curator`), several for a consensus pool, whose `consensus` records how it was
    made (curation.consensus.Consensus.summary: rule, thresholds, counts left out and why).
    """

    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField()
    description = models.TextField(blank=True)
    curator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="pools_graded",
        help_text="the single curator whose grades it holds; for a consensus pool, who froze it",
    )
    graders = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="pools_graded_in", blank=True,
        help_text="every curator whose grades the pool holds",
    )
    consensus = models.JSONField(
        default=dict, blank=True, help_text="empty for a single curator's pool; else how the consensus was made",
    )
    tiers = models.JSONField(default=list, help_text="tiers included, e.g. ['love', 'okay']")
    filters = models.JSONField(default=dict, blank=True, help_text="the reference filter used to choose members")
    eval_share = models.FloatField(default=0.2)
    split_seed = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="pools_created"
    )

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="pool_name_version")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{self.name}:v{self.version}"

    @property
    def is_consensus(self) -> bool:
        return bool(self.consensus)


class Split(models.TextChoices):
    TRAIN = "train", "Train"
    EVAL = "eval", "Eval"


class PoolMember(models.Model):
    """A reference in a pool, with its tier copied at freeze time."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="members")
    reference = models.ForeignKey(Reference, on_delete=models.PROTECT, related_name="pool_memberships")
    tier = models.CharField(max_length=10, choices=Tier.choices)
    split = models.CharField(max_length=5, choices=Split.choices)
    graders = models.PositiveSmallIntegerField(default=1, help_text="curators who graded it at freeze time")
    agreed = models.PositiveSmallIntegerField(default=1, help_text="of them, how many gave `tier`")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "reference"], name="pool_member_once"),
            models.CheckConstraint(condition=~Q(tier=""), name="pool_member_has_tier"),
        ]


class TasteModel(models.Model):
    """The embedded taste judge trained on a pool's train split, versioned with the pool.

    Its held-out pairwise accuracy on the eval split is shown on the pool page.
    """

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="taste_model")
    params = models.JSONField(help_text="paintenv.judges.taste.TasteModel.to_dict()")
    accuracy = models.JSONField(default=dict, help_text="held-out pairwise accuracy on the eval split")
    train_pairs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)


class AuditStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


# A running audit writes progress every pair or half second; one silent this long lost its worker.
AUDIT_STALLED_AFTER = timedelta(minutes=10)


class JudgeAudit(models.Model):
    """A re-judging of the same pairs: self-agreement, order bias, accuracy vs held-out grades.

    `manage.py audit_judge` makes one in place; the pool page's button queues one for a score
    worker (curation.tasks.run_judge_audit), which writes its progress here as it goes.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="judge_audits")
    recipe_name = models.CharField(max_length=80)
    judge = models.CharField(max_length=200, blank=True)
    pairs = models.PositiveIntegerField(help_text="pairs asked for; once done, the pairs the eval split had")
    seed = models.BigIntegerField(default=0)
    results = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=AuditStatus.choices, default=AuditStatus.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def is_active(self) -> bool:
        return self.status in (AuditStatus.QUEUED, AuditStatus.RUNNING)

    @property
    def is_stalled(self) -> bool:
        return self.status == AuditStatus.RUNNING and timezone.now() - self.updated_at > AUDIT_STALLED_AFTER

    @property
    def percent(self) -> int | None:
        return min(100, round(100 * self.done / self.total)) if self.total else None


class PoolExport(ExportJob):
    """A pool's export zip (curation.export), built on a score worker."""

    owner_field = "pool"
    task_name = "curation.tasks.build_pool_export"
    reuse_ready = True  # a frozen pool never changes, so its built export stays true

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="exports")


post_delete.connect(delete_export_file, sender=PoolExport)
