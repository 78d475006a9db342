"""Which database and broker the studio picks from the environment."""
from __future__ import annotations

import socket

import pytest

from paintapp.lib import infra
from paintapp.lib.infra import resolve_services


@pytest.fixture
def no_local_services(monkeypatch):
    """Pretend nothing listens on the default ports by probing a port that is surely closed."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    monkeypatch.setattr(infra, "LOCAL_POSTGRES_URL", f"postgres://postgres@127.0.0.1:{port}/paintapp")
    monkeypatch.setattr(infra, "LOCAL_REDIS_URL", f"redis://127.0.0.1:{port}/0")


def test_it_uses_explicit_urls_when_given(tmp_path):
    mode = resolve_services(
        {"DATABASE_URL": "postgres://u@db:5432/x", "CELERY_BROKER_URL": "redis://broker:6379/3"}, tmp_path
    )
    assert mode.database_mode == "postgresql"
    assert mode.broker_mode == "redis"
    assert mode.result_backend == "redis://broker:6379/1"
    assert not mode.embedded


def test_it_finds_the_local_postgresql_and_redis_this_machine_runs(tmp_path):
    mode = resolve_services({}, tmp_path)
    assert mode.database_url == infra.LOCAL_POSTGRES_URL
    assert mode.broker_url == infra.LOCAL_REDIS_URL
    assert mode.describe() == "database: postgresql; broker: redis"


def test_it_falls_back_to_embedded_sqlite_and_sqlalchemy_broker_without_services(tmp_path, no_local_services):
    mode = resolve_services({}, tmp_path)
    assert mode.database_url == f"sqlite:///{tmp_path / 'studio.sqlite3'}"
    assert mode.broker_url.startswith("sqla+sqlite:///")
    assert mode.result_backend.startswith("db+sqlite:///")
    assert mode.embedded
    assert "embedded" in mode.describe()


def test_an_explicit_result_backend_wins(tmp_path):
    mode = resolve_services({"CELERY_RESULT_BACKEND": "rpc://", "CELERY_BROKER_URL": "redis://x:1/0"}, tmp_path)
    assert mode.result_backend == "rpc://"
