"""`manage.py recipes [--pool NAME] [--no-probe]` — every preset and saved recipe, its parts,
weights and whether each part answers now (probed on a score worker).

`manage.py recipes --save NAME [--from RECIPE] [--set KEY=VALUE ...]` saves a recipe of your own:
RECIPE (the default recipe unless given) with the fields set, under NAME, for the launch form
and `manage.py train --recipe NAME`; saving NAME again replaces it (runs keep their copy)."""
from __future__ import annotations

import dataclasses

from django.core.management.base import BaseCommand, CommandError

from paintenv.probes import PartProbe, RecipeProbe, unprobed_recipe
from paintenv.reward import Recipe
from painting.judging import reference_library
from painting.probing import recipes_probe
from painting.selectors import UnknownRecipe, default_recipe_name, recipe_get, recipe_names, recipe_source
from painting.services import RecipeRefused, recipe_save

COLUMNS = ("recipe", "source", "gate", "length", "judge", "quality", "reachable")


def _part(probe: RecipeProbe, name: str) -> PartProbe:
    return next(part for part in probe.parts if part.part == name)


def _reachability(probe: RecipeProbe) -> str:
    weighted = [part for part in probe.parts if part.weight > 0 and part.part in ("judge", "quality")]
    if probe.reachable:
        return f"yes ({probe.where})" if weighted else "yes"
    unclear = [part for part in weighted if part.reachable is not True]
    verdict = "NO" if probe.reachable is False else "?"
    details = {part.detail for part in unclear}
    if len(unclear) > 1 and len(details) == 1:  # one reason for all (no score worker answered)
        return f"{verdict}: {' and '.join(part.part for part in unclear)}: {details.pop()}"
    return f"{verdict}: " + "; ".join(f"{part.part}: {part.detail}" for part in unclear)


def _row(probe: RecipeProbe, default: str, probed: bool) -> tuple[str, ...]:
    recipe = probe.recipe
    name = f"{recipe.name} *" if recipe.name == default else recipe.name
    return (
        name, recipe_source(recipe.name), f"{recipe.w_gate:g}", f"{recipe.w_length:g}",
        f"{recipe.judge} {recipe.w_judge:g}", f"{recipe.quality} {recipe.w_quality:g}",
        _reachability(probe) if probed else "not probed",
    )


class Command(BaseCommand):
    help = "List every reward recipe (presets and saved) with its parts, weights and reachability."

    def add_arguments(self, parser):
        parser.add_argument("--pool", default=None, help="probe the taste judge for this pool (NAME or NAME:VERSION)")
        parser.add_argument("--no-probe", action="store_true", help="list only; ask no worker")
        parser.add_argument("--save", metavar="NAME", default=None, help="save a recipe of your own under NAME")
        parser.add_argument("--from", dest="source", metavar="RECIPE", default=None,
                            help="with --save: the recipe to start from (default: the default recipe)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help=f"with --save: a field to change; one of {', '.join(SETTABLE)}")

    def handle(self, *args, pool, no_probe, save, source, set, **options):
        if save is not None:
            return self.save(save, source or default_recipe_name(), set)
        if source or set:
            raise CommandError("--from and --set go with --save NAME", returncode=2)
        pool_id = None
        if pool:
            try:
                pool_id = reference_library().pool(pool).id
            except LookupError as exc:
                raise CommandError(str(exc), returncode=2) from exc
        recipes = [recipe_get(name) for name in recipe_names()]
        if no_probe:
            probes = [RecipeProbe(recipe, unprobed_recipe(recipe, "not probed")) for recipe in recipes]
        else:
            probes = recipes_probe(recipes, pool_id=pool_id)
        default = default_recipe_name()
        rows = [COLUMNS, *(_row(probe, default, not no_probe) for probe in probes)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
        self.stdout.write(f"* the default recipe here ({default}): judge-led where PAINTAPP_VLM_BASE_URL and "
                          "PAINTAPP_HPSV3_CHECKPOINT are set, else studio-judge-led")

    def save(self, name: str, source: str, pairs: list[str]) -> None:
        try:
            recipe = recipe_get(source).with_(**_fields(pairs))
            saved = recipe_save(name=name, recipe=recipe)
        except (UnknownRecipe, RecipeRefused, ValueError, TypeError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(f"saved recipe {saved.name} (from {source}): "
                          + ", ".join(f"{key}={value}" for key, value in saved.config.items() if key not in ("name", "criteria")))


# The fields --set may change, with the type each value is read as (`name` comes from --save).
SETTABLE = {field.name: field.type for field in dataclasses.fields(Recipe) if field.name != "name"}
_READERS = {"float": float, "int": int, "str": str}


def _fields(pairs: list[str]) -> dict:
    """KEY=VALUE pairs as Recipe fields of their declared types; ValueError naming a bad one."""
    fields = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in SETTABLE:
            raise ValueError(f"--set {pair!r}: use KEY=VALUE with KEY one of {', '.join(SETTABLE)}")
        try:
            fields[key] = _READERS[SETTABLE[key]](value)
        except ValueError as exc:
            raise ValueError(f"--set {pair!r}: {key} takes a {SETTABLE[key]}") from exc
    return fields

