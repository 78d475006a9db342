"""Writes for painting: a render stored as a PNG, a painting's judge and quality parts, recipes.

These adapt `paintenv` (a plain library) to the database, the file storage and the
workers' warm browsers. The Celery tasks and the in-process pipeline both call them, so a
sketch is judged the same way wherever it runs.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.utils.text import slugify

from paintapp.lib.storage import sha256_hex, store_content_addressed
from paintenv.judges import judge_against_references
from paintenv.paint import paint_source
from paintenv.probes import RecipeProbe, probe_recipe
from paintenv.render_config import RendererConfig
from paintenv.renderer import Renderer, get_renderer
from paintenv.reward import PRESETS, Recipe
from painting.judging import judge_for, reference_library, scorer_for
from painting.models import RewardRecipe
from painting.results import RenderResult, ScoreResult


class RecipeRefused(ValueError):
    """A recipe that cannot be saved, with a message fit for a form."""


def renderer_config(**changes) -> RendererConfig:
    """The renderer as settings configure it (CHROMIUM_PATH, RENDER_TIMEOUT_S), with `changes`."""
    base = {"chromium_path": settings.CHROMIUM_PATH, "timeout_s": float(settings.RENDER_TIMEOUT_S)}
    return RendererConfig(**{**base, **changes})


def painting_render(
    *,
    code: str,
    seed: int = 0,
    size: int | None = None,
    strictness: str = "allowlist",
    render_failed_gate: bool = False,
    check_determinism: bool = False,
    renderer: Renderer | None = None,
    twin: bool = False,
) -> RenderResult:
    """Gate and render one sketch (in this process's warm browser unless `renderer` is given),
    read the painting for writing, and with `check_determinism` render it a second time (`twin`:
    this is the determinism check's second render, on a page with another history);
    store the PNG content-addressed.

    Returns the verdict as JSON-able data with `png_path` (a storage name) instead of the
    bytes. Raises RenderUnavailable when Chromium (or the text check) cannot run at all.
    """
    # The sketch is gated again here (milliseconds) although the sender gated it: a render
    # message can come from any process that reaches the broker, and this is where sketch code
    # meets Chromium, so the gate that guards the browser runs beside it, never trusting a verdict
    # carried in a message.
    painting = paint_source(
        code,
        renderer=renderer or get_renderer(renderer_config()),
        seed=seed,
        size=size or settings.RENDER_SIZE,
        strictness=strictness,
        render_failed_gate=render_failed_gate,
        check_determinism=check_determinism,
        twin=twin,
    )
    result: RenderResult = painting.to_dict()
    result["png_path"] = store_content_addressed(painting.png, folder="renders") if painting.png else None
    result["png_sha256"] = sha256_hex(painting.png) if painting.png else None
    return result


def painting_score(
    *, png: bytes, prompt: str, recipe: Recipe, reference_ids: list[int], pool_id: int | None
) -> ScoreResult:
    """Judge part (against the references, both orders) and quality part of one painting.

    A part whose backend fails is None with a reason — the reward then becomes None, never 0.
    """
    result: ScoreResult = {"judge": None, "quality": None, "reasons": {}}
    if recipe.w_judge > 0:
        try:
            judge = judge_for(recipe, pool_id)
            references = reference_library().images(reference_ids)
            outcome = judge_against_references(
                judge, png, references, prompt=prompt, concurrency=settings.JUDGE_CONCURRENCY
            )
            result["judge"] = outcome.to_dict()
            if outcome.score is None:
                result["reasons"]["judge"] = "no reference could be judged"
        except Exception as exc:  # noqa: BLE001 - the judge backend is down or broken
            result["reasons"]["judge"] = f"{type(exc).__name__}: {exc}"[:500]
    if recipe.w_quality > 0:
        try:
            result["quality"] = scorer_for(recipe.quality).score(png, prompt=prompt)
            if result["quality"] is None:
                result["reasons"]["quality"] = f"{recipe.quality} scorer returned no score"
        except Exception as exc:  # noqa: BLE001
            result["reasons"]["quality"] = f"{type(exc).__name__}: {exc}"[:500]
    return result


def painting_score_stored(
    *, png_path: str, prompt: str, recipe: dict, reference_ids: list[int], pool_id: int | None
) -> ScoreResult:
    with default_storage.open(png_path, "rb") as fh:
        png = fh.read()
    return painting_score(
        png=png, prompt=prompt, recipe=Recipe.from_dict(recipe), reference_ids=reference_ids, pool_id=pool_id
    )


def recipes_probe_here(recipes: list[Recipe], *, pool_id: int | None, where: str) -> list[RecipeProbe]:
    """Probe `recipes`' parts in this process (on a score worker, through painting.tasks.probe_recipes)."""
    taste = reference_library().taste_status(pool_id) if pool_id is not None else None
    return [RecipeProbe(recipe, probe_recipe(recipe, taste=taste), where) for recipe in recipes]


def recipe_save(*, name: str, recipe: Recipe, created_by: AbstractBaseUser | None = None) -> RewardRecipe:
    slug = slugify(name)
    if not slug:
        raise RecipeRefused("choose a name for the recipe (letters, digits or hyphens)")
    if slug in PRESETS:  # a preset's name would hide the saved recipe (recipe_get reads presets first)
        raise RecipeRefused(f"choose a new name for the recipe: {slug} is a preset's name")
    saved, _ = RewardRecipe.objects.update_or_create(
        name=slug, defaults={"config": recipe.with_(name=slug).to_dict(), "created_by": created_by}
    )
    return saved
