"""bench/gpu/: the plan it prints without a GPU, what prepare.py would carry, the phase runner's
time limit, and every phase run for real on this CPU with tiny shapes, importing only what a CUDA
torch image has beside the carried wheels (no Django, Celery, Playwright or the studio's other
services' clients)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.gpu import prepare  # noqa: E402
from bench.gpu import run as bench  # noqa: E402

# What the lent H200's image lacks of this project's requirements (the device tool's KINDS.md
# lists what it has): the phases must not import any of it.
NOT_ON_A_GPU_IMAGE = ("django", "celery", "kombu", "redis", "psycopg", "environs", "playwright", "tree_sitter",
                      "tesserocr", "tenacity", "openai", "boto3", "openenv", "krippendorff", "whitenoise")


def bench_run(*arguments: str, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/gpu/run.py", *arguments], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_the_dry_run_prints_the_plan_within_eight_minutes_and_touches_nothing(tmp_path):
    done = bench_run("--dry-run", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"),
                     "--bundle", str(tmp_path / "no-bundle"))
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    assert "one GPU; dry run: nothing is installed, imported or made" in plan
    for phase in ("install", "preflight", "make-model", "generate-unfolded", "generate", "compiled",
                  "continuous-batching", "tiny-painter", "hpsv3"):
        assert f"\n  {phase:<20} " in plan, phase
    assert "all phases             480s  (within the 480 s the bench is sized for)" in plan
    assert "run bench/gpu/prepare.py on a machine with PyPI first" in plan
    # the budget of each phase's run, from the launch budget's own arithmetic, and the targets
    assert "    compiled             8 x  1024 tokens:  13.7 GiB" in plan and "17 GiB assumed" in plan
    assert ">= 1,000 tokens/s" in plan and "<= 30 s" in plan and "within 15% of the budget" in plan
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()
    imported = subprocess.run(  # the plan imports no torch: it prints on any machine in a second
        [sys.executable, "-c", "import runpy, sys; sys.argv = ['run.py', '--dry-run']; "
         "runpy.run_path('bench/gpu/run.py', run_name='__main__'); print('TORCH', 'torch' in sys.modules)"],
        cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert "TORCH False" in imported


def test_the_plan_takes_a_vllm_phase_only_phases_and_other_limits():
    options = SimpleNamespace(work="/tmp/w", bundle="/tmp/b", cpu_smoke=False, vllm=True, only=["compiled", "hpsv3"],
                              limit=["compiled=200"], out="/tmp/o")
    assert [(p.name, p.limit_s) for p in bench.plan(options)] == [
        ("install", 25), ("preflight", 15), ("compiled", 200), ("hpsv3", 80)]
    everything = bench.plan(SimpleNamespace(**{**vars(options), "only": [], "limit": []}))
    assert "vllm-colocate" in [p.name for p in everything]
    smoke = bench.plan(SimpleNamespace(**{**vars(options), "cpu_smoke": True, "vllm": False, "only": [], "limit": []}))
    assert {p.spec.get("shape") for p in smoke} >= {"tiny"} and all(p.spec.get("completion", 16) >= 16 for p in smoke)


def test_prepare_carries_the_trainers_imports_at_this_projects_pins_and_not_the_torch_image():
    packages = prepare.closure()
    for name in ("trl", "transformers", "peft", "datasets", "accelerate", "tokenizers", "huggingface-hub"):
        assert name in packages, name
    assert packages["trl"] == "1.16.0" and packages["transformers"] == "5.24.0" and packages["peft"] == "0.21.2"
    assert not {"torch", "numpy", "pyarrow", "pandas", "triton"} & set(packages)
    assert not any(name.startswith("nvidia-") for name in packages)
    assert "numpy" in prepare.closure(keep={"numpy"})


def test_prepares_dry_run_says_what_it_would_fetch_and_copies_nothing(tmp_path):
    done = subprocess.run([sys.executable, "bench/gpu/prepare.py", "--dry-run", "--out", str(tmp_path / "bundle"),
                           "--painter", str(tmp_path / "none")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "packages for CPython 3.12 on manylinux x86_64" in done.stdout and "trl==1.16.0" in done.stdout
    assert "tiny painter: not built here" in done.stdout and not (tmp_path / "bundle").exists()


def test_a_phase_past_its_limit_is_killed_with_its_process_group_and_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    stuck = tmp_path / "phases.py"
    stuck.write_text("import subprocess, time\nsubprocess.Popen(['sleep', '317'])\ntime.sleep(317)\n")
    phase = bench.Phase("hangs", "preflight", 2, "a phase that never ends")
    result = bench.run_phase(phase, dict(os.environ), script=stuck)
    assert result["error"] == "killed at its 2 s limit" and 2 <= result["seconds"] < 10
    leftover = subprocess.run(["pgrep", "-f", "sleep 317"], capture_output=True, text=True).stdout.split()
    assert not leftover  # the phase's children died with it


def test_a_phase_that_fails_reports_its_last_line_and_keeps_its_log(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    failing = tmp_path / "phases.py"
    failing.write_text("print('loading')\nraise SystemExit('CUDA error: out of memory')\n")
    result = bench.run_phase(bench.Phase("fails", "grpo", 30, "a phase that fails"), dict(os.environ), script=failing)
    assert result["error"] == "exited 1: CUDA error: out of memory" and "loading" in result["log"]


@pytest.mark.slow
def test_every_phase_runs_on_this_cpu_with_tiny_shapes_importing_only_what_a_gpu_image_has(tmp_path, tiny_model):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_model, bundle / "tiny-painter")  # the painter prepare.py would carry
    site = tmp_path / "work" / "site"  # first on every phase's path: its sitecustomize runs in each
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(  # refused to import, and not installed to whoever asks find_spec
        "import importlib.abc, importlib.util, sys\n"
        f"ABSENT = {set(NOT_ON_A_GPU_IMAGE)!r}\n"
        "class Absent(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ABSENT:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (not on a GPU image)', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "find_spec = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, package=None: (\n"
        "    None if name.split('.')[0] in ABSENT else find_spec(name, package))\n")
    out = tmp_path / "out"
    done = bench_run("--cpu-smoke", "--bundle", str(bundle), "--work", str(tmp_path / "work"), "--out", str(out),
                     timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = {r["phase"]: r for r in json.loads((out / "gpu-bench.json").read_text())}
    assert [name for name, r in results.items() if "error" in r] == [], {n: r.get("log") for n, r in results.items()}
    assert results["make-model"]["prompt_tokens"] > 500  # the studio's whole system prompt, word by word
    for name in ("generate-unfolded", "generate", "compiled", "continuous-batching", "tiny-painter"):
        phase = results[name]
        assert len(phase["steps"]) == 3 and phase["tokens_per_s"] > 0 and phase["budget_gib"] > 1.0, name
        assert phase["step_s"] >= phase["generation_s"] > 0 and phase["warmup_s"] is not None
    assert results["hpsv3"]["per_painting_s"] > 0 and results["hpsv3"]["budget_gib"] == 17.0
    table = (out / "gpu-bench.md").read_text()
    assert "| compiled | 8 × 64 |" in table and "| hpsv3 | load " in table


def test_the_gpu_image_check_refuses_what_the_image_lacks(tmp_path):
    """The sitecustomize above really refuses: a phase that imports Django fails under it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import importlib.abc, sys\n"
        "class Absent(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'django':\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Absent())\n")
    done = subprocess.run([sys.executable, "-c", "import django"], env={**os.environ, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr
