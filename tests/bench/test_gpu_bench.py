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
                      "tesserocr", "tenacity", "openai", "boto3", "openenv", "krippendorff", "whitenoise",
                      "wandb", "trackio")  # the trackers: TRL imports them whenever they are installed


def bench_run(*arguments: str, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/gpu/run.py", *arguments], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def options(**changed) -> SimpleNamespace:
    return SimpleNamespace(**{"work": "/tmp/w", "bundle": "/tmp/b", "cpu_smoke": False, "vllm": False,
                              "with_unfolded": False, "phases": [], "limit": [], "out": "/tmp/o",
                              "command_s": bench.COMMAND_S, **changed})


def test_the_dry_run_prints_a_plan_that_fits_one_device_command_and_touches_nothing(tmp_path):
    done = bench_run("--dry-run", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"),
                     "--bundle", str(tmp_path / "no-bundle"))
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    assert "one GPU; dry run: nothing is installed, imported or made" in plan
    phases = bench.plan(options())
    for phase in phases:
        assert f"\n  {phase.name:<20} " in plan, phase.name
    assert "generate-unfolded" not in plan  # the baseline is measured: --with-unfolded adds it
    total = bench.planned_s(phases)
    assert f"= {total} s, within the {bench.COMMAND_S} s of one device command" in plan
    assert "continuous-batching, last, also takes what the phases before it leave" in plan
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


def test_the_whole_plan_fits_the_command_with_a_margin_over_every_measured_time():
    """One device command may run 600 s: the plan's limits and run.py's own seconds fit the 560 s it
    asks for, and each phase measured on the H200 has at least 20% over its time for its steps."""
    assert bench.COMMAND_S + 30 <= 600
    for variant in (options(), options(cpu_smoke=True)):
        phases = bench.plan(variant)
        assert bench.planned_s(phases) <= bench.COMMAND_S
        for phase in phases:
            expected = bench.expected_s(phase)
            assert expected is None or phase.limit_s >= 1.2 * expected, (phase.name, phase.limit_s, expected)
            # a phase's ~21 s of imports and its first step are in its limit, not only its steps
            assert phase.kind not in ("preflight", "grpo", "hpsv3") or phase.limit_s >= 40, phase.name
        grpo = [p for p in phases if p.kind == "grpo"]
        assert all(p.spec["steps"] >= 2 for p in grpo)  # a warm step after the first: the figures are of those
        unmeasured = [p.name for p in phases if bench.expected_s(p) is None]
        assert unmeasured == ["continuous-batching"] and phases[-1].rest  # last: it takes what is left
    # fewer steps than were measured take a measured step's seconds off
    compiled = next(p for p in bench.plan(options()) if p.name == "compiled")
    wall, steps, step_s = bench.MEASURED["compiled"]
    assert bench.expected_s(compiled) == round(wall - (steps - compiled.spec["steps"]) * step_s, 1)


def test_the_plan_takes_phases_other_limits_the_unfolded_baseline_and_vllm():
    chosen = bench.plan(options(vllm=True, phases=["compiled,hpsv3"], limit=["compiled=200"]))
    assert [(p.name, p.limit_s) for p in chosen] == [  # the 4B model comes with a phase that needs it
        ("install", 15), ("preflight", 40), ("make-model", 45), ("compiled", 200), ("hpsv3", 50)]
    painter = bench.plan(options(phases=["tiny-painter"]))
    assert [p.name for p in painter] == ["install", "preflight", "tiny-painter"]  # carried: no model to make
    everything = bench.plan(options(vllm=True, with_unfolded=True))
    names = [p.name for p in everything]
    assert names.index("generate-unfolded") < names.index("generate") < names.index("compiled")
    assert names.index("compiled") < names.index("vllm-colocate") and names[-1] == "continuous-batching"
    assert bench.planned_s(everything) > bench.COMMAND_S  # and the dry run says so, and how to split it
    smoke = bench.plan(options(cpu_smoke=True))
    assert {p.spec.get("shape") for p in smoke} >= {"tiny"} and all(p.spec.get("completion", 16) >= 16 for p in smoke)
    with pytest.raises(SystemExit, match="no such phase: nope"):
        bench.plan(options(phases=["nope"]))


def test_a_phase_is_cut_to_what_is_left_of_the_command_and_the_last_takes_the_rest():
    own = bench.Phase("compiled", "grpo", 120, "")
    rest = bench.Phase("continuous-batching", "grpo", 150, "", rest=True)
    assert bench.phase_limit(own, 500, last=False) == 120
    assert bench.phase_limit(own, 100, last=False) == 100 - bench.LAST_S  # the last report keeps its seconds
    assert bench.phase_limit(own, 5, last=False) is None  # not started
    assert bench.phase_limit(rest, 300, last=True) == 300 - bench.LAST_S  # more than its own, what is left
    assert bench.phase_limit(rest, 300, last=False) == 150  # takes the rest only as the last phase


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


def test_a_phase_past_its_limit_is_killed_with_its_process_group_and_reported_with_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    stuck = tmp_path / "phases.py"
    stuck.write_text("import subprocess, time\nsubprocess.Popen(['sleep', '317'])\n"
                     "for i in range(60):\n    print(f'line {i}')\n"
                     "print('[  21.0 s] step 1 of 2 begins', flush=True)\ntime.sleep(317)\n")
    phase = bench.Phase("hangs", "grpo", 2, "a phase that never ends")
    result = bench.run_phase(phase, dict(os.environ), script=stuck)
    assert result["error"].startswith("killed at its 2 s limit") and 2 <= result["seconds"] < 10
    assert result["error"].endswith("its last line: [  21.0 s] step 1 of 2 begins")  # how far it got
    tail = result["tail"].splitlines()
    assert len(tail) == bench.TAIL_LINES and tail[-1].endswith("begins") and "line 59" in tail and "line 5" not in tail
    leftover = subprocess.run(["pgrep", "-f", "sleep 317"], capture_output=True, text=True).stdout.split()
    assert not leftover  # the phase's children died with it
    table = bench.report([result], smoke=False)  # the report's markdown keeps the tail too (and the json: result)
    assert "| hangs | killed at its 2 s limit" in table and f"### hangs: the last lines it printed (up to {bench.TAIL_LINES})" in table
    assert "line 59\n[  21.0 s] step 1 of 2 begins\n````" in table


def test_a_phase_cut_by_the_command_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    stuck = tmp_path / "phases.py"
    stuck.write_text("import time\ntime.sleep(317)\n")
    result = bench.run_phase(bench.Phase("long", "grpo", 120, ""), dict(os.environ), script=stuck, limit_s=1)
    assert result["error"] == ("killed at its 1 s limit, cut from its own 120 s to what was left of the command; "
                               "its last line: no output") and result["tail"] == "no output"


def test_a_phase_that_fails_reports_its_last_line_and_keeps_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    failing = tmp_path / "phases.py"
    failing.write_text("print('loading')\nraise SystemExit('CUDA error: out of memory')\n")
    result = bench.run_phase(bench.Phase("fails", "grpo", 30, "a phase that fails"), dict(os.environ), script=failing)
    assert result["error"] == "exited 1: CUDA error: out of memory"
    assert result["tail"] == "loading\nCUDA error: out of memory"


def test_a_phase_that_prints_its_result_and_hangs_on_exit_keeps_its_result(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gpu_used_mib", lambda: None)
    hangs = tmp_path / "phases.py"
    hangs.write_text("import time\nprint('RESULT {\"tokens_per_s\": 5.0}', flush=True)\ntime.sleep(317)\n")
    result = bench.run_phase(bench.Phase("exit", "grpo", 2, ""), dict(os.environ), script=hangs)
    assert result["tokens_per_s"] == 5.0 and "error" not in result and "exit hung" in result["note"]


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
    done = bench_run("--cpu-smoke", "--with-unfolded", "--bundle", str(bundle), "--work", str(tmp_path / "work"),
                     "--out", str(out), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = {r["phase"]: r for r in json.loads((out / "gpu-bench.json").read_text())}
    assert [name for name, r in results.items() if "error" in r] == [], {n: r.get("tail") for n, r in results.items()}
    assert results["make-model"]["prompt_tokens"] > 500  # the studio's whole system prompt, word by word
    for name in ("generate-unfolded", "generate", "compiled", "continuous-batching", "tiny-painter"):
        phase = results[name]
        assert len(phase["steps"]) == bench.GRPO_STEPS and phase["tokens_per_s"] > 0 and phase["budget_gib"] > 1.0, name
        assert phase["step_s"] >= phase["generation_s"] > 0 and phase["warmup_s"] is not None
    assert results["hpsv3"]["per_painting_s"] > 0 and results["hpsv3"]["budget_gib"] == 17.0
    table = (out / "gpu-bench.md").read_text()
    assert "| compiled | 8 × 64 |" in table and "| hpsv3 | load " in table
    assert f"s of the {bench.COMMAND_S} s command: install " in table and "### " not in table  # no tails: none failed
    again = bench_run("--cpu-smoke", "--phases", "generate", "--bundle", str(bundle), "--work",
                      str(tmp_path / "work"), "--out", str(out), timeout=300)  # a second command in the same work
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    results = {r["phase"]: r for r in json.loads((out / "gpu-bench.json").read_text())}
    assert list(results) == ["install", "preflight", "make-model", "generate"]
    assert "made by an earlier command" in results["make-model"]["already"]  # not made again
    assert results["generate"]["tokens_per_s"] > 0


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
