"""Saved recipes may not share a preset's name: the embedded presets' new names
(studio-hps-only, studio-judge-led, studio-hps-led) were free before, so a row that took one
is renamed NAME-saved (its runs keep their own recipe snapshot)."""
from django.db import migrations

PRESET_NAMES = ("hps-only", "judge-led", "hps-led", "studio-hps-only", "studio-judge-led", "studio-hps-led")


def rename_colliding(apps, schema_editor):
    recipes = apps.get_model("painting", "RewardRecipe")
    for recipe in recipes.objects.filter(name__in=PRESET_NAMES):
        name = f"{recipe.name}-saved"
        while recipes.objects.filter(name=name).exists():
            name += "-saved"
        recipe.name = name
        recipe.config = {**recipe.config, "name": name}
        recipe.save(update_fields=["name", "config"])


class Migration(migrations.Migration):
    dependencies = [("painting", "0001_initial")]
    operations = [migrations.RunPython(rename_colliding, migrations.RunPython.noop)]
