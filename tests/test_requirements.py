"""requirements.txt and requirements-gpu.txt: one set of pins, and a GPU install that keeps
torch's CUDA runtime (the resolution itself needs PyPI: see README, "On a GPU box")."""
from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def requirements(name: str) -> dict[str, Requirement]:
    lines = (REPO / name).read_text().splitlines()
    return {
        (req := Requirement(line.split("#")[0].strip())).name.lower(): req
        for line in lines
        if line.strip() and not line.lstrip().startswith(("#", "-"))
    }


def test_the_gpu_requirements_are_the_cpu_ones_plus_cuda_torch_torchvision_vllm_and_deepspeed_all_pinned():
    cpu, gpu = requirements("requirements.txt"), requirements("requirements-gpu.txt")
    assert "-r requirements.txt" in (REPO / "requirements-gpu.txt").read_text().splitlines()
    assert set(gpu) == {"torch", "torchvision", "vllm", "deepspeed", "einops", "hjson", "msgpack", "ninja", "py-cpuinfo"}
    assert all(len(req.specifier) == 1 and next(iter(req.specifier)).operator in ("==", "===") for req in gpu.values())
    # `===` is the version without a local label: never the installed `+cpu` build.
    (torch_cpu,), (torch_gpu,) = cpu["torch"].specifier, gpu["torch"].specifier
    assert (torch_cpu.operator, torch_gpu.operator) == ("==", "===")
    assert torch_gpu.version == torch_cpu.version
    assert not torch_gpu.contains(f"{torch_cpu.version}+cpu") and torch_gpu.contains(torch_cpu.version)


def test_the_pinned_vllm_is_one_the_installed_trl_accepts():
    (pin,) = requirements("requirements-gpu.txt")["vllm"].specifier
    accepted = [
        req.specifier for text in importlib.metadata.requires("trl") or []
        if (req := Requirement(text)).name == "vllm" and req.marker and req.marker.evaluate({"extra": "vllm"})
    ]
    assert pin.operator == "==" and accepted and accepted[0].contains(pin.version)


def test_no_install_recipe_reinstalls_torch_without_its_dependencies():
    for name in ("Makefile", "docker/Dockerfile", "README.md"):
        for line in (REPO / name).read_text().splitlines():
            assert not ("torch" in line and "--no-deps" in line), f"{name}: {line.strip()}"


def test_make_setup_gpu_installs_the_gpu_requirements_then_the_project():
    recipe = re.search(r"^\$\(VENV\)/\.installed-gpu:.*?(?=^\S)", (REPO / "Makefile").read_text(), re.M | re.S)
    assert recipe and "install_venv,requirements-gpu.txt" in recipe.group(0)
    assert re.search(r"^setup-gpu: .*\$\(VENV\)/\.installed-gpu", (REPO / "Makefile").read_text(), re.M)
