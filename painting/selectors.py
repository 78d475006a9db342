"""Reads: reward recipes by name (the presets, then the curators' own) and the default one."""
from __future__ import annotations

from paintenv.probes import default_recipe_name as _default_for
from paintenv.reward import LENGTH_THRESHOLDS, PRESETS, STUDIO_PREFIX, Recipe
from painting.models import RewardRecipe


class UnknownRecipe(ValueError):
    """No preset or saved recipe has this name."""


def recipe_names() -> list[str]:
    return [*PRESETS, *RewardRecipe.objects.exclude(name__in=list(PRESETS)).values_list("name", flat=True)]


def recipe_get(name: str) -> Recipe:
    if name in PRESETS:
        return PRESETS[name]
    custom = RewardRecipe.objects.filter(name=name).first()
    if custom is None:
        raise UnknownRecipe(f"unknown recipe {name!r}; choose one of {', '.join(recipe_names())}")
    return Recipe.from_dict({**custom.config, "name": custom.name})


def recipe_source(name: str) -> str:
    """"published", "studio" (the embedded equivalents) or "saved"."""
    if name not in PRESETS:
        return "saved"
    return "studio" if name.startswith(STUDIO_PREFIX) else "published"


def default_recipe_name() -> str:
    """The published judge-led where its VLM judge and HPSv3 are configured (this process's
    environment), else studio-judge-led."""
    return _default_for()


def recipe_name_matching(snapshot: dict) -> str | None:
    """The preset or saved recipe that judges as `snapshot` (a stored run's recipe) does,
    its own name first: a run stored before a preset changed meaning finds its equivalent
    (an old `judge-led` run, taste judge and features, finds `studio-judge-led`)."""
    def judging(config: dict) -> dict:
        ignored = {"name", *LENGTH_THRESHOLDS}  # the launch sets the thresholds per run
        return {k: v for k, v in Recipe.from_dict({**config, "name": "-"}).to_dict().items() if k not in ignored}

    wanted = judging(snapshot)
    own = snapshot.get("name")
    names = sorted(recipe_names(), key=lambda name: name != own)
    return next((name for name in names if judging(recipe_get(name).to_dict()) == wanted), None)
