"""Custom reward recipes moved to the painting app: copy the rows, then drop the old table."""

from django.db import migrations


def _copy(source, target) -> None:
    for recipe in source.objects.all():
        copied = target.objects.create(name=recipe.name, config=recipe.config, created_by_id=recipe.created_by_id)
        # auto_now_add stamped the copy with today: keep when the curator saved it.
        target.objects.filter(pk=copied.pk).update(created_at=recipe.created_at)


def copy_recipes(apps, schema_editor):
    _copy(apps.get_model("training", "RewardRecipe"), apps.get_model("painting", "RewardRecipe"))


def copy_back(apps, schema_editor):
    _copy(apps.get_model("painting", "RewardRecipe"), apps.get_model("training", "RewardRecipe"))


class Migration(migrations.Migration):

    dependencies = [
        ("training", "0002_revision_tasks"),
        ("painting", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(copy_recipes, copy_back),
        migrations.DeleteModel(name="RewardRecipe"),
    ]
