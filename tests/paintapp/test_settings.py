"""Settings: read from the environment with clear errors; production mode passes `check --deploy`; embedded mode really starts."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3y-x7Qp9vZr2LmN8bTc4WsY6hJd1FgK5aEu0iOo3RtUyVwXz-Qp9vZr2L"


def run_manage(*args: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_production_settings_pass_check_deploy_with_a_proper_secret_key():
    result = run_manage(
        "check", "--deploy", "--fail-level", "WARNING",
        env_extra={
            "DJANGO_SETTINGS_MODULE": "paintapp.settings_production",
            "SECRET_KEY": STRONG_KEY,
            "ALLOWED_HOSTS": "studio.example.org",
        },
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_with_the_development_key():
    result = run_manage(
        "check", env_extra={"DJANGO_SETTINGS_MODULE": "paintapp.settings_production", "SECRET_KEY": ""}
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_development_settings_warn_under_check_deploy():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env_extra={"DJANGO_SETTINGS_MODULE": "paintapp.settings"})
    assert result.returncode != 0


@pytest.mark.slow
def test_the_studio_migrates_and_runs_in_embedded_mode_without_any_service(tmp_path):
    env = {
        "DJANGO_SETTINGS_MODULE": "paintapp.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'studio.sqlite3'}",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}",
        "PAINTAPP_VAR_DIR": str(tmp_path),
    }
    migrated = run_manage("migrate", "--no-input", env_extra=env)
    assert migrated.returncode == 0, migrated.stderr
    banner = run_manage("demo_banner", env_extra=env)
    assert "database: sqlite (embedded); broker: sqlalchemy (embedded)" in banner.stdout
    journal = subprocess.run(
        ["python3", "-c", f"import sqlite3; print(sqlite3.connect('{tmp_path / 'studio.sqlite3'}').execute('PRAGMA journal_mode').fetchone()[0])"],
        capture_output=True, text=True,
    )
    assert journal.stdout.strip() == "wal"


def read_settings(*names: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    """Import the settings in a fresh interpreter with `env_extra` and print the named values."""
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "ALLOWED_HOSTS", "RENDER_SIZE", "LOG_LEVEL"}}
    env.update({"DJANGO_SETTINGS_MODULE": "paintapp.settings", **env_extra})
    code = "from django.conf import settings; " + "; ".join(f"print(repr(settings.{n}))" for n in names)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_settings_take_their_values_from_the_environment_and_blank_means_the_default():
    result = read_settings(
        "DEBUG", "ALLOWED_HOSTS", "RENDER_SIZE", "RENDER_CONCURRENCY",
        env_extra={"DEBUG": "off", "ALLOWED_HOSTS": "studio.example.org, localhost,,", "RENDER_SIZE": " 384 ",
                   "RENDER_CONCURRENCY": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:4] == ["False", "['studio.example.org', 'localhost']", "384", "2"]


@pytest.mark.parametrize(("name", "value"), [
    ("DEBUG", "banana"), ("RENDER_SIZE", "big"), ("RENDER_SIZE", "0"), ("RENDER_CONCURRENCY", "-1"), ("LOG_LEVEL", "loud"),
])
def test_a_bad_setting_stops_start_up_with_an_error_naming_the_variable(name, value):
    result = read_settings("DEBUG", env_extra={name: value})
    assert result.returncode != 0
    assert f'Environment variable "{name}" invalid' in result.stderr


def test_one_setting_chooses_object_storage_and_it_needs_a_bucket():
    chosen = read_settings("STORAGES['default']['BACKEND']", "STORAGES['default']['OPTIONS']['endpoint_url']",
                           env_extra={"PAINTAPP_STORAGE": "s3", "PAINTAPP_S3_BUCKET": "studio",
                                      "PAINTAPP_S3_ENDPOINT_URL": "http://minio:9000"})
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split("\n")[:2] == ["'storages.backends.s3.S3Storage'", "'http://minio:9000'"]
    assert read_settings("STORAGE", env_extra={}).stdout.strip() == "'local'"
    no_bucket = read_settings("STORAGE", env_extra={"PAINTAPP_STORAGE": "s3", "PAINTAPP_S3_BUCKET": ""})
    assert no_bucket.returncode != 0 and "PAINTAPP_STORAGE=s3 needs PAINTAPP_S3_BUCKET" in no_bucket.stderr
    wrong = read_settings("STORAGE", env_extra={"PAINTAPP_STORAGE": "nfs"})
    assert wrong.returncode != 0 and 'Environment variable "PAINTAPP_STORAGE" invalid' in wrong.stderr
