"""Makefile targets whose command lines carry a decision (`make -n` prints them; nothing runs)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def planned(*arguments: str, **env: str) -> str:
    done = subprocess.run(["make", "-n", *arguments], cwd=REPO, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def command_line(target: str, program: str) -> str:
    """The line of `make -n target` that runs `program` (a make run from make adds
    "Entering directory" lines)."""
    return next(line for line in planned(target).splitlines() if program in line)


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


# Blocks of a training step's sizes (logits, gradients), two alive at a time, as page faults.
FAULTS_PROGRAM = """
import resource
sizes = [3 << 20, 12 << 20, 20 << 20, 6 << 20, 30 << 20, 9 << 20]
held, before = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(300):
    held.append(bytearray(sizes[i % len(sizes)]))
    if len(held) > 2:
        held.pop(0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _page_faults(env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-c", FAULTS_PROGRAM], capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}, **env})
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_the_suite_and_the_train_worker_reuse_freed_blocks_instead_of_faulting_in_fresh_pages():
    lines = [command_line("test", "-m pytest"), command_line("test-fast", "-m pytest"),
             command_line("worker-train", "celery")]
    tunables = [dict(word.split("=", 1) for word in line.split() if word.startswith("MALLOC_")) for line in lines]
    assert tunables[0] and tunables[0] == tunables[1] == tunables[2]
    # glibc honours them: without, every freed block over its thresholds goes back to the kernel
    assert _page_faults(tunables[0]) * 10 < _page_faults({})


def test_the_suite_writes_bytecode_where_the_machines_environment_says_not_to():
    line = command_line("test", "-m pytest")
    assignments = dict(word.split("=", 1) for word in line.split() if "=" in word and word.split("=", 1)[0].isupper())
    done = subprocess.run([sys.executable, "-c", "import sys; print(sys.dont_write_bytecode)"], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **assignments})
    assert done.stdout.strip() == "False"
