"""Runs (GRPO and SFT), their per-step metrics, every rollout, edited revisions of rollouts, and
the frozen SFT datasets SFT runs train on."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete

from paintapp.lib.exports import ExportJob, delete_export_file
from paintenv.extraction import is_keep_reply
from training.arguments import RunArguments

# The folder, in a run's output_dir, where the trainer saves the final adapter.
ADAPTER_DIR = "adapter"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        STOPPING = "stopping", "Stopping"
        STOPPED = "stopped", "Stopped"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"
        # The trainer's heartbeat stopped (its worker or host died): resumable from the
        # last complete checkpoint.
        INTERRUPTED = "interrupted", "Interrupted"
        # Paused with a checkpoint because no render or score worker answered.
        WAITING = "waiting", "Waiting for workers"
        # Trained by a script elsewhere against the studio's OpenEnv server (serving/): the
        # studio records its episodes; it has no trainer here to stop or resume.
        EXTERNAL = "external", "Trained elsewhere"

    class Kind(models.TextChoices):
        GRPO = "grpo", "GRPO"
        # Supervised fine-tuning on a frozen SftDataset (training/sft_dataset.py, training/trainer/sft.py): a warm start for GRPO.
        SFT = "sft", "SFT"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.STOPPING)
    RESUMABLE = (Status.STOPPED, Status.FAILED, Status.INTERRUPTED, Status.WAITING)

    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.GRPO, db_index=True)
    pool = models.ForeignKey("curation.Pool", on_delete=models.PROTECT, related_name="runs")
    sft_dataset = models.ForeignKey("training.SftDataset", null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="runs", help_text="an SFT run: the frozen dataset it trains on")
    init_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="continued_by",
        help_text="GRPO from SFT: the SFT run whose adapter this run's LoRA starts from")
    init_check = models.JSONField(
        null=True, blank=True, help_text="GRPO from SFT: the LoRA weights at step 0 compared with the SFT adapter's")
    base_model = models.CharField(max_length=500, help_text="Hugging Face id or local path")
    recipe_name = models.CharField(max_length=80)
    recipe = models.JSONField(help_text="snapshot of the recipe at launch")
    subjects = models.JSONField(default=list, help_text="subject texts the prompts cycle through")
    hyperparameters = models.JSONField(default=dict)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    stop_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    output_dir = models.CharField(max_length=500, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    steps_done = models.PositiveIntegerField(default=0)
    resumed_from = models.CharField(max_length=500, blank=True, help_text="checkpoint of the last resume")
    checkpoint_step = models.PositiveIntegerField(null=True, blank=True, help_text="step of the last complete checkpoint")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="last sign of life of the trainer")
    trainer = models.CharField(max_length=200, blank=True,
                               help_text="host:pid of the process training the current delivery")
    attempts = models.PositiveIntegerField(default=0, help_text="deliveries of the current train task")
    waiting_for = models.CharField(max_length=200, blank=True, help_text="what a waiting run waits for")
    eval_result = models.JSONField(null=True, blank=True)
    fed_by = models.CharField(max_length=120, blank=True,
                              help_text="trained elsewhere: the name of the environment token its episodes came with")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def max_steps(self) -> int:
        return int(self.hyperparameters.get("max_steps", 0))

    def is_trained_by(self, task_id: str) -> bool:
        """Whether the run is still this task's (not resumed in another task, not deleted)."""
        return Run.objects.filter(id=self.id, task_id=task_id).exists()

    @property
    def arguments(self) -> RunArguments:
        """The run's arguments as the trainer reads them (defaults filled in for keys an older
        run did not store)."""
        return RunArguments.from_dict(self.hyperparameters, kind=self.kind)

    @property
    def adapter_dir(self) -> Path | None:
        """Where the trainer saves the run's final adapter (it may not exist yet); None before
        the run has an output folder."""
        return Path(self.output_dir) / ADAPTER_DIR if self.output_dir else None

    @property
    def is_sft(self) -> bool:
        return self.kind == self.Kind.SFT

    @property
    def trained_elsewhere(self) -> bool:
        return self.status == self.Status.EXTERNAL

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def is_resumable(self) -> bool:
        return self.status in self.RESUMABLE


