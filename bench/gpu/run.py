"""The GPU bench: the trainer's generation backends, a GRPO step's split and peak memory against the
launch budget, and the HPSv3 scorer, on any GPU box, without internet, in one device command of
560 s (the phases' limits, set from their times on an H200, add up to 540 s).

    python3 bench/gpu/run.py --dry-run          # the plan, on any machine (nothing is imported or made)
    python3 bench/gpu/run.py                    # on the GPU box, with the box's own python3 and torch
    python3 bench/gpu/run.py --phases continuous-batching   # some phases (install, preflight and the model too)
    python3 bench/gpu/run.py --cpu-smoke        # every phase with tiny shapes on a CPU (what the tests run)

Prepare first, on a machine with PyPI (bench/gpu/prepare.py): it puts the wheels the trainer
imports (for the GPU box's Python) and the tests' tiny painter in var/gpu-bench/, which travels
with the repository; this installs the wheels into a folder of their own (`pip --no-index
--target`) and puts it first on the phases' path, so the box's torch stays and everything else
is the studio's pinned versions.

Each phase runs in its own process with its own time limit: a phase that hangs is killed with its
children and reported with the last 40 lines it printed, and the next one runs. Each process
spends ~21 s importing torch, transformers and TRL before its first step, which the limits
include. The command's own time (--command-s, 560 s) bounds them all: a phase is cut to what is
left of it, and the last phase (continuous batching, the one not yet measured) takes whatever
the phases before it left. While a phase runs, nvidia-smi is read every half second for the
peak. It writes gpu-bench.json and gpu-bench.md to --out (default: $OUT where set, else
bench/out/gpu) after every phase, and prints the table with the issue's targets: the 4B shape at
G = 8 generating at >= 1,000 tokens/s through the trainer, a step of 8 x 1,024 tokens in <= 30 s,
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

from training.arguments import RunArguments  # noqa: E402
from training.memory import HPSV3_GIB, PROMPT_TOKENS, ModelShape, run_budget  # noqa: E402
from training.presets import QWEN3_4B_CONFIG, QWEN3_4B_PARAMETERS  # noqa: E402
from training.trainer.backends import PREALLOCATED_CACHE  # noqa: E402 - light: the dry run imports no torch

BUNDLE = REPO / "var" / "gpu-bench"
PHASES_SCRIPT = REPO / "bench" / "gpu" / "phases.py"
STARTED = time.monotonic()
COMMAND_S = 560  # one device command may run 600 s: 40 s left for its start and the copy back
OWN_S = 15  # run.py's own: its start, nvidia-smi between phases, writing the report after each
LAST_S = 5  # kept at the end of the command for the last report
MIN_PHASE_S = 10  # a phase left less than this of the command is not started
GRPO_STEPS = 2  # the figures are the steps after the first (here one), the first step's warm-up apart
TAIL_LINES = 40  # of a killed or failed phase's output, in the report
STUDIO_PROMPT_TOKENS = 1100  # the studio's chat in Qwen's tokenizer, ~4.6K characters (the dry run's estimate)
TARGETS = {"tokens_per_s": 1000.0, "step_s": 30.0, "memory_ratio": 0.15}

# Each phase run on its own on one H200, 2026-12-04 (docs/performance.md, "The GPU box"): the
# process's wall (~21 s of it importing torch, transformers and TRL from the carried wheels), the
# GRPO steps it ran, and the seconds of a step after the first. A phase's expected time for fewer
# steps takes those steps off; its limit below is that with the margin its comment states.
MEASURED: dict[str, tuple[float, int, float]] = {
    "install": (4.0, 0, 0.0),
    "preflight": (24.8, 0, 0.0),
    "make-model": (30.3, 0, 0.0),
    "generate-unfolded": (61.0, 3, 11.0),
    "generate": (70.0, 3, 12.2),
    "compiled": (109.0, 3, 22.9),  # its first step 41.5 s (18.6 s of it the decode step's compile)
    "tiny-painter": (36.0, 3, 2.0),
    "hpsv3": (38.7, 0, 0.0),
    # continuous-batching: not measured (killed at its 80 s limit with 3 steps to run)
    # vllm-colocate: not measured (the lent H200 has no vllm)
}


@dataclass
class Phase:
    name: str
    kind: str  # install | preflight | make-model | grpo | hpsv3
    limit_s: int
    what: str
    spec: dict[str, Any] = field(default_factory=dict)
    rest: bool = False  # last in the plan: its limit grows to whatever the phases before it left


def expected_s(phase: Phase) -> float | None:
    """The phase's seconds as measured on an H200 (MEASURED), for the steps it runs; None: not measured."""
    if phase.name not in MEASURED:
        return None
    wall, steps, step_s = MEASURED[phase.name]
    return round(wall - (steps - phase.spec.get("steps", steps)) * step_s, 1)


