"""Production settings: everything from settings.py, hardened.

Use with DJANGO_SETTINGS_MODULE=paintapp.settings_production behind an HTTPS proxy.
`manage.py check --deploy` passes once SECRET_KEY, ALLOWED_HOSTS and the HTTPS settings
below are in place.
"""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from paintapp.settings import *  # noqa: F401,F403
from paintapp.settings import env, validate

DEBUG = env.bool("DEBUG", False)
SECRET_KEY = env.str("SECRET_KEY", "")
if len(SECRET_KEY) < 50 or SECRET_KEY.startswith("dev-only"):
    raise ImproperlyConfigured("Set SECRET_KEY to a random string of at least 50 characters.")

STORAGES = {
    "default": DEFAULT_STORAGE,  # noqa: F405 - MEDIA_ROOT or the S3 bucket, as in settings.py
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31536000, validate=validate.Range(min=0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
