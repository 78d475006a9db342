"""Wall time of one GRPO step and its split: generation, rendering, scoring, update.

Runs real short runs of the tiny model on the studio's database (after `make demo`, which
builds the model and the `demo` pool), through real train / render / score workers that
this script starts (or the ones already running, with --use-running-workers).

    .venv/bin/python bench/train_step.py [--sizes 384 600] [--steps 4] [--generations 8]
        [--recipe NAME (default: judge-led where configured, else studio-judge-led)] [--pool demo] [--model models/tiny-painter]

Prints one line per step and, per render size, the median over the steps after the first
(the first one also loads the model and warms the browsers).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from support import stop_workers  # bench/ is the script's folder

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

import django  # noqa: E402

django.setup()

from curation.selectors import pool_get  # noqa: E402
from paintapp.lib.workers import answering_queues  # noqa: E402
from painting.selectors import default_recipe_name  # noqa: E402
from training import services  # noqa: E402
from training.models import Run, Step  # noqa: E402

WORKERS = {"train": 1, "render": 2, "score": 1}


def start_workers(workers: dict[str, int] = WORKERS) -> list[subprocess.Popen]:
    """Start a Celery worker per queue (`workers`: queue -> concurrency) and wait until each answers."""
    procs = []
    for queue, concurrency in workers.items():
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "paintapp", "worker", "-Q", queue, "-c", str(concurrency),
             "-n", f"bench-{queue}@%h", "--loglevel=WARNING"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        ))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if set(workers) <= answering_queues():
            return procs
        time.sleep(1)
    raise SystemExit("workers did not come up within 60 s")




def measure(args, size: int) -> list[dict]:
    run = services.run_launch(
        pool=pool_get(args.pool), recipe_name=args.recipe, base_model=args.model,
        arguments={"max_steps": args.steps, "num_generations": args.generations, "render_size": size,
                   "gradient_accumulation_steps": args.generations,  # one group a step, 1 × G as published
                   "checkpoint_every": 1000, "max_completion_length": args.max_completion_length},
        name=f"bench train_step {size}px",
    )
    print(f"run {run.id}: {args.steps} steps, G={args.generations}, {size} px", file=sys.stderr)
    while True:
        run.refresh_from_db()
        if run.status not in Run.ACTIVE:
            break
        time.sleep(1)
    if run.status != "finished":
        raise SystemExit(f"run {run.id} ended {run.status}: {run.error[:500]}")
    rows = []
    for step in Step.objects.filter(run=run).order_by("step"):
        m = step.metrics
        row = {k: m.get(f"ours/{k}_s") or 0.0 for k in ("step", "generation", "render", "score", "update")}
        row["n"] = step.step
        row["reward"] = step.reward_mean
        row["gate"] = m.get("ours/gate_pass_rate")
        rows.append(row)
        print(f"  step {step.step}: {row['step']:.1f} s = generate {row['generation']:.1f} + render {row['render']:.1f}"
              f" + score {row['score']:.1f} + update {row['update']:.1f}  (gate pass {row['gate']:.2f})")
    if not args.keep:
        services.run_delete(run=run)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[384, 600])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=3072)
    parser.add_argument("--recipe", default=default_recipe_name())
    parser.add_argument("--pool", default="demo")
    parser.add_argument("--model", default=services.default_base_model())
    parser.add_argument("--use-running-workers", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark runs (default: delete them)")
    args = parser.parse_args()

    procs = [] if args.use_running_workers else start_workers()
    try:
        results = {size: measure(args, size) for size in args.sizes}
    finally:
        stop_workers(procs)
    print(f"\nGRPO step on this machine: tiny model, G={args.generations}, recipe {args.recipe} "
          f"(median of steps 2..{args.steps})")
    print(f"{'size':>6} {'step s':>8} {'generate':>9} {'render':>8} {'score':>7} {'update':>7}")
    for size, rows in results.items():
        later = rows[1:] or rows
        med = {k: statistics.median(r[k] for r in later) for k in ("step", "generation", "render", "score", "update")}
        total = med["step"] or 1.0
        print(f"{size:>6} {med['step']:>8.1f} " + " ".join(
            f"{med[k]:>6.1f}s ({med[k] / total:>4.0%})".rjust(9 if k == 'generation' else 8)
            for k in ("generation", "render", "score", "update")
        ))


if __name__ == "__main__":
    main()
