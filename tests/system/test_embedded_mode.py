"""With no PostgreSQL and no Redis, workers still run and the System page still sees them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.support.workers import REPO

STATUS_SCRIPT = (
    "import json; from system.selectors import system_status; from paintapp.lib.workers import answering_queues; "
    "s = system_status(); print(json.dumps({'source': s.liveness_source, 'alive': {q.name: q.alive for q in s.queues}, "
    "'answering': sorted(answering_queues())}))"
)


def test_an_embedded_worker_shows_alive_by_heartbeat_and_dead_once_killed(embedded_env, tmp_path):
    env = embedded_env
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "paintapp", "worker", "-Q", "render", "-c", "1", "-n", "emb@test"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )

    def status() -> dict:
        out = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", STATUS_SCRIPT],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "heartbeats" / "emb@test.json").exists():
            assert time.monotonic() < deadline, "the embedded worker never wrote a heartbeat"
            time.sleep(0.5)
        alive = status()
        assert alive == {"source": "heartbeat", "alive": {"train": False, "render": True, "score": False},
                         "answering": ["render"]}  # what a launch and a waiting run ask
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
    time.sleep(7)  # a heartbeat older than three intervals counts as dead
    after = status()
    assert after["alive"]["render"] is False and after["answering"] == []
