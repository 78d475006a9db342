"""`manage.py recipes [--pool NAME] [--no-probe]` — every preset and saved recipe, its parts,
weights and whether each part answers now (probed on a score worker)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from paintenv.probes import PartProbe, RecipeProbe, unprobed_recipe
from painting.judging import reference_library
from painting.probing import recipes_probe
from painting.selectors import default_recipe_name, recipe_get, recipe_names, recipe_source

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

    def handle(self, *args, pool, no_probe, **options):
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
