"""Writes for training: renders and scores (for the workers), recipes and runs."""
from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from curation.models import Pool, Tier
from paintapp.env.painting import paint_source
from paintapp.env.prompts import SUBJECTS
from paintapp.env.renderer import RendererConfig, get_renderer
from paintapp.env.reward import LENGTH_THRESHOLDS, PRESETS, Recipe
from paintapp.storage import sha256_hex, store_content_addressed
from training.config import RunArguments
from training.models import RewardRecipe, Run


def renderer_config() -> RendererConfig:
    return RendererConfig(chromium_path=settings.CHROMIUM_PATH, timeout_s=float(settings.RENDER_TIMEOUT_S))


def painting_render(
    *,
    code: str,
    seed: int = 0,
    size: int | None = None,
    strictness: str = "allowlist",
    render_failed_gate: bool = False,
) -> dict:
    """Gate and render one sketch in this process's warm browser; store the PNG.

    Returns the verdict as JSON-able data with `png_path` (a storage name) instead of the
    bytes. Raises RenderUnavailable when Chromium cannot render at all.
    """
    painting = paint_source(
        code,
        renderer=get_renderer(renderer_config()),
        seed=seed,
        size=size or settings.RENDER_SIZE,
        strictness=strictness,
        render_failed_gate=render_failed_gate,
    )
    result = painting.to_dict()
    result["png_path"] = store_content_addressed(painting.png, folder="renders") if painting.png else None
    result["png_sha256"] = sha256_hex(painting.png) if painting.png else None
    return result


# --- runs ---------------------------------------------------------------------------------



class LaunchError(ValueError):
    """A run that cannot be launched, with a message fit for the form."""


def recipe_get(name: str) -> Recipe:
    if name in PRESETS:
        return PRESETS[name]
    custom = RewardRecipe.objects.filter(name=name).first()
    if custom is None:
        raise LaunchError(f"unknown recipe {name!r}; choose one of {', '.join(recipe_names())}")
    return Recipe.from_dict({**custom.config, "name": custom.name})


def recipe_names() -> list[str]:
    return [*PRESETS, *RewardRecipe.objects.values_list("name", flat=True)]


def recipe_save(*, name: str, recipe: Recipe, created_by: AbstractBaseUser | None = None) -> RewardRecipe:
    from django.utils.text import slugify

    slug = slugify(name)
    if not slug or slug in PRESETS:
        raise LaunchError("choose a new name for the recipe (the published presets cannot be overwritten)")
    obj, _ = RewardRecipe.objects.update_or_create(
        name=slug, defaults={"config": recipe.with_(name=slug).to_dict(), "created_by": created_by}
    )
    return obj


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


def run_launch(
    *,
    pool: Pool,
    recipe_name: str,
    base_model: str | None = None,
    arguments: dict | None = None,
    recipe_overrides: dict | None = None,
    subjects: list[str] | None = None,
    seed: int = 0,
    name: str = "",
    created_by: AbstractBaseUser | None = None,
) -> Run:
    """Validate and queue a GRPO run on the `train` queue (after the transaction commits).

    `recipe_overrides` sets this run's length thresholds on its recipe snapshot.
    """
    recipe = recipe_get(recipe_name)
    unknown = sorted(set(recipe_overrides or {}) - set(LENGTH_THRESHOLDS))
    if unknown:
        raise LaunchError(f"a run can only set the recipe's {', '.join(LENGTH_THRESHOLDS)}, not {', '.join(unknown)}")
    try:
        recipe = recipe.with_(**(recipe_overrides or {}))
    except ValueError as exc:
        raise LaunchError(str(exc)) from exc
    try:
        args = RunArguments.from_dict(arguments or {})
    except (TypeError, ValueError) as exc:
        raise LaunchError(str(exc)) from exc
    base_model = base_model or default_base_model()
    _check_base_model(base_model)
    _check_pool(pool, recipe)
    subjects = [s.strip() for s in (subjects or []) if s and s.strip()] or [SUBJECTS[0].text]
    with transaction.atomic():
        run = Run.objects.create(
            name=name.strip()[:120] or f"{recipe.name} on {pool.label}",
            pool=pool, base_model=base_model, recipe_name=recipe.name, recipe=recipe.to_dict(),
            subjects=subjects, hyperparameters=args.to_dict(), seed=seed, created_by=created_by,
        )
        run.output_dir = str(Path(settings.MEDIA_ROOT) / "runs" / str(run.id))
        run.save(update_fields=["output_dir"])
        transaction.on_commit(lambda: _enqueue_training(run.id))
    return run


def _enqueue_training(run_id: int, resume: bool = False) -> None:
    from training.tasks import run_training

    result = run_training.delay(run_id, resume=resume)
    Run.objects.filter(id=run_id).update(task_id=result.id)


