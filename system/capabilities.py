"""What a worker process can do: queues, Chromium, GPUs, vLLM. Used by the System page and
by a launch that generates with vLLM.

Runs inside Celery workers (as a remote-control command), so it must stay cheap and must
never initialise CUDA in the worker's parent process (forked children would inherit a
broken context): GPUs are listed through `nvidia-smi`, not torch.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import shutil
import subprocess


@functools.cache
def chromium_info(path: str) -> dict:
    resolved = path if os.path.isabs(path) else (shutil.which(path) or path)
    found = os.path.isfile(resolved) and os.access(resolved, os.X_OK)
    version = ""
    if found:
        try:
            out = subprocess.run([resolved, "--version"], capture_output=True, text=True, timeout=10)
            version = out.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            version = ""
    return {"path": resolved, "found": found, "version": version}


@functools.cache
def gpu_info() -> dict:
    smi = shutil.which("nvidia-smi")
    gpus: list[str] = []
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
            gpus = [line.strip() for line in out.stdout.splitlines() if line.strip().startswith("GPU")]
        except (OSError, subprocess.TimeoutExpired):
            gpus = []
    torch_build = _installed_version("torch")
    return {"gpus": gpus, "gpu_memory_mib": _gpu_memory_mib(smi) if gpus else [], "torch": torch_build,
            "cuda_build": bool(torch_build) and "+cpu" not in torch_build, "vllm": _installed_version("vllm")}


def _gpu_memory_mib(smi: str) -> list[int]:
    """Each GPU's total memory in MiB, in `nvidia-smi -L` order (what a launch's budget is checked against)."""
    try:
        out = subprocess.run([smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return [int(line.strip()) for line in out.stdout.splitlines() if line.strip().isdigit()]
    except (OSError, subprocess.TimeoutExpired):
        return []


def _installed_version(package: str) -> str:
    """The installed version of `package` ("" when it is not installed), read without importing it."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def capabilities(chromium_path: str) -> dict:
    return {
        "pid": os.getpid(),
        "host": platform.node(),
        "python": platform.python_version(),
        "chromium": chromium_info(chromium_path),
        **gpu_info(),
    }