class Step(models.Model):
    """One GRPO step's metrics: TRL's logs plus ours (gate pass rate, None count, time split...)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    step = models.PositiveIntegerField()
    reward_mean = models.FloatField(null=True)
    reward_std = models.FloatField(null=True)
    metrics = models.JSONField(default=dict)
    reset_seed = models.BigIntegerField(
        null=True, blank=True, help_text="trained elsewhere: the reset seed whose episodes make this step")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "step"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step"], name="one_row_per_step"),
            models.UniqueConstraint(fields=["run", "reset_seed"], condition=models.Q(reset_seed__isnull=False),
                                    name="one_step_per_reset_seed"),
        ]


class Rollout(models.Model):
    """One completion of one GRPO group, stored before its reward is returned to TRL."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rollouts")
    step = models.PositiveIntegerField(db_index=True)
    group = models.PositiveIntegerField(default=0)
    position = models.PositiveIntegerField(help_text="position in the group")
    subject = models.CharField(max_length=120)
    prompt = models.TextField()
    reply = models.TextField()
    code = models.TextField(blank=True)
    png = models.CharField(max_length=200, blank=True, help_text="storage name of the painting")
    passed = models.BooleanField(default=False)
    violations = models.JSONField(default=list)
    reward = models.FloatField(null=True, help_text="None: infrastructure failure, left out of the baseline")
    parts = models.JSONField(default=dict, help_text="gate, length, judge, quality, unavailable")
    judge_detail = models.JSONField(default=dict, help_text="per-reference verdicts, both orders, reasons")
    reference_ids = models.JSONField(default=list)
    paint_fraction = models.FloatField(null=True)
    errors = models.JSONField(default=list)
    stats = models.JSONField(default=dict, help_text="gate stats: shapes, vertices, circles, fills, methods...")
    timings = models.JSONField(default=dict)
    failure = models.TextField(blank=True, help_text="infrastructure failure, when reward is None")
    turns = models.PositiveSmallIntegerField(
        default=1, help_text="sketches in its chain; above 1 the fields above are the final turn's, the reward "
                             "the rollout's (final, plus the run's weight on the gain over turn 1)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "step", "group", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step", "group", "position"], name="one_rollout_per_slot")
        ]
        indexes = [models.Index(fields=["run", "step"]), models.Index(fields=["run", "reward"])]


class RolloutTurn(models.Model):
    """One turn of a multi-turn rollout (runs with turns > 1): the sketch the model wrote
    after the feedback on the turn before, how it came out, and the feedback it was given
    next (empty on the last turn). Every turn is stored, the last one too, so a chain reads
    from this table alone; its Rollout repeats the last turn and holds the rollout's reward.
    A kept turn (the reply was KEEP) repeats the turn before's code, painting and reward."""

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="chain")
    turn = models.PositiveSmallIntegerField(help_text="1 = the first sketch")
    reply = models.TextField()
    code = models.TextField(blank=True)
    png = models.CharField(max_length=200, blank=True)
    passed = models.BooleanField(default=False)
    violations = models.JSONField(default=list)
    reward = models.FloatField(null=True, help_text="this turn's painting's reward; None: infrastructure failure")
    parts = models.JSONField(default=dict)
    judge_detail = models.JSONField(default=dict)
    paint_fraction = models.FloatField(null=True)
    errors = models.JSONField(default=list)
    stats = models.JSONField(default=dict)
    timings = models.JSONField(default=dict)
    failure = models.TextField(blank=True)
    feedback = models.TextField(blank=True, help_text="the message the model got after this turn")
    kept = models.BooleanField(default=False, help_text="the model answered KEEP: the turn before's painting stands")

    class Meta:
        ordering = ["rollout", "turn"]
        constraints = [models.UniqueConstraint(fields=["rollout", "turn"], name="one_row_per_turn")]


