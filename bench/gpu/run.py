"""The GPU bench: the trainer's generation backends, a GRPO step's split and peak memory against the
launch budget, and the HPSv3 scorer, on any GPU box, without internet, in under 8 minutes.

    python3 bench/gpu/run.py --dry-run          # the plan, on any machine (nothing is imported or made)
    python3 bench/gpu/run.py                    # on the GPU box, with the box's own python3 and torch
    python3 bench/gpu/run.py --cpu-smoke        # every phase with tiny shapes on a CPU (what the tests run)

Prepare first, on a machine with PyPI (bench/gpu/prepare.py): it puts the wheels the trainer
imports (for the GPU box's Python) and the tests' tiny painter in var/gpu-bench/, which travels
with the repository; this installs the wheels into a folder of its own (`pip --no-index
--target`) and puts it first on the phases' path, so the box's torch stays and everything else
is the studio's pinned versions.

Each phase runs in its own process with its own time limit (the limits add up to 8 minutes): a
phase that hangs is killed and reported, and the next one runs. While a phase runs, nvidia-smi is
read every half second for the peak. It writes gpu-bench.json and gpu-bench.md to --out (default:
$OUT where set, else bench/out/gpu) and prints the table with the issue's targets: the 4B shape
at G = 8 generating at >= 1,000 tokens/s through the trainer, a step of 8 x 1,024 tokens in <= 30 s,
peak memory within 15% of the budget.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from training.grpo.backends import PREALLOCATED_CACHE  # noqa: E402 - light: the dry run imports no torch
from training.grpo.config import RunArguments  # noqa: E402
from training.memory import HPSV3_GIB, PROMPT_TOKENS, ModelShape, run_budget  # noqa: E402
from training.presets import QWEN3_4B_CONFIG, QWEN3_4B_PARAMETERS  # noqa: E402

BUNDLE = REPO / "var" / "gpu-bench"
PHASES_SCRIPT = REPO / "bench" / "gpu" / "phases.py"
TOTAL_LIMIT_S = 480
STUDIO_PROMPT_TOKENS = 1100  # the studio's chat in Qwen's tokenizer, ~4.6K characters (the dry run's estimate)
TARGETS = {"tokens_per_s": 1000.0, "step_s": 30.0, "memory_ratio": 0.15}


@dataclass
class Phase:
    name: str
    kind: str  # install | preflight | make-model | grpo | hpsv3
    limit_s: int
    what: str
    spec: dict[str, Any] = field(default_factory=dict)


def plan(options) -> list[Phase]:
    work = Path(options.work)
    smoke = options.cpu_smoke
    shape, hpsv3_shape = ("tiny", "tiny") if smoke else ("qwen3-4b", "qwen2-vl-7b")
    model_dir = str(work / f"model-{shape}")
    painter = Path(options.bundle) / "tiny-painter"
    long, short = (64, 32) if smoke else (1024, 128)
    phases = [
        Phase("install", "install", 25, "the bundle's wheels into a folder of their own, first on the phases' path"),
        Phase("preflight", "preflight", 15, "the versions the trainer imports, the GPU, the disk", {"work": str(work)}),
        Phase("make-model", "make-model", 45, f"a {shape}-shaped policy with random weights, made on the device, saved",
              {"shape": shape, "model_dir": model_dir}),
        Phase("generate-unfolded", "grpo", 45, "TRL's own generate with the LoRA unfolded (the old path), 3 steps",
              {"backend": "generate-unfolded", "completion": short // 2, "steps": 3, "model_dir": model_dir}),
        Phase("generate", "grpo", 45, "transformers' generate, the adapter folded in, 3 steps",
              {"backend": "generate", "completion": short, "steps": 3, "model_dir": model_dir}),
        Phase("compiled", "grpo", 105, "static cache sized from the run, compiled decode step, folded, 3 steps",
              {"backend": "compiled", "completion": long, "steps": 3, "model_dir": model_dir}),
        Phase("continuous-batching", "grpo", 80, "paged cache sized from the run, CUDA graphs, folded, 3 steps",
              {"backend": "continuous-batching", "completion": long, "steps": 3, "model_dir": model_dir}),
        Phase("tiny-painter", "grpo", 40, "the tests' tiny painter (carried in the bundle), compiled, 3 steps",
              {"backend": "compiled", "completion": long // 2, "steps": 3, "model_dir": str(painter)}),
        Phase("hpsv3", "hpsv3", 80, f"HPSv3 on a {hpsv3_shape}-shaped random base: load, seconds a painting, memory",
              {"shape": hpsv3_shape, "paintings": 8 if not smoke else 3, "work": str(work)}),
    ]
    if options.vllm:
        phases.insert(-2, Phase("vllm-colocate", "grpo", 90, "vLLM in the trainer's process (needs vllm on the box)",
                                {"backend": "vllm-colocate", "completion": long, "steps": 3, "model_dir": model_dir}))
    if options.only:
        phases = [p for p in phases if p.name in options.only or p.kind in ("install", "preflight")]
    for assignment in options.limit:
        name, _, seconds = assignment.partition("=")
        for phase in phases:
            if phase.name == name:
                phase.limit_s = int(seconds)
    return phases


# --- the dry run -----------------------------------------------------------------------------

def bundle_state(bundle: Path) -> str:
    wheels = sorted((bundle / "wheels").glob("*.whl"))
    manifest = bundle / "manifest.json"
    if not wheels:
        return f"no wheels in {bundle}/wheels: run bench/gpu/prepare.py on a machine with PyPI first"
    size = sum(w.stat().st_size for w in wheels) / 1024**2
    python = json.loads(manifest.read_text()).get("python_version", "?") if manifest.exists() else "?"
    painter = "with" if (bundle / "tiny-painter" / "config.json").exists() else "WITHOUT"
    return f"{len(wheels)} wheels ({size:.0f} MiB) for Python {python}, {painter} the tests' tiny painter"


def dry_run(phases: list[Phase], options) -> str:
    lines = [f"GPU bench plan ({'CPU smoke, tiny shapes' if options.cpu_smoke else 'one GPU'}; dry run: nothing is "
             "installed, imported or made)", f"  bundle   {bundle_state(Path(options.bundle))}",
             f"  work     {options.work} (models and checkpoints; ~25 GB for the 4B policy and the 7B HPSv3)",
             f"  out      {options.out}", "", f"  {'phase':<20} {'limit':>6}  what"]
    for phase in phases:
        lines.append(f"  {phase.name:<20} {phase.limit_s:>5}s  {phase.what}")
    total = sum(p.limit_s for p in phases)
    lines += [f"  {'all phases':<20} {total:>5}s  ({'within' if total <= TOTAL_LIMIT_S else 'OVER'} the "
              f"{TOTAL_LIMIT_S} s the bench is sized for)", ""]
    if not options.cpu_smoke:
        shape = ModelShape.from_config(QWEN3_4B_CONFIG, parameters=QWEN3_4B_PARAMETERS, source="Qwen3-4B's config")
        lines.append(f"  budget (training/memory.py) for each GRPO phase: the prompt's ~{STUDIO_PROMPT_TOKENS:,} tokens, or "
                     f"the {PROMPT_TOKENS:,} a static or paged cache holds")
        for phase in phases:
            if phase.kind == "grpo" and phase.name != "tiny-painter":
                generation = "generate" if phase.spec["backend"] == "generate-unfolded" else phase.spec["backend"]
                args = RunArguments(generation=generation, max_completion_length=phase.spec["completion"])
                prompt = PROMPT_TOKENS if generation in PREALLOCATED_CACHE else STUDIO_PROMPT_TOKENS
                budget = run_budget(shape, args, prompt_tokens=prompt, gpu_gib=139.6)
                lines.append(f"    {phase.name:<20} 8 x {phase.spec['completion']:>5} tokens: {budget.total_gib:5.1f} GiB")
        lines.append(f"    {'hpsv3':<20} {HPSV3_GIB:g} GiB assumed by the launch budget")
        lines.append("")
    lines.append("  targets  4B at G = 8 >= 1,000 tokens/s through the trainer; a step of 8 x 1,024 tokens <= 30 s; "
                 "peak memory within 15% of the budget")
    return "\n".join(lines)


# --- running ----------------------------------------------------------------------------------

def gpu_used_mib() -> int | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        return sum(int(line) for line in out.split() if line.strip().isdigit())
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def install(bundle: Path, site: Path) -> dict[str, Any]:
    """The bundle's wheels into `site` (once per bundle: a marker names the manifest it came from)."""
    wheels = sorted((bundle / "wheels").glob("*.whl"))
    if not wheels:
        return {"skipped": f"no wheels in {bundle}/wheels: the box's own packages are used"}
    stamp = (bundle / "manifest.json").read_text() if (bundle / "manifest.json").exists() else str(len(wheels))
    marker = site / ".installed-from"
    if marker.exists() and marker.read_text() == stamp:
        return {"wheels": len(wheels), "already": True}
    shutil.rmtree(site, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--disable-pip-version-check", "--target", str(site), *map(str, wheels)], check=True)
    marker.write_text(stamp)
    return {"wheels": len(wheels), "seconds": round(time.perf_counter() - started, 1)}


def run_phase(phase: Phase, env: dict[str, str], *, script: Path = PHASES_SCRIPT) -> dict[str, Any]:
    """The phase in its own process group, killed at its limit; its RESULT line, or why there is none."""
    baseline = gpu_used_mib()
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, str(script), phase.kind, json.dumps(phase.spec)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    peak = baseline
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    killed = False
    while process.poll() is None:
        if time.monotonic() - started > phase.limit_s:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            killed = True
            break
        used = gpu_used_mib()
        if used is not None:
            peak = max(peak or 0, used)
        time.sleep(0.5)
    reader.join(timeout=5)
    seconds = round(time.monotonic() - started, 1)
    result: dict[str, Any] = {"phase": phase.name, "seconds": seconds, "limit_s": phase.limit_s}
    if baseline is not None and peak is not None:
        result["smi_peak_gib"] = round((peak - baseline) / 1024, 2)
    found = [line for line in lines if line.startswith("RESULT ")]
    if found:
        result |= json.loads(found[-1][len("RESULT "):])
    elif killed:
        result["error"] = f"killed at its {phase.limit_s} s limit"
    else:
        tail = [line.strip() for line in lines if line.strip()][-1:] or ["no output"]
        result["error"] = f"exited {process.returncode}: {tail[0][:300]}"
        result["log"] = "".join(lines[-40:])[-4000:]
    return result


def report(results: list[dict[str, Any]], *, smoke: bool) -> str:
    rows = ["| phase | completion | tokens/s | generate s | update s | step s | first-step warm-up s | peak GiB "
            "(nvidia-smi) | peak GiB (torch) | budget GiB | peak / budget |", "|" + "---|" * 11]
    verdicts = []
    for r in results:
        if "error" in r:
            rows.append(f"| {r['phase']} | {r['error'][:160]} |" + " |" * 9)
            continue
        if "tokens_per_s" in r:
            peak = r.get("smi_peak_gib") or r.get("torch_peak_reserved_gib")
            ratio = f"{peak / r['budget_gib']:.2f}" if peak else "–"
            rows.append(f"| {r['phase']} | 8 × {r['completion']:,} | {r['tokens_per_s']:,.0f} | {r['generation_s']} | "
                        f"{r['update_s']} | {r['step_s']} | {r.get('warmup_s')} | {r.get('smi_peak_gib', '–')} | "
                        f"{r.get('torch_peak_reserved_gib', '–')} | {r['budget_gib']} | {ratio} |")
            if r["phase"] in ("compiled", "continuous-batching", "vllm-colocate") and not smoke:
                verdicts.append(f"{r['phase']}: {r['tokens_per_s']:,.0f} tokens/s "
                                f"({'meets' if r['tokens_per_s'] >= TARGETS['tokens_per_s'] else 'misses'} 1,000); "
                                f"step {r['step_s']} s ({'meets' if r['step_s'] <= TARGETS['step_s'] else 'misses'} 30 s)"
                                + (f"; peak {peak} GiB vs budget {r['budget_gib']} GiB "
                                   f"({'within' if abs(peak / r['budget_gib'] - 1) <= TARGETS['memory_ratio'] else 'outside'}"
                                   " 15%)" if peak else ""))
        elif "per_painting_s" in r:
            peak = r.get("smi_peak_gib") or r.get("torch_peak_reserved_gib")
            ratio = f"{(peak + r['embedding_rows_missing_gib']) / r['budget_gib']:.2f}" if peak else "–"
            rows.append(f"| hpsv3 | load {r['load_s']} s, built {r['built_s']} s | {r['per_painting_s']} s a painting "
                        f"(first {r['first_s']} s) |  |  |  |  | {r.get('smi_peak_gib', '–')} "
                        f"(+{r['embedding_rows_missing_gib']} for the real vocabulary) | "
                        f"{r.get('torch_peak_reserved_gib', '–')} | {r['budget_gib']} | {ratio} |")
    rows = [row.replace("\n", " ") for row in rows]
    header = []
    for r in results:
        if r["phase"] == "preflight" and "versions" in r:
            header.append(f"{r.get('gpu', 'CPU')} ({r.get('gpu_gib', '–')} GiB), Python {r['python']}, " + ", ".join(
                f"{k} {v}" for k, v in r["versions"].items() if v))
    return "\n".join([*header, "", *rows, "", *verdicts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes, short completions, on a CPU")
    parser.add_argument("--bundle", default=str(BUNDLE), help="what prepare.py made (default var/gpu-bench)")
    parser.add_argument("--work", default="/tmp/gpu-bench", help="where models and checkpoints are made")
    parser.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "bench" / "out" / "gpu"))
    parser.add_argument("--only", action="append", default=[], help="a phase to run (repeat); default all")
    parser.add_argument("--limit", action="append", default=[], metavar="PHASE=SECONDS", help="another time limit")
    parser.add_argument("--vllm", action="store_true", help="add a vllm-colocate phase (the box has vllm)")
    options = parser.parse_args()
    phases = plan(options)
    print(dry_run(phases, options), flush=True)
    if options.dry_run:
        return
    work, out = Path(options.work), Path(options.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    site = work / "site"  # the bundle's wheels (a sitecustomize.py put there runs in every phase)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "PYTHONUNBUFFERED": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}
    results: list[dict[str, Any]] = []
    for phase in phases:
        print(f"\n== {phase.name} (limit {phase.limit_s} s): {phase.what}", flush=True)
        if phase.kind == "install":
            started = time.monotonic()
            try:
                result = {"phase": "install", **install(Path(options.bundle), site)}
            except subprocess.CalledProcessError as exc:
                result = {"phase": "install", "error": f"pip failed ({exc.returncode})"}
            result["seconds"] = round(time.monotonic() - started, 1)
        else:
            result = run_phase(phase, env)
        results.append(result)
        print(json.dumps(result), flush=True)
        (out / "gpu-bench.json").write_text(json.dumps(results, indent=2))
        if phase.kind == "preflight" and "error" in result:
            print("preflight failed: the trainer cannot run here; stopping", flush=True)
            break
    table = report(results, smoke=options.cpu_smoke)
    (out / "gpu-bench.md").write_text(table + "\n")
    print("\n" + table, flush=True)


if __name__ == "__main__":
    main()
