"""Custom reward recipes (the published presets live in code: paintapp.env.reward.PRESETS)."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class RewardRecipe(models.Model):
    """A named Recipe saved by a curator; runs copy its config, so editing it never changes a run."""

    name = models.SlugField(max_length=80, unique=True)
    config = models.JSONField(help_text="paintapp.env.reward.Recipe as a dict")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
