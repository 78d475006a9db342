"""bench/gpu_smoke.sh --dry-run prints its plan without fetching, starting or training anything."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dry_run(*arguments: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bench/gpu_smoke.sh", "--dry-run", *arguments], cwd=REPO, capture_output=True, text=True,
                          timeout=30, env={**os.environ, **env})


def test_the_dry_run_prints_the_plan_and_touches_nothing():
    before = set(Path("/tmp").glob("paintapp-gpu-smoke.*"))
    done = dry_run()
    assert done.returncode == 0, done.stderr
    assert "Qwen/Qwen3-0.6B, 2 GRPO steps per backend, recipe judge-led" in done.stdout
    assert "a fresh child per run: --max-tasks-per-child=1" in done.stdout
    assert "GPU memory is read before each" in done.stdout
    assert set(Path("/tmp").glob("paintapp-gpu-smoke.*")) == before  # no work folder, no database


def test_the_plan_follows_its_arguments_and_environment():
    done = dry_run("Qwen/Qwen3-4B", "3", BACKENDS="generate vllm-colocate", RECIPE="hps-led",
                   PAINTAPP_VLM_BASE_URL="http://judge:8001/v1")
    assert "Qwen/Qwen3-4B, 3 GRPO steps per backend, recipe hps-led" in done.stdout
    assert "backends    generate vllm-colocate: one run each" in done.stdout
    assert "judge       http://judge:8001/v1" in done.stdout and "(judge served at http://judge:8001/v1)" in done.stdout