def plan(options) -> list[Phase]:
    work = Path(options.work)
    smoke = options.cpu_smoke
    shape, hpsv3_shape = ("tiny", "tiny") if smoke else ("qwen3-4b", "qwen2-vl-7b")
    model_dir = str(work / f"model-{shape}")
    painter = Path(options.bundle) / "tiny-painter"
    long, short = (64, 32) if smoke else (1024, 128)
    steps = GRPO_STEPS

    def grpo(name: str, limit_s: int, what: str, backend: str, completion: int, model: str = model_dir,
             **more: Any) -> Phase:
        return Phase(name, "grpo", limit_s, f"{what}, {steps} steps",
                     {"backend": backend, "completion": completion, "steps": steps, "model_dir": model}, **more)

    # Limits: the H200's times (MEASURED, 2026-12-04) with the margin each comment gives.
    phases = [
        Phase("install", "install", 15,  # 4.0 s: pip, no network; 3.7x
              "the bundle's wheels into a folder of their own, first on the phases' path"),
        Phase("preflight", "preflight", 40,  # 24.8 s, the first process to import (a cold page cache): +61%
              "the versions the trainer imports, the GPU, the disk", {"work": str(work)}),
        Phase("make-model", "make-model", 45,  # 30.3 s, 8 GB written to the work disk: +49%
              f"a {shape}-shaped policy with random weights, made on the device, saved",
              {"shape": shape, "model_dir": model_dir}),
        grpo("generate", 75,  # 57.8 s for 2 steps (70 s for 3 less one 12.2 s step): +30%
             "transformers' generate, the adapter folded in", "generate", short),
        grpo("compiled", 120,  # 86.1 s for 2 steps (109 s for 3 less one 22.9 s step): +39%, the
             # measured run's inductor cache may have been warm (a killed run of it came first)
             "static cache sized from the run, compiled decode step, folded", "compiled", long),
        grpo("tiny-painter", 45,  # 34 s for 2 steps (36 s for 3 less one 2.0 s step): +32%
             "the tests' tiny painter (carried in the bundle), compiled", "compiled", long // 2, str(painter)),
        Phase("hpsv3", "hpsv3", 50,  # 38.7 s (26 s of it building the 7B-shaped base): +29%
              f"HPSv3 on a {hpsv3_shape}-shaped random base: load, seconds a painting, memory",
              {"shape": hpsv3_shape, "paintings": 8 if not smoke else 3, "work": str(work)}),
        grpo("continuous-batching", 150,  # not measured: killed at 80 s with 3 steps; last, it also
             # takes what the phases before it leave (~270 s when they take their measured times)
             "paged cache sized from the run, CUDA graphs, folded", "continuous-batching", long, rest=True),
    ]
    if options.with_unfolded:  # issue 34's and 2026-12-04's figures have it: the baseline, when wanted
        phases.insert(3, grpo("generate-unfolded", 65,  # 50 s for 2 steps (61 s less one 11.0 s step): +30%
                              "TRL's own generate with the LoRA unfolded (the old path)", "generate-unfolded",
                              short // 2))
    if options.vllm:  # not measured (no vllm on the lent H200): compiled's 120 s and a third for vLLM's start
        phases.insert(phases.index(next(p for p in phases if p.name == "compiled")) + 1,
                      grpo("vllm-colocate", 160, "vLLM in the trainer's process (needs vllm on the box)",
                           "vllm-colocate", long))
    chosen = {name for names in options.phases for name in names.split(",") if name}
    if chosen:
        unknown = chosen - {p.name for p in phases}
        if unknown:
            raise SystemExit(f"no such phase: {', '.join(sorted(unknown))} (the plan's: "
                             f"{', '.join(p.name for p in phases)}; --with-unfolded and --vllm add theirs)")
        if any(p.spec.get("model_dir") == model_dir for p in phases if p.name in chosen):
            chosen.add("make-model")  # reused when this work folder has it already
        phases = [p for p in phases if p.name in chosen or p.kind in ("install", "preflight")]
    for assignment in options.limit:
        name, _, seconds = assignment.partition("=")
        for phase in phases:
            if phase.name == name:
                phase.limit_s = int(seconds)
    return phases


def planned_s(phases: list[Phase]) -> int:
    """The phases' limits and run.py's own time: what the plan asks of the command."""
    return sum(p.limit_s for p in phases) + OWN_S


def phase_limit(phase: Phase, left_s: float, *, last: bool) -> int | None:
    """The phase's limit in a command with `left_s` to go: its own, cut to what is left (less the
    last report's seconds); the last phase, if it takes the rest, gets all of that; None: no time."""
    left = int(left_s - LAST_S)
    if left < MIN_PHASE_S:
        return None
    return left if phase.rest and last else min(phase.limit_s, left)


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
             f"  out      {options.out}", "",
             f"  {'phase':<20} {'limit':>6} {'H200':>6}  what (H200: its time on one, 2026-12-04, for these steps)"]
    for i, phase in enumerate(phases):
        expected = expected_s(phase)
        limit = f"{phase.limit_s}s" + ("+" if phase.rest and i == len(phases) - 1 else "")
        lines.append(f"  {phase.name:<20} {limit:>6} {f'{expected:.0f}s' if expected is not None else '-':>6}  "
                     f"{phase.what}")
    total, command = planned_s(phases), options.command_s
    lines.append(f"  {'all phases':<20} {total - OWN_S:>5}s         + {OWN_S} s of run.py's own = {total} s, "
                 f"{'within' if total <= command else 'OVER'} the {command} s of one device command")
    if phases[-1].rest:
        lines.append(f"  {'':<20} {'':>6} {'':>6}  {phases[-1].name}, last, also takes what the phases before it "
                     "leave; a phase is cut to what is left of the command")
    if total > command:
        lines.append(f"  {'':<20} {'':>6} {'':>6}  over: the last phases get what is left; or run some with "
                     "--phases in a second command")
    lines.append("")
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


def install(bundle: Path, site: Path, *, limit_s: float | None = None) -> dict[str, Any]:
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
                    "--disable-pip-version-check", "--target", str(site), *map(str, wheels)], check=True,
                   timeout=limit_s)
    marker.write_text(stamp)
    return {"wheels": len(wheels), "seconds": round(time.perf_counter() - started, 1)}