def run_stop(*, run: Run) -> Run:
    """Ask the trainer to stop after the current step (cooperative: never kills the worker)."""
    if run.status == Run.Status.QUEUED:
        Run.objects.filter(id=run.id).update(stop_requested=True, status=Run.Status.STOPPED, finished_at=timezone.now())
    elif run.status == Run.Status.RUNNING:
        Run.objects.filter(id=run.id).update(stop_requested=True, status=Run.Status.STOPPING)
    run.refresh_from_db()
    return run


def run_resume(*, run: Run) -> Run:
    """Continue a stopped or failed run from its last checkpoint, in a new task."""
    if run.status not in (Run.Status.STOPPED, Run.Status.FAILED):
        raise LaunchError(f"only a stopped or failed run can resume (this one is {run.status})")
    if run.steps_done >= run.max_steps:
        raise LaunchError("this run already did all its steps")
    with transaction.atomic():
        Run.objects.filter(id=run.id).update(status=Run.Status.QUEUED, stop_requested=False, error="", finished_at=None)
        transaction.on_commit(lambda: _enqueue_training(run.id, resume=True))
    run.refresh_from_db()
    return run


def run_duplicate(*, run: Run, created_by: AbstractBaseUser | None = None) -> Run:
    return run_launch(
        pool=run.pool, recipe_name=run.recipe_name, base_model=run.base_model, arguments=run.hyperparameters,
        recipe_overrides={k: run.recipe[k] for k in LENGTH_THRESHOLDS if k in run.recipe},  # the run's own thresholds
        subjects=run.subjects, seed=run.seed, name=f"{run.name} (copy)", created_by=created_by,
    )


def run_delete(*, run: Run) -> None:
    """Delete a run that is not active, with its steps, rollouts and files."""
    if run.is_active:
        raise LaunchError("stop the run before deleting it")
    output = Path(run.output_dir) if run.output_dir else None
    run.delete()
    if output and output.exists():
        shutil.rmtree(output, ignore_errors=True)


# --- scoring ------------------------------------------------------------------------------

_judges: dict[tuple, object] = {}
_scorers: dict[str, object] = {}


def judge_for(recipe: Recipe, pool_id: int | None):
    """One judge instance per worker process and (backend, pool): models load once."""
    from paintapp.env.judges import load_judge

    if recipe.judge == "taste":
        from curation.taste import taste_model_for

        pool = Pool.objects.get(id=pool_id)
        taste = taste_model_for(pool)
        key = ("taste", pool_id, taste.created_at.isoformat())
        if key not in _judges:
            _judges[key] = load_judge("taste", params=taste.params)
        return _judges[key]
    key = (recipe.judge, recipe.criteria)
    if key not in _judges:
        _judges[key] = load_judge(recipe.judge, criteria=recipe.criteria) if recipe.judge == "vlm" else load_judge(recipe.judge)
    return _judges[key]


def _scorer_for(name: str):
    from paintapp.env.quality import load_quality

    if name not in _scorers:
        _scorers[name] = load_quality(name)
    return _scorers[name]


def painting_score(
    *, png: bytes, prompt: str, recipe: Recipe, reference_ids: list[int], pool_id: int | None
) -> dict:
    """Judge part (against the references, both orders) and quality part of one painting.

    A part whose backend fails is None with a reason — the reward then becomes None, never 0.
    """
    from django.core.files.storage import default_storage

    from curation.models import Reference
    from paintapp.env.judges import judge_against_references

    result: dict = {"judge": None, "quality": None, "reasons": {}}
    if recipe.w_judge > 0:
        try:
            judge = judge_for(recipe, pool_id)
            refs = {r.id: r for r in Reference.objects.filter(id__in=reference_ids)}
            references = []
            for rid in reference_ids:
                with default_storage.open(refs[rid].image, "rb") as fh:
                    references.append((rid, fh.read()))
            outcome = judge_against_references(judge, png, references, prompt=prompt)
            result["judge"] = outcome.to_dict()
            if outcome.score is None:
                result["reasons"]["judge"] = "no reference could be judged"
        except Exception as exc:  # noqa: BLE001 - the judge backend is down or broken
            result["reasons"]["judge"] = f"{type(exc).__name__}: {exc}"[:500]
    if recipe.w_quality > 0:
        try:
            result["quality"] = _scorer_for(recipe.quality).score(png, prompt=prompt)
            if result["quality"] is None:
                result["reasons"]["quality"] = f"{recipe.quality} scorer returned no score"
        except Exception as exc:  # noqa: BLE001
            result["reasons"]["quality"] = f"{type(exc).__name__}: {exc}"[:500]
    return result


def painting_score_stored(*, png_path: str, prompt: str, recipe: dict, reference_ids: list[int], pool_id: int | None) -> dict:
    from django.core.files.storage import default_storage

    with default_storage.open(png_path, "rb") as fh:
        png = fh.read()
    return painting_score(
        png=png, prompt=prompt, recipe=Recipe.from_dict(recipe), reference_ids=reference_ids, pool_id=pool_id
    )
