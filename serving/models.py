"""Bearer tokens for the OpenEnv server: a curator creates one per outside trainer and
revokes it when that trainer should stop. Only a hash of the secret is kept."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class EnvToken(models.Model):
    name = models.CharField(max_length=120, unique=True, help_text="who or what trains with it")
    key_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the secret")
    prefix = models.CharField(max_length=16, help_text="the secret's first characters, to recognise it")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    episodes = models.PositiveIntegerField(default=0, help_text="steps scored with it")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
