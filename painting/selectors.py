"""Reads: reward recipes by name (the published presets, then the curators' own)."""
from __future__ import annotations

from paintapp.env.reward import PRESETS, Recipe
from painting.models import RewardRecipe


class UnknownRecipe(ValueError):
    """No preset or saved recipe has this name."""


def recipe_names() -> list[str]:
    return [*PRESETS, *RewardRecipe.objects.values_list("name", flat=True)]


def recipe_get(name: str) -> Recipe:
    if name in PRESETS:
        return PRESETS[name]
    custom = RewardRecipe.objects.filter(name=name).first()
    if custom is None:
        raise UnknownRecipe(f"unknown recipe {name!r}; choose one of {', '.join(recipe_names())}")
    return Recipe.from_dict({**custom.config, "name": custom.name})
