"""Writes for training: launch (GRPO or SFT, GRPO from an SFT run's adapter), stop, resume,
duplicate and delete runs; resume waiting runs; freeze SFT datasets."""
from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path

from celery.utils import uuid
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.template.defaultfilters import pluralize
from django.utils import timezone

from curation.models import Pool, Tier
from paintapp.celery import app as celery_app
from paintapp.lib.workers import START_HINT, answering_queues, live_workers, missing_worker_message
from paintenv.probes import RecipeProbe
from paintenv.prompts import SUBJECTS
from paintenv.reward import LENGTH_THRESHOLDS, Recipe
from painting.pipeline import stage_queues
from painting.probing import recipe_probe
from painting.selectors import UnknownRecipe, recipe_get
from training import gpu_budget
from training.arguments import CONTINUED_LORA, GRPO, SFT, VLLM_BACKENDS, RunArguments
from training.deletion_selectors import RunDeletion, resume_redo, run_deletion
from training.generation_speeds import measured_generation
from training.models import Rollout, Run, SftDataset
from training.sft_dataset import SftSources, build_dataset
from training.trainer.backends import auto_candidates
from training.trainer.tracking import tracking_problem

log = logging.getLogger(__name__)
# Services send the trainer's task by name: training/tasks.py imports this module, so importing
# it back would make a circle.
RUN_TRAINING = "training.tasks.run_training"


class LaunchError(ValueError):
    """A run that cannot be launched, with a message fit for the form."""


class NoWorkers(LaunchError):
    """No worker answers on a queue the run needs (`queues`)."""

    def __init__(self, queues: list[str]):
        self.queues = queues
        super().__init__("; ".join(missing_worker_message(queue) for queue in queues))


class UnreachableParts(LaunchError):
    """A weighted part of the recipe cannot answer where it runs (the probe says why)."""

    def __init__(self, probe: RecipeProbe):
        self.probe = probe
        super().__init__(probe.refusal())


def default_base_model() -> str:
    return str(Path(settings.MODELS_DIR) / "tiny-painter")


def _check_base_model(base_model: str) -> None:
    path = Path(base_model)
    if path.is_absolute() or base_model.startswith("."):
        if not (path / "config.json").exists():
            raise LaunchError(f"no model at {base_model} (expected a config.json there; build one with manage.py build_tiny_model)")
    elif base_model.count("/") != 1:
        raise LaunchError("base model must be a local path or a Hugging Face id like Qwen/Qwen3-4B")


def _check_pool(pool: Pool, recipe: Recipe) -> None:
    train = dict(
        pool.members.filter(split="train").values("tier").annotate(n=Count("id")).values_list("tier", "n")
    )
    if recipe.w_judge > 0 and recipe.judge != "none":
        missing = [t for t in (Tier.LOVE, Tier.OKAY) if not train.get(t)]
        if missing:
            raise LaunchError(
                f"pool {pool.label} has no {' or '.join(missing)} references in its train split, "
                f"so the judge recipe {recipe.name!r} cannot draw references; freeze a pool with both tiers"
            )


def _check_workers(recipe: Recipe) -> None:
    """Refuse a run whose render (or, for a recipe that scores, score) queue has no worker:
    each of its steps would wait out its deadlines for nothing."""
    if not settings.LAUNCH_CHECKS_WORKERS:
        return
    queues = stage_queues(recipe)
    answering = answering_queues(wanted=queues)
    missing = [queue for queue in queues if queue not in answering]
    if missing:
        raise NoWorkers(missing)


def vllm_missing(worker: dict) -> list[str]:
    """What a train worker (as it describes itself) lacks to generate with vLLM."""
    lacks = []
    if not worker.get("gpus"):
        lacks.append("no GPU")
    elif not worker.get("cuda_build"):
        lacks.append(f"a CPU build of torch ({worker.get('torch') or 'none'})")
    if not worker.get("vllm"):
        lacks.append("no vllm installed")
    return lacks


