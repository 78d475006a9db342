"""Settings for Paint with Code Studio, read from the environment (12-factor).

Local defaults are safe for one person on one machine; `paintapp.settings_production`
tightens them for a deployment. Every variable is listed in the README.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from environs import Env, validate

from paintapp.lib.infra import resolve_services

BASE_DIR = Path(__file__).resolve().parent.parent


class StudioEnv(Env):
    """environs' reader, where a blank variable (`DEBUG=` in a .env or compose file) means
    "not set": it takes the default, as it always has here. Values are stripped.

    A bad value stops start-up with an error naming the variable (environs' EnvValidationError).
    """

    def _get_value(self, env_key, default):
        value = super()._get_value(env_key, default)
        if isinstance(value, str):
            value = value.strip()
            return value if value else default
        return value

    def comma_list(self, name: str, default: list[str]) -> list[str]:
        """A comma-separated list; blanks between commas are dropped."""
        return [item for item in self.list(name, default, subcast=str.strip) if item]


env = StudioEnv()
POSITIVE = validate.Range(min=1)

VAR_DIR = env.path("PAINTAPP_VAR_DIR", BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", True)
# A fixed development key is fine locally; production settings refuse to start without one.
SECRET_KEY = env.str("SECRET_KEY", "dev-only-insecure-key-change-me-for-any-deployment")
ALLOWED_HOSTS = env.comma_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.comma_list("CSRF_TRUSTED_ORIGINS", [])

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
    "serving",
    "demo",
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
TIME_ZONE = env.str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Files -----------------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", BASE_DIR / "staticfiles")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
NODE_MODULES = env.path("PAINTAPP_NODE_MODULES", BASE_DIR / "node_modules")
# Third-party browser assets come from npm at setup time and are served from node_modules;
# they are never committed.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", NODE_MODULES / "htmx.org" / "dist"),
    ("vendor/uplot", NODE_MODULES / "uplot" / "dist"),
    ("vendor/codemirror", NODE_MODULES / ".studio"),  # esbuild bundle made by `make setup`
    # The render harness and the very p5/p5.brush files the render workers load, for the
    # editor's in-browser preview (training/editor/preview.py).
    ("paint-harness", BASE_DIR / "paintenv" / "page"),
    ("vendor/p5", NODE_MODULES / "p5" / "lib"),
    ("vendor/p5.brush", NODE_MODULES / "p5.brush" / "dist"),
]
MEDIA_URL = "media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", BASE_DIR / "media")
# Where paintings, references, exports and (copies of) checkpoints live: `local` is MEDIA_ROOT
# (shared by NFS beyond one machine); `s3` is an S3-compatible bucket (AWS, MinIO, R2...) through
# django-storages, which every machine reaches. Credentials come as boto3 reads them
# (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the machine's role).
STORAGE = env.str("PAINTAPP_STORAGE", "local", validate=validate.OneOf(["local", "s3"]))
S3_OPTIONS = {
    "bucket_name": env.str("PAINTAPP_S3_BUCKET", ""),
    "endpoint_url": env.str("PAINTAPP_S3_ENDPOINT_URL", "") or None,
    "region_name": env.str("PAINTAPP_S3_REGION", "us-east-1"),
    "location": env.str("PAINTAPP_S3_PREFIX", ""),
    "file_overwrite": True,  # content-addressed names: the same name is the same bytes
    "querystring_auth": False,  # the studio serves every file through its own views
}
if STORAGE == "s3" and not S3_OPTIONS["bucket_name"]:
    raise ImproperlyConfigured("PAINTAPP_STORAGE=s3 needs PAINTAPP_S3_BUCKET (and, off AWS, PAINTAPP_S3_ENDPOINT_URL).")
DEFAULT_STORAGE = (
    {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": S3_OPTIONS} if STORAGE == "s3"
    else {"BACKEND": "django.core.files.storage.FileSystemStorage"}
)
STORAGES = {
    "default": DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024, validate=POSITIVE)
# The license written into exported datasets' cards (a Hub license id); the studio cannot
# know under which terms its curators publish, so it says "unknown" until told.
DATASET_LICENSE = env.str("PAINTAPP_DATASET_LICENSE", "unknown")

# --- Celery ----------------------------------------------------------------------------
# Long tasks: acknowledge after the work is done, take one message at a time, and keep the
# broker from redelivering a running training task (visibility timeout > longest task).
TRAIN_TIME_LIMIT_S = env.int("TRAIN_TIME_LIMIT_S", 72 * 3600, validate=POSITIVE)
RENDER_TIME_LIMIT_S = env.int("RENDER_TIME_LIMIT_S", 180, validate=POSITIVE)
SCORE_TIME_LIMIT_S = env.int("SCORE_TIME_LIMIT_S", 600, validate=POSITIVE)

CELERY_BROKER_URL = SERVICES.broker_url
CELERY_RESULT_BACKEND = SERVICES.result_backend
CELERY_RESULT_EXPIRES = env.int("CELERY_RESULT_EXPIRES", 24 * 3600, validate=validate.Range(min=0))
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
# A broker restart: a worker whose task ends while Redis is away stores the result when it is
# back (exponential waits, ~1 min in all; turned on for workers only, in paintapp/celery.py)
# instead of losing it, and a running task is never cancelled for the lost connection (Celery 6
# flips that default): a days-long training run keeps going, and its late ack goes to the
# restarted broker.
CELERY_RESULT_BACKEND_MAX_RETRIES = 20
CELERY_RESULT_BACKEND_BASE_SLEEP_BETWEEN_RETRIES_MS = 100
CELERY_RESULT_BACKEND_MAX_SLEEP_BETWEEN_RETRIES_MS = 5000
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
if SERVICES.broker_mode == "redis":
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": TRAIN_TIME_LIMIT_S + 3600}
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": TRAIN_TIME_LIMIT_S + 3600}
# A trainer writes Run.heartbeat_at every TRAINER_HEARTBEAT_S; Celery beat sends the reaper
# (training.tasks.reap_runs, to a score worker: the train worker may be the one that died)
# every TRAINER_REAP_EVERY_S, and it marks a run silent for TRAINER_STALE_S `interrupted`.
# A run's train task delivered more than PAINTAPP_TRAIN_MAX_ATTEMPTS times fails the run.
TRAINER_HEARTBEAT_S = env.float("TRAINER_HEARTBEAT_S", 10.0, validate=validate.Range(min=0.1))
TRAINER_STALE_S = env.float("TRAINER_STALE_S", 60.0, validate=validate.Range(min=1.0))
TRAINER_REAP_EVERY_S = env.float("TRAINER_REAP_EVERY_S", 20.0, validate=validate.Range(min=1.0))
TRAIN_MAX_ATTEMPTS = env.int("PAINTAPP_TRAIN_MAX_ATTEMPTS", 3, validate=POSITIVE)
if TRAINER_STALE_S < 3 * TRAINER_HEARTBEAT_S:
    raise ImproperlyConfigured("TRAINER_STALE_S must be at least 3 x TRAINER_HEARTBEAT_S, or one late beat reaps a live run")
CELERY_BEAT_SCHEDULE = {
    "reap-silent-runs": {
        "task": "training.tasks.reap_runs", "schedule": TRAINER_REAP_EVERY_S,
        "options": {"expires": TRAINER_REAP_EVERY_S},  # unanswered sweeps never pile up
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
RENDER_CONCURRENCY = env.int("RENDER_CONCURRENCY", 2, validate=POSITIVE)
SCORE_CONCURRENCY = env.int("SCORE_CONCURRENCY", 1, validate=POSITIVE)
# Judge calls for one painting at once (both orders x 4 references = 8): a VLM judge mostly waits.
JUDGE_CONCURRENCY = env.int("PAINTAPP_JUDGE_CONCURRENCY", 8, validate=POSITIVE)
# How long a recipe probe (painting.tasks.probe_recipes) may take on a score worker, all told.
RECIPE_PROBE_TIMEOUT_S = env.float("PAINTAPP_RECIPE_PROBE_TIMEOUT_S", 10.0, validate=validate.Range(min=1.0))

# --- Missing render and score workers ---------------------------------------------------
# Launch refuses a run when no render worker (or, for a recipe that scores, no score worker)
# answers; turn it off where those workers are started from zero by queue depth.
LAUNCH_CHECKS_WORKERS = env.bool("PAINTAPP_LAUNCH_CHECKS_WORKERS", True)
# A step whose rollouts were all lost to infrastructure takes no optimizer step: it waits up to
# WORKER_WAIT_S for the workers it needs, retries once, then the run pauses `waiting`. Celery
# beat sends training.tasks.resume_waiting_runs every WAITING_CHECK_EVERY_S (to the train
# worker, idle while its run waits) and it resumes each waiting run whose workers answer again.
WORKER_WAIT_S = env.float("PAINTAPP_WORKER_WAIT_S", 120.0, validate=validate.Range(min=0.0))
WAITING_CHECK_EVERY_S = env.float("PAINTAPP_WAITING_CHECK_EVERY_S", 30.0, validate=validate.Range(min=1.0))
CELERY_BEAT_SCHEDULE["resume-waiting-runs"] = {
    "task": "training.tasks.resume_waiting_runs", "schedule": WAITING_CHECK_EVERY_S,
    "options": {"expires": WAITING_CHECK_EVERY_S},  # checks a busy train worker never took do not pile up
}

# A GPU box's score queue for recipes that weight HPSv3 (e.g. "score-gpu", consumed by
# `make worker-score-gpu`: one process per GPU, so HPSv3 is loaded once per GPU); empty: every
# score on `score`.
GPU_SCORE_QUEUE = env.str("PAINTAPP_GPU_SCORE_QUEUE", "")

# --- Painting environment --------------------------------------------------------------
CHROMIUM_PATH = env.str("CHROMIUM_PATH", "/usr/bin/chromium")
RENDER_SIZE = env.int("RENDER_SIZE", 600, validate=validate.Range(min=16, max=4096))  # what the renderer accepts
RENDER_TIMEOUT_S = env.int("RENDER_TIMEOUT_S", 60, validate=POSITIVE)
# The rollout editor, where someone waits: a server render still running after this is
# stopped (no reward; training keeps RENDER_TIMEOUT_S), and the in-browser preview of a
# sketch still running after its budget is thrown away. An editor render paints a sketch
# that passes twice (the determinism check), so its deadline covers two renders.
EDITOR_RENDER_DEADLINE_S = env.float("EDITOR_RENDER_DEADLINE_S", 20.0, validate=validate.Range(min=0.5))
# Reward integrity: the trainer renders 1 in this many sketches that pass the gate a second
# time with the same seed and fails those whose paintings differ (`nondeterministic`); 1 checks
# every sketch, 0 none. Evaluation and the editor always check.
DETERMINISM_EVERY = env.int("PAINTAPP_DETERMINISM_EVERY", 8, validate=validate.Range(min=0))
EDITOR_PREVIEW_BUDGET_S = env.float("EDITOR_PREVIEW_BUDGET_S", 5.0, validate=validate.Range(min=0.5))
MODELS_DIR = env.path("PAINTAPP_MODELS_DIR", BASE_DIR / "models")

# A Hugging Face Space for runs that report to trackio (e.g. ada/paint-with-code-curves): the
# train worker's HF_TOKEN creates it, and the dashboard lives there instead of on the train box.
TRACKIO_SPACE_ID = env.str("PAINTAPP_TRACKIO_SPACE_ID", "")

# --- The OpenEnv server (manage.py serve_env) --------------------------------------------
# A deployment's own bearer token, beside the tokens curators create and revoke in the studio
# (Runs → Environment tokens); empty: only those. Without a valid token no episode is played.
ENV_TOKEN = env.str("PAINTAPP_ENV_TOKEN", "")
# A session whose socket carried nothing for this long is closed (the client reconnects).
ENV_IDLE_S = env.float("PAINTAPP_ENV_IDLE_S", 600.0, validate=validate.Range(min=0.1))
ENV_MAX_SESSIONS = env.int("PAINTAPP_ENV_MAX_SESSIONS", 64, validate=validate.Range(min=1))
# The longest reply an action may carry (characters): the published model's replies stay under
# 20k; a policy that rambles past this is refused with an error, not scored.
ENV_MAX_RESPONSE_CHARS = env.int("PAINTAPP_ENV_MAX_RESPONSE_CHARS", 100_000, validate=validate.Range(min=1000))

# --- Logging ---------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.log_level("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Task results (whole render verdicts) are data for the caller, not log lines.
        "celery.app.trace": {"level": "WARNING"},
    },
}

# Say once, at start-up of a server or worker, which mode is running.
if any(arg in {"runserver", "worker"} for arg in sys.argv) and os.environ.get("RUN_MAIN") != "true":
    print(f"[paintapp] {SERVICES.describe()}", file=sys.stderr)
