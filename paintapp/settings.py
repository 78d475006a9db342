"""Settings for Paint with Code Studio, read from the environment (12-factor).

Local defaults are safe for one person on one machine; `paintapp.settings_production`
tightens them for a deployment. Every variable is listed in the README.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url

from paintapp.infra import resolve_services

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


VAR_DIR = Path(os.environ.get("PAINTAPP_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", True)
# A fixed development key is fine locally; production settings refuse to start without one.
SECRET_KEY = os.environ.get("SECRET_KEY", "dev-only-insecure-key-change-me-for-any-deployment")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "system",
    "painting",
    "curation",
    "training",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a signed-in curator unless its view opts out (login, health).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "paintapp.urls"
WSGI_APPLICATION = "paintapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # {% partialdef %} everywhere: one template serves the full page and its fragments.
            "builtins": ["template_partials.templatetags.partials", "system.templatetags.studio"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "system.context_processors.service_mode",
            ],
        },
    },
]

# --- Database and broker ---------------------------------------------------------------
SERVICES = resolve_services(dict(os.environ), VAR_DIR)

DATABASES = {"default": dj_database_url.parse(SERVICES.database_url, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while a worker writes.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Files -----------------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
NODE_MODULES = Path(os.environ.get("PAINTAPP_NODE_MODULES", BASE_DIR / "node_modules"))
# Third-party browser assets come from npm at setup time and are served from node_modules;
# they are never committed.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", NODE_MODULES / "htmx.org" / "dist"),
    ("vendor/uplot", NODE_MODULES / "uplot" / "dist"),
    ("vendor/codemirror", NODE_MODULES / ".studio"),  # esbuild bundle made by `make setup`
]
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "media"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024)
# The license written into exported datasets' cards (a Hub license id); the studio cannot
# know under which terms its curators publish, so it says "unknown" until told.
DATASET_LICENSE = os.environ.get("PAINTAPP_DATASET_LICENSE", "unknown")

# --- Celery ----------------------------------------------------------------------------
# Long tasks: acknowledge after the work is done, take one message at a time, and keep the
# broker from redelivering a running training task (visibility timeout > longest task).
TRAIN_TIME_LIMIT_S = env_int("TRAIN_TIME_LIMIT_S", 72 * 3600)
RENDER_TIME_LIMIT_S = env_int("RENDER_TIME_LIMIT_S", 180)
SCORE_TIME_LIMIT_S = env_int("SCORE_TIME_LIMIT_S", 600)

CELERY_BROKER_URL = SERVICES.broker_url
CELERY_RESULT_BACKEND = SERVICES.result_backend
CELERY_RESULT_EXPIRES = env_int("CELERY_RESULT_EXPIRES", 24 * 3600)
CELERY_RESULT_EXTENDED = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TRACK_STARTED = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_SEND_TASK_EVENTS = False
if SERVICES.broker_mode == "redis":
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": TRAIN_TIME_LIMIT_S + 3600}
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": TRAIN_TIME_LIMIT_S + 3600}
RENDER_CONCURRENCY = env_int("RENDER_CONCURRENCY", 2)
SCORE_CONCURRENCY = env_int("SCORE_CONCURRENCY", 1)

# --- Painting environment --------------------------------------------------------------
CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
RENDER_SIZE = env_int("RENDER_SIZE", 600)
RENDER_TIMEOUT_S = env_int("RENDER_TIMEOUT_S", 60)
MODELS_DIR = Path(os.environ.get("PAINTAPP_MODELS_DIR", BASE_DIR / "models"))

# --- Logging ---------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Task results (whole render verdicts) are data for the caller, not log lines.
        "celery.app.trace": {"level": "WARNING"},
    },
}

# Say once, at start-up of a server or worker, which mode is running.
if any(arg in {"runserver", "worker"} for arg in sys.argv) and os.environ.get("RUN_MAIN") != "true":
    print(f"[paintapp] {SERVICES.describe()}", file=sys.stderr)
