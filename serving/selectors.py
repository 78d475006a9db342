"""Reads of the OpenEnv server: who a bearer token is, and the tokens a curator sees."""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db.models import QuerySet

from serving.models import EnvToken

# The name under which episodes fed with the deployment's own token (PAINTAPP_ENV_TOKEN) are kept.
DEPLOYMENT_TOKEN_NAME = "PAINTAPP_ENV_TOKEN"


def secret_hash(secret: str) -> str:
    # A token is 32 random bytes, so a plain sha256 is enough to keep it unreadable at rest.
    return hashlib.sha256(secret.encode()).hexdigest()


def token_name_for(secret: str | None) -> str | None:
    """The name of the token `secret` is, or None: no secret, an unknown one or a revoked one."""
    if not secret:
        return None
    if settings.ENV_TOKEN and hmac.compare_digest(secret.encode(), settings.ENV_TOKEN.encode()):
        return DEPLOYMENT_TOKEN_NAME
    token = EnvToken.objects.filter(key_hash=secret_hash(secret), revoked_at__isnull=True).only("name").first()
    return token.name if token else None


def tokens() -> QuerySet[EnvToken]:
    return EnvToken.objects.select_related("created_by").order_by("revoked_at", "-created_at")
