"""What several benches share: a PostgreSQL database of their own, and stopping the Celery
workers they started (bench/ is each script's folder, so they import this as `support`)."""
from __future__ import annotations

import os
import signal
import subprocess


def ensure_database(name: str) -> None:
    """Create the bench's own database on the local PostgreSQL unless it exists."""
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def stop_workers(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each worker's process group (a warm shutdown), SIGKILL what is left after 30 s."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