def _check_gpus(args: RunArguments, recipe: Recipe, base_model: str, *, kind: str) -> RunArguments:
    """Resolve an `auto` generation where a GPU train worker answers; refuse a run that the train
    worker's GPUs cannot hold (training/gpu_budget.py), and a vLLM run that no train worker can
    generate for: vLLM needs CUDA and the vllm package where the trainer runs, which is the train
    worker, not this process. The run's arguments, its generation resolved or left to the trainer."""
    if not settings.LAUNCH_CHECKS_WORKERS:
        return args
    try:
        _source, workers = live_workers()
    except Exception:  # noqa: BLE001 - a broker that is down answers for no worker
        workers = []
    if args.generation == "auto" and kind == GRPO:
        args = _auto_generation(args, recipe, base_model, workers)
    try:
        gpu_budget.check(args, recipe, base_model, workers, kind=kind)
    except gpu_budget.BudgetRefused as exc:
        raise LaunchError(str(exc)) from exc
    if args.generation not in VLLM_BACKENDS:
        return args
    trainers = [w for w in workers if "train" in w.get("queues", [])]
    if not trainers:
        raise LaunchError(f"{args.generation} generation needs a train worker with a GPU and vllm, and none answers "
                          f"on the `train` queue — start one with `{START_HINT['train']}` on the GPU box")
    lacking = {w.get("hostname", "?"): vllm_missing(w) for w in trainers}
    if all(lacking.values()):
        reasons = "; ".join(f"{name}: {', '.join(lacks)}" for name, lacks in sorted(lacking.items()))
        raise LaunchError(f"{args.generation} generation needs vLLM on a CUDA GPU, and no train worker has both "
                          f"({reasons}); choose generate or continuous-batching, or install vllm on the GPU box")
    return args


def _auto_generation(args: RunArguments, recipe: Recipe, base_model: str, workers: list[dict]) -> RunArguments:
    """`auto` on the first GPU train worker that answers: the first of its candidates (the fastest
    measured there for this model, then vLLM colocated where installed, then compiled) whose memory
    budget fits; without a GPU train worker it stays `auto`, and the trainer resolves it (on a CPU:
    generate)."""
    gpu_trainers = [w for w in workers if "train" in w.get("queues", []) and w.get("gpus") and w.get("cuda_build")]
    if not gpu_trainers:
        return args
    worker = gpu_trainers[0]
    host = worker.get("host") or worker.get("hostname", "?").split("@")[-1]
    candidates = auto_candidates(cuda=True, vllm=bool(worker.get("vllm")),
                                 measured=measured_generation(host=host, base_model=base_model))
    for backend, why in candidates:
        chosen = replace(args, generation=backend)
        try:
            gpu_budget.check(chosen, recipe, base_model, workers)
        except gpu_budget.BudgetRefused:
            continue
        log.info("generation auto -> %s on %s: %s", backend, host, why)
        return chosen
    return replace(args, generation=candidates[0][0])  # none fits: the budget check says why


def _check_parts(recipe: Recipe, pool: Pool) -> None:
    """Refuse a run whose weighted judge or quality part cannot answer on the score workers
    (VLM endpoint down, HPSv3 not installed, a pool the taste judge cannot learn from)."""
    if not settings.LAUNCH_CHECKS_WORKERS:
        return
    probe = recipe_probe(recipe, pool_id=pool.id)
    if probe.blocking:
        raise UnreachableParts(probe)