class Revision(models.Model):
    """An edited version of a rollout's code, re-rendered and re-scored like the original.

    rendering -> rendered (a painting that passed, ready to score) -> scoring -> done; a
    painting that failed the gate or the render is done at once with reward 0, like a
    rollout. `failed` is infrastructure only (no worker answered, a task crashed): no reward.
    `cancelled` (by its author) and `deadline` (a render past the editor's deadline) were
    stopped before a verdict: no reward either.

    A curator writes a revision's code in the editor; or the run's model does ("Ask the model
    to revise"): then it starts `writing` (the train worker samples the run's latest adapter
    on the feedback the trainer would give) and goes on to rendering like a curator's edit.
    """

    class Status(models.TextChoices):
        WRITING = "writing", "The model is writing"
        RENDERING = "rendering", "Rendering"
        RENDERED = "rendered", "Rendered"
        SCORING = "scoring", "Scoring"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        DEADLINE = "deadline", "Past the deadline"

    class Author(models.TextChoices):
        CURATOR = "curator", "Curator"
        MODEL = "model", "The model"

    PENDING = (Status.WRITING, Status.RENDERING, Status.SCORING)

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="revisions")
    code = models.TextField(blank=True)
    author = models.CharField(max_length=10, choices=Author.choices, default=Author.CURATOR)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children",
                               help_text="the revision the model revised; none: the rollout itself")
    reply = models.TextField(blank=True, help_text="the model's whole reply (a model's revision)")
    feedback = models.TextField(blank=True, help_text="the message the model was given after the version it revised")
    adapter = models.CharField(max_length=500, blank=True,
                               help_text="the adapter or checkpoint the model was sampled with; empty: the base model")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RENDERING)
    png = models.CharField(max_length=200, blank=True)
    render = models.JSONField(default=dict)
    passed = models.BooleanField(default=False)
    violations = models.JSONField(default=list)
    reward = models.FloatField(null=True)
    parts = models.JSONField(default=dict)
    judge_detail = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    write_task_id = models.CharField(max_length=64, blank=True)
    render_task_id = models.CharField(max_length=64, blank=True)
    score_task_id = models.CharField(max_length=64, blank=True)
    stage_started_at = models.DateTimeField(null=True, blank=True, help_text="when the current render or score was queued")
    wait_s = models.FloatField(default=0.0, help_text="how long the current task may wait for a worker")
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+",
                                   help_text="who wrote it, or who asked the model to")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    @property
    def by_model(self) -> bool:
        return self.author == self.Author.MODEL

    @property
    def kept(self) -> bool:
        """The model answered KEEP: its code is the sketch it was shown, painted again."""
        return self.by_model and is_keep_reply(self.reply)

    @property
    def is_pending(self) -> bool:
        return self.status in self.PENDING

    @property
    def timed_out(self) -> bool:
        """The renderer's watchdog stopped the sketch (a verdict on the code, not a failure)."""
        return "render_timeout" in self.violations


class SftDataset(models.Model):
    """A frozen, versioned SFT dataset (training/sft_dataset.py built it): its examples as they
    were when frozen, what each source gave, and what the pool's eval split kept out. Runs train
    on it as it is; a new build of the same name is a new version."""

    name = models.CharField(max_length=80)
    version = models.PositiveIntegerField()
    pool = models.ForeignKey("curation.Pool", on_delete=models.PROTECT, related_name="sft_datasets",
                             help_text="whose references it may use and whose eval split never enters it")
    sources = models.JSONField(help_text="the SftSources it was built from")
    counts = models.JSONField(help_text="per source: found, kept, duplicates, eval_excluded, refused")
    left_out = models.JSONField(default=list, help_text="what the eval split kept out, by origin")
    examples = models.JSONField(help_text="[{subject, code, source, origin}], in the order they were kept")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="one_sft_dataset_per_version")]

    def __str__(self) -> str:
        return f"{self.label} ({len(self.examples)} examples)"

    @property
    def label(self) -> str:
        return f"{self.name}:v{self.version}"


class RunExport(ExportJob):
    """A run's export zip (training.export), built on a score worker; a run that is still
    training exports a snapshot, so each request builds a new one."""

    owner_field = "run"
    task_name = "training.tasks.build_run_export"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="exports")


post_delete.connect(delete_export_file, sender=RunExport)
