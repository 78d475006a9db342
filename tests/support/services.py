"""Private service processes for fault tests, on free ports, that a test may stop and start
again (never the machine's Redis or PostgreSQL, which others use).

- RedisServer: persistence as in docker/compose.yaml (`--appendonly yes`), so a restart
  reloads the queues, the unacknowledged messages and the results as a production one does.
- PostgresServer: a cluster of its own (initdb in a temporary folder). PostgreSQL refuses
  to run as root, so as root it runs as the `postgres` user.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dj_database_url
import psycopg
import redis
from django.core.management import call_command
from django.db import connections

from paintapp.celery import app
from tests.support.processes import free_port

REDIS_SERVER = "/usr/bin/redis-server"
POSTGRES_BIN = Path(os.environ.get("PAINTAPP_TEST_POSTGRES_BIN", "/usr/local/bin"))


@dataclass
class RedisServer:
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, db=db, socket_timeout=2)

    def start(self, ready_timeout: float = 10.0) -> RedisServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "redis.log", "ab")
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--save", "", "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}; see {self.folder / 'redis.log'}")
            try:
                if self.client().ping():
                    return self
            except redis.ConnectionError:
                time.sleep(0.05)
        raise TimeoutError(f"redis-server on port {self.port} did not answer within {ready_timeout}s")

    def stop(self) -> None:
        """SIGTERM: Redis closes every client connection, flushes its append-only file and exits."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def restart(self, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)  # the outage itself: how long clients find nothing listening
        self.start()


@dataclass
class PostgresServer:
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="paintapp-pg-")))
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, program: str, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_postgres, str(POSTGRES_BIN / program), *args], check=True, capture_output=True,
                       timeout=60)

    def start(self) -> PostgresServer:
        if not self.data.exists():
            if os.geteuid() == 0:
                shutil.chown(self.folder, user="postgres")
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "--no-instructions")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "postgres.log"), "-w", "-o",
                  f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off", "start")
        return self

    def stop(self) -> None:
        """A fast shutdown, as `systemctl restart postgresql` does: every client connection is
        terminated and new ones are refused until the server is back."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def _forget_subscriptions(backend) -> None:
    """The dropped backend's result subscriptions, closed and forgotten: a task result of the
    old URLs collected later (AsyncResult.__del__ unsubscribes) would otherwise retry its
    stopped Redis for 20 s in whichever thread the collector ran, e.g. the live server's
    serving a later test's page."""
    consumer = getattr(backend, "result_consumer", None)
    if consumer is not None and hasattr(consumer, "subscribed_to"):
        consumer.stop()
        consumer._pubsub = None
        consumer.subscribed_to.clear()


@contextmanager
def celery_pointed_at(broker_url: str, result_url: str) -> Iterator[None]:
    """This process's Celery app (task sends, worker pings) on another broker for a while.

    An app is not meant to move: it keeps the connection and producer pools and the result
    backend it made for the old URLs. They are dropped on the way in and out (the pools as
    Celery drops them after a fork; the backend, which a sent task subscribes through, too).
    """
    saved = app.conf.broker_url, app.conf.result_backend

    def point(broker: str, result: str) -> None:
        app.conf.update(broker_url=broker, result_backend=result)
        app._after_fork()
        app._backend_cache = None
        app._local = threading.local()

    point(broker_url, result_url)
    try:
        yield
    finally:
        _forget_subscriptions(app._backend)
        point(*saved)


@contextmanager
def django_database_at(url: str) -> Iterator[None]:
    """This process's default database on another server for a while: created there and
    migrated (a few seconds), then the test's own database again."""
    target = dj_database_url.parse(url)
    with psycopg.connect(host=target["HOST"], port=target["PORT"], user=target["USER"], dbname="postgres",
                         autocommit=True) as admin:
        admin.execute(f'create database "{target["NAME"]}"')
    connection = connections["default"]
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update({key: target[key] for key in ("NAME", "HOST", "PORT", "USER", "PASSWORD")})
    try:
        call_command("migrate", verbosity=0)
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