def run_launch(
    *,
    pool: Pool,
    recipe_name: str,
    recipe_snapshot: dict | None = None,
    base_model: str | None = None,
    arguments: dict | None = None,
    recipe_overrides: dict | None = None,
    subjects: list[str] | None = None,
    seed: int = 0,
    name: str = "",
    created_by: AbstractBaseUser | None = None,
    kind: str = GRPO,
    sft_dataset: SftDataset | None = None,
    init_run: Run | None = None,
) -> Run:
    """Validate and queue a run on the `train` queue (after the transaction commits).

    `recipe_overrides` sets this run's length thresholds on its recipe snapshot.
    `recipe_snapshot` (a stored run's recipe) is used as it is instead of looking the name up,
    so a copy of an old run keeps its recipe even where a preset of that name changed since.
    `kind` "sft" trains on the frozen `sft_dataset` (its pool's eval split evaluates it; the
    recipe scores that evaluation); `init_run`, an SFT run, makes a GRPO run continue its LoRA.
    """
    arguments, base_model = _kind_arguments(kind, arguments or {}, base_model, pool, sft_dataset, init_run)
    try:
        recipe = Recipe.from_dict(recipe_snapshot) if recipe_snapshot else recipe_get(recipe_name)
    except UnknownRecipe as exc:
        raise LaunchError(str(exc)) from exc
    except (TypeError, ValueError) as exc:
        raise LaunchError(f"the recipe snapshot cannot be used: {exc}") from exc
    unknown = sorted(set(recipe_overrides or {}) - set(LENGTH_THRESHOLDS))
    if unknown:
        raise LaunchError(f"a run can only set the recipe's {', '.join(LENGTH_THRESHOLDS)}, not {', '.join(unknown)}")
    try:
        recipe = recipe.with_(**(recipe_overrides or {}))
    except ValueError as exc:
        raise LaunchError(str(exc)) from exc
    try:
        args = RunArguments.from_dict(arguments, kind=kind)
    except (TypeError, ValueError) as exc:
        raise LaunchError(str(exc)) from exc
    base_model = base_model or default_base_model()
    _check_base_model(base_model)
    _check_pool(pool, recipe)
    if problem := tracking_problem(args.report_to):
        raise LaunchError(problem)
    args = _check_gpus(args, recipe, base_model, kind=kind)
    if not args.environment_url:  # a remote environment judges with its own workers and parts
        _check_workers(recipe)  # it asks the workers (a second with the Redis broker)
        _check_parts(recipe, pool)  # last: a score worker probes the parts
    subjects = [s.strip() for s in (subjects or []) if s and s.strip()] or [SUBJECTS[0].text]
    default_name = f"SFT on {sft_dataset.label}" if kind == SFT else f"{recipe.name} on {pool.label}"
    with transaction.atomic():
        run = Run.objects.create(
            name=name.strip()[:120] or default_name, kind=kind, sft_dataset=sft_dataset, init_run=init_run,
            pool=pool, base_model=base_model, recipe_name=recipe.name, recipe=recipe.to_dict(),
            subjects=subjects, hyperparameters=args.to_dict(), seed=seed, created_by=created_by,
        )
        run.output_dir = str(Path(settings.MEDIA_ROOT) / "runs" / str(run.id))
        run.save(update_fields=["output_dir"])
        transaction.on_commit(lambda: _enqueue_training(run.id))
    return run


def _kind_arguments(kind: str, arguments: dict, base_model: str | None, pool: Pool, sft_dataset: SftDataset | None,
                    init_run: Run | None) -> tuple[dict, str | None]:
    """The arguments and base model a run of `kind` launches with: an SFT run's steps from its
    dataset, a continued LoRA's rank from the SFT run. LaunchError for what does not go together."""
    if kind not in (GRPO, SFT):
        raise LaunchError(f"a run is grpo or sft, not {kind!r}")
    if kind == SFT:
        if sft_dataset is None:
            raise LaunchError("an SFT run needs a frozen SFT dataset (build one on the SFT datasets page or with "
                              "manage.py sft_dataset --freeze)")
        if init_run is not None:
            raise LaunchError("only a GRPO run starts from an SFT run's adapter")
        if sft_dataset.pool_id != pool.id:
            raise LaunchError(f"{sft_dataset.label} was built clear of pool {sft_dataset.pool.label}'s eval split: "
                              f"evaluate it on that pool, not {pool.label}")
        try:
            args = RunArguments.from_dict(arguments, kind=SFT)
        except (TypeError, ValueError) as exc:
            raise LaunchError(str(exc)) from exc
        if args.turns != 1 or args.environment_url:
            raise LaunchError("an SFT run trains one sketch per prompt on the studio's own data: turns 1, no "
                              "environment_url")
        return {**arguments, "max_steps": args.steps_for(len(sft_dataset.examples))}, base_model
    if sft_dataset is not None:
        raise LaunchError("a GRPO run draws its prompts from the pool's subjects, not from an SFT dataset")
    if init_run is None:
        return arguments, base_model
    if not init_run.is_sft or init_run.status not in (Run.Status.FINISHED, Run.Status.STOPPED) \
            or not init_run.steps_done:
        raise LaunchError(f"run {init_run.id} is not an SFT run that finished or stopped with an adapter")
    if base_model and base_model != init_run.base_model:
        raise LaunchError(f"run {init_run.id}'s adapter was trained on {init_run.base_model}, not {base_model}")
    sft_args = init_run.arguments
    return {**arguments, **{key: getattr(sft_args, key) for key in CONTINUED_LORA}}, init_run.base_model


