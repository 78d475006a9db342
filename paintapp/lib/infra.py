"""Which database and broker the studio runs on.

Explicit URLs (DATABASE_URL, CELERY_BROKER_URL) always win. Without them the studio
looks for the local services the README describes (PostgreSQL on 127.0.0.1:5432, Redis on
127.0.0.1:6379) and, when they are not reachable, falls back to an embedded mode that needs
no server at all: a SQLite file in WAL mode and kombu's SQLAlchemy transport on SQLite.
No Django imports: settings.py and the workers' start-up both use this.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

LOCAL_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/paintapp"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _url_reachable(url: str) -> bool:
    parsed = urlparse(url)
    return port_open(parsed.hostname or "127.0.0.1", parsed.port or 0)


@dataclass(frozen=True)
class ServiceMode:
    database_url: str
    broker_url: str
    result_backend: str
    database_mode: str  # "postgresql" | "sqlite (embedded)" | other engine name
    broker_mode: str  # "redis" | "sqlalchemy (embedded)" | other transport name

    @property
    def embedded(self) -> bool:
        return "embedded" in self.database_mode or "embedded" in self.broker_mode

    def describe(self) -> str:
        return f"database: {self.database_mode}; broker: {self.broker_mode}"


def resolve_services(env: dict[str, str], var_dir: Path) -> ServiceMode:
    """Pick the database and broker from the environment, probing local services once."""
    database_url = env.get("DATABASE_URL", "").strip()
    if not database_url:
        if _url_reachable(LOCAL_POSTGRES_URL):
            database_url = LOCAL_POSTGRES_URL
        else:
            database_url = f"sqlite:///{var_dir / 'studio.sqlite3'}"
    scheme = urlparse(database_url).scheme
    if scheme.startswith("postgres"):
        database_mode = "postgresql"
    elif scheme == "sqlite":
        database_mode = "sqlite (embedded)"
    else:
        database_mode = scheme

    broker_url = env.get("CELERY_BROKER_URL", "").strip()
    if not broker_url:
        if _url_reachable(LOCAL_REDIS_URL):
            broker_url = LOCAL_REDIS_URL
        else:
            broker_url = f"sqla+sqlite:///{var_dir / 'broker.sqlite3'}"
    broker_scheme = urlparse(broker_url).scheme
    if broker_scheme.startswith("redis") or broker_scheme == "rediss":
        broker_mode = "redis"
        default_backend = _redis_db(broker_url, 1)
    elif broker_scheme.startswith("sqla"):
        broker_mode = "sqlalchemy (embedded)"
        default_backend = f"db+sqlite:///{var_dir / 'results.sqlite3'}"
    else:
        broker_mode = broker_scheme
        default_backend = "rpc://"
    result_backend = env.get("CELERY_RESULT_BACKEND", "").strip() or default_backend
    return ServiceMode(database_url, broker_url, result_backend, database_mode, broker_mode)


def _redis_db(url: str, db: int) -> str:
    """The same Redis server with another database number (results apart from tasks)."""
    parsed = urlparse(url)
    return parsed._replace(path=f"/{db}").geturl()
