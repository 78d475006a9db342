"""Custom reward recipes (the published presets live in code: paintenv.reward.PRESETS)."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from paintenv.reward import PRESETS


class RewardRecipe(models.Model):
    """A named Recipe saved by a curator; runs copy its config, so editing it never changes a run."""

    name = models.SlugField(max_length=80, unique=True)
    config = models.JSONField(help_text="paintenv.reward.Recipe as a dict")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # recipe_get reads the presets first: a saved recipe under a preset's name would be hidden.
        if self.name in PRESETS:
            raise ValidationError({"name": f"{self.name} is a preset's name; choose another"})