def tail_of(lines: list[str], count: int = TAIL_LINES) -> str:
    """The last `count` lines with something on them (a line at most 500 characters)."""
    kept = [line.rstrip()[:500] for line in lines if line.strip()]
    return "\n".join(kept[-count:])


def run_phase(phase: Phase, env: dict[str, str], *, script: Path = PHASES_SCRIPT,
              limit_s: int | None = None) -> dict[str, Any]:
    """The phase in its own process group, killed at its limit; its RESULT line, or why there is none
    (killed or failed, with the last lines it printed)."""
    limit = phase.limit_s if limit_s is None else limit_s
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
        if time.monotonic() - started > limit:
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
    result: dict[str, Any] = {"phase": phase.name, "seconds": seconds, "limit_s": limit}
    if baseline is not None and peak is not None:
        result["smi_peak_gib"] = round((peak - baseline) / 1024, 2)
    found = [line for line in lines if line.startswith("RESULT ")]
    if found:
        result |= json.loads(found[-1][len("RESULT "):])
        if killed:
            result["note"] = f"killed at its {limit} s limit after it printed its result (its exit hung)"
        return result
    tail = tail_of(lines)
    last = tail.rsplit("\n", 1)[-1][:200] if tail else "no output"
    if killed:
        cut = f", cut from its own {phase.limit_s} s to what was left of the command" if limit < phase.limit_s else ""
        result["error"] = f"killed at its {limit} s limit{cut}; its last line: {last}"
    else:
        result["error"] = f"exited {process.returncode}: {last}"
    result["tail"] = tail or "no output"
    return result


def made_already(phase: Phase) -> bool:
    """make-model's policy is in the work folder from an earlier command (phases.py marks it when saved)."""
    marker = Path(phase.spec["model_dir"]) / ".made"
    return marker.exists() and marker.read_text().strip() == phase.spec["shape"]