def sft_dataset_freeze(*, name: str, sources: SftSources, created_by: AbstractBaseUser | None = None) -> SftDataset:
    """Build the dataset from `sources` and freeze it as the next version of `name`."""
    name = name.strip()[:80]
    if not name:
        raise LaunchError("give the SFT dataset a name")
    built = build_dataset(sources)
    if not built.examples:
        raise LaunchError("these sources give no example: nothing to freeze")
    for _attempt in range(3):  # two curators freezing the same name at once: the next version
        try:
            with transaction.atomic():
                latest = SftDataset.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0
                return SftDataset.objects.create(
                    name=name, version=latest + 1, pool_id=sources.pool_id, sources=sources.to_dict(),
                    counts={source: count.to_dict() for source, count in built.counts.items()},
                    left_out=built.left_out, examples=[example.stored() for example in built.examples],
                    created_by=created_by,
                )
        except IntegrityError:
            continue
    raise LaunchError(f"could not number a new version of {name}: try again")


def _enqueue_training(run_id: int, resume: bool = False) -> None:
    # The run names its task before the message exists: a worker quick to take it finds it the
    # run's current task (training.trainer.lifecycle ignores deliveries of any other).
    task_id = uuid()
    Run.objects.filter(id=run_id).update(task_id=task_id, attempts=0)
    celery_app.send_task(RUN_TRAINING, (run_id,), {"resume": resume}, task_id=task_id)


def run_stop(*, run: Run) -> Run:
    """Ask the trainer to stop after the current step (cooperative: never kills the worker).
    A run with no trainer (queued, interrupted, waiting) is stopped at once."""
    if run.status in (Run.Status.QUEUED, Run.Status.INTERRUPTED, Run.Status.WAITING):
        Run.objects.filter(id=run.id, status=run.status).update(
            stop_requested=True, status=Run.Status.STOPPED, finished_at=timezone.now(), waiting_for="",
        )
    elif run.status == Run.Status.RUNNING:
        Run.objects.filter(id=run.id).update(stop_requested=True, status=Run.Status.STOPPING)
    run.refresh_from_db()
    return run


def _revisions_named(revisions_by: tuple[tuple[str, int], ...]) -> str:
    """"3 revisions by curators (ada (2), grace (1))"."""
    total = sum(n for _, n in revisions_by)
    who = ", ".join(f"{name} ({n})" for name, n in revisions_by)
    return f"{total} revision{pluralize(total)} by curators ({who})"


class RevisionsAtStake(LaunchError):
    """Resuming would redo steps whose rollouts curators revised: the caller must confirm."""


