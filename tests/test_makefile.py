"""Makefile targets whose command lines carry a decision (`make -n` prints them; nothing runs)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def planned(*arguments: str, **env: str) -> str:
    done = subprocess.run(["make", "-n", *arguments], cwd=REPO, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_trls_vllm_server_listens_on_localhost_on_a_gpu_of_its_own_unless_told():
    default = planned("trl-vllm-server", "MODEL=Qwen/Qwen3-4B")
    assert "--host ${VLLM_SERVER_HOST:-127.0.0.1}" in default and "CUDA_VISIBLE_DEVICES=${VLLM_GPUS:-1}" in default
    assert "--max_model_len ${VLLM_MAX_MODEL_LEN:-20480}" in default
    assert "--tensor_parallel_size ${VLLM_TENSOR_PARALLEL_SIZE:-1}" in default


def test_the_train_worker_takes_a_fresh_process_for_every_task():
    assert "--max-tasks-per-child=1" in planned("worker-train")
    assert "--max-tasks-per-child=1" in (REPO / "Procfile").read_text().split("train:", 1)[1].splitlines()[0]


def test_the_gpu_score_worker_is_one_process_on_its_gpu_for_the_gpu_queue():
    line = planned("worker-score-gpu", "GPU=2")
    assert "CUDA_VISIBLE_DEVICES=2" in line and "-Q ${PAINTAPP_GPU_SCORE_QUEUE:-score-gpu} -c 1" in line