def report(results: list[dict[str, Any]], *, smoke: bool, elapsed_s: float | None = None,
           command_s: int = COMMAND_S) -> str:
    rows = ["| phase | completion | tokens/s | generate s | update s | step s | first-step warm-up s | peak GiB "
            "(nvidia-smi) | peak GiB (torch) | budget GiB | peak / budget |", "|" + "---|" * 11]
    verdicts = []
    for r in results:
        if "error" in r:
            rows.append(f"| {r['phase']} | {r['error'][:160].replace('|', '/')} |" + " |" * 9)
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
    if elapsed_s is not None:
        header.append(f"Ran {elapsed_s:.0f} s of the {command_s} s command: "
                      + ", ".join(f"{r['phase']} {r['seconds']} s" + (f" of {r['limit_s']}" if "limit_s" in r else "")
                                  for r in results if "seconds" in r))
    tails = []
    for r in results:
        if "tail" in r:
            tails += ["", f"### {r['phase']}: the last lines it printed (up to {TAIL_LINES})", "", "````text",
                      r["tail"], "````"]
    return "\n".join([*header, "", *rows, *([""] + verdicts if verdicts else []), *tails])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes, short completions, on a CPU")
    parser.add_argument("--bundle", default=str(BUNDLE), help="what prepare.py made (default var/gpu-bench)")
    parser.add_argument("--work", default="/tmp/gpu-bench", help="where models and checkpoints are made")
    parser.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "bench" / "out" / "gpu"))
    parser.add_argument("--phases", "--only", action="append", default=[], metavar="PHASE[,PHASE]",
                        help="the phases to run (install, preflight and, for the 4B phases, make-model come too; "
                             "a model made by an earlier command in --work is reused); default all")
    parser.add_argument("--limit", action="append", default=[], metavar="PHASE=SECONDS", help="another time limit")
    parser.add_argument("--command-s", type=int, default=COMMAND_S, metavar="SECONDS",
                        help=f"the time the command has (default {COMMAND_S}): a phase is cut to what is left, "
                             "the last takes the rest")
    parser.add_argument("--with-unfolded", action="store_true",
                        help="add TRL's unfolded generate, the baseline (issue 34 and 2026-12-04 measured it)")
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
    failed_model: str | None = None
    for i, phase in enumerate(phases):
        limit = phase_limit(phase, options.command_s - (time.monotonic() - STARTED), last=i == len(phases) - 1)
        print(f"\n== {phase.name} (limit {limit} s): {phase.what}", flush=True)
        if limit is None:
            result = {"phase": phase.name, "error": f"not run: under {MIN_PHASE_S + LAST_S} s left of the "
                                                    f"command's {options.command_s} s"}
        elif failed_model and phase.spec.get("model_dir") == failed_model:
            result = {"phase": phase.name, "error": "not run: make-model failed"}
        elif phase.kind == "install":
            started = time.monotonic()
            try:
                result = {"phase": "install", **install(Path(options.bundle), site, limit_s=limit)}
            except subprocess.CalledProcessError as exc:
                result = {"phase": "install", "error": f"pip failed ({exc.returncode})"}
            except subprocess.TimeoutExpired:
                result = {"phase": "install", "error": f"pip killed at its {limit} s limit"}
            result |= {"seconds": round(time.monotonic() - started, 1), "limit_s": limit}
        elif phase.kind == "make-model" and made_already(phase):
            result = {"phase": phase.name, "already": f"made by an earlier command in {phase.spec['model_dir']}"}
        else:
            result = run_phase(phase, env, limit_s=limit)
        if phase.kind == "make-model" and "error" in result:
            failed_model = phase.spec["model_dir"]
        results.append(result)
        print(json.dumps(result), flush=True)
        write(out, results, options)
        if phase.kind == "preflight" and "error" in result:
            print("preflight failed: the trainer cannot run here; stopping", flush=True)
            break
    print("\n" + write(out, results, options), flush=True)


def write(out: Path, results: list[dict[str, Any]], options) -> str:
    """gpu-bench.json and gpu-bench.md as they stand (after every phase: a command killed from
    outside still leaves what ran)."""
    (out / "gpu-bench.json").write_text(json.dumps(results, indent=2))
    table = report(results, smoke=options.cpu_smoke, elapsed_s=time.monotonic() - STARTED,
                   command_s=options.command_s)
    (out / "gpu-bench.md").write_text(table + "\n")
    return table


if __name__ == "__main__":
    main()