def run_resume(*, run: Run, revisions_seen: int = 0) -> Run:
    """Continue a stopped, failed, interrupted or waiting run from its last complete checkpoint,
    in a new task (whose deliveries are counted afresh).

    The trainer replaces the rows of the steps after that checkpoint, and with them the
    curators' revisions of their rollouts: `revisions_seen` must be the number the caller was
    shown (see deletion_selectors.resume_redo), so a curator's edit is never lost silently."""
    if run.status not in Run.RESUMABLE:
        raise LaunchError(f"only a stopped, failed, interrupted or waiting run can resume (this one is {run.status})")
    # An interrupted run may have been lost after its last step, before its adapter was saved.
    if run.steps_done >= run.max_steps and run.status != Run.Status.INTERRUPTED:
        raise LaunchError("this run already did all its steps")
    redo = resume_redo(run)
    if redo.revisions != revisions_seen:
        raise RevisionsAtStake(
            f"resuming redoes the steps after step {redo.checkpoint_step}, which removes "
            f"{_revisions_named(redo.revisions_by)} of their rollouts, not the {revisions_seen} confirmed; "
            "export the run to keep them, then confirm"
        )
    with transaction.atomic():
        Run.objects.filter(id=run.id).update(
            status=Run.Status.QUEUED, stop_requested=False, error="", finished_at=None, waiting_for="",
        )
        transaction.on_commit(lambda: _enqueue_training(run.id, resume=True))
    run.refresh_from_db()
    return run


def runs_resume_waiting(*, answering: set[str]) -> list[Run]:
    """Resume each run waiting for workers whose queues all answer again (Celery beat's
    periodic `training.tasks.resume_waiting_runs`); the runs resumed."""
    resumed = []
    for run in Run.objects.filter(status=Run.Status.WAITING):
        if set(stage_queues(Recipe.from_dict(run.recipe))) <= answering:
            try:
                resumed.append(run_resume(run=run))
            except RevisionsAtStake as exc:  # only a curator may confirm that: the run page asks
                log.warning("run %s waits for a curator's resume: %s", run.id, exc)
    return resumed


def run_duplicate(*, run: Run, created_by: AbstractBaseUser | None = None) -> Run:
    """Launch a copy of `run` as it was launched (`manage.py train --like RUN`): its pool, base
    model, hyper-parameters, subjects, seed, and its recipe as the run stored it, not today's
    preset or saved recipe of that name."""
    return run_launch(
        pool=run.pool, recipe_name=run.recipe_name, recipe_snapshot=run.recipe,  # its recipe, not today's preset
        base_model=run.base_model, arguments=run.hyperparameters,
        subjects=run.subjects, seed=run.seed, name=f"{run.name} (copy)", created_by=created_by,
        kind=run.kind, sft_dataset=run.sft_dataset, init_run=run.init_run,
    )


def run_delete(*, run: Run, revisions_seen: int = 0) -> RunDeletion:
    """Delete a run that is not active: its steps, rollouts, the paintings no other run
    uses, its exports and its files. Returns what was removed.

    The curators' revisions of its rollouts go with it only when the caller has seen them:
    `revisions_seen` must be the number the confirmation showed, so a run with revisions
    (or with more than were shown) is refused instead of losing a curator's edit silently.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_active:
            raise LaunchError("stop the run before deleting it")
        continuing = list(run.continued_by.values_list("id", flat=True))
        if continuing:
            ids = ", ".join(f"#{i}" for i in continuing)
            raise LaunchError(f"GRPO run {ids} continues this run's adapter (it resumes from it): delete {ids} first")
        # Locking the rollouts holds back a revision being saved now (its foreign key waits).
        list(Rollout.objects.select_for_update().filter(run=run).values_list("id", flat=True))
        deletion = run_deletion(run)
        if deletion.revisions != revisions_seen:
            raise LaunchError(
                f"this run has {_revisions_named(deletion.revisions_by)}, not the {revisions_seen} confirmed; "
                "export the run to keep them, then confirm their deletion"
            )
        run.delete()
        transaction.on_commit(lambda: _remove_run_files(deletion))
    return deletion


def _remove_run_files(deletion: RunDeletion) -> None:
    """After the rows are gone: the run's own paintings and its output folder (checkpoints,
    adapter). Export zips go with their rows (RunExport's post_delete)."""
    for name in deletion.paintings:
        default_storage.delete(name)
    if deletion.output_dir:
        shutil.rmtree(deletion.output_dir, ignore_errors=True)
