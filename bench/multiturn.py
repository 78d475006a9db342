"""Do revision turns help? First-turn against final-turn reward over demo runs with turns = 2.

Runs real demo runs of the tiny model (after `make demo`: the model and the `demo` pool) with
`turns=2`, one per seed, through real train / render / score workers this script starts (or
the ones already running, with --use-running-workers), then reads every rollout's chain from
the database and prints, per seed and over all of them:

- first / final: the mean reward of the turn-1 paintings and of the final paintings (each
  turn's own painting reward, over the rollouts whose every turn has one);
- gain: final - first; improved: the share of rollouts whose final painting beat their first;
  fixed: of the rollouts whose first sketch failed the gate, the share whose final passed;
- kept: the share that answered KEEP at turn 2 (the first painting stands, gain 0), and
  gain revised: the mean gain of the others, the rollouts that wrote a second sketch;
- the same gain in the first and last third of the run's steps (does training sharpen it?).

    .venv/bin/python bench/multiturn.py [--seeds 0 1 2] [--steps 20] [--generations 8]
        [--train-workers 1] [--keep] [--runs ID ...  (report on runs that exist)]

The goal (issue #16): the final turn beats the first on average in every seed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

import django  # noqa: E402

django.setup()

from train_step import start_workers, stop_workers  # noqa: E402  (bench/ is the script's folder)

from curation.selectors import pool_get  # noqa: E402
from paintenv.gate import gate_source  # noqa: E402
from painting.selectors import default_recipe_name  # noqa: E402
from training import services  # noqa: E402
from training.models import Rollout, Run  # noqa: E402


def launch(args, seed: int) -> Run:
    return services.run_launch(
        pool=pool_get(args.pool), recipe_name=args.recipe, base_model=args.model, seed=seed,
        arguments={"max_steps": args.steps, "num_generations": args.generations,
                   "gradient_accumulation_steps": args.generations,  # one group a step, 1 × G as published
                   "turns": 2, "revision_gain_weight": args.gain_weight, "learning_rate": args.learning_rate,
                   "render_size": args.render_size, "max_completion_length": args.max_completion_length,
                   "checkpoint_every": 1000},
        name=f"bench multiturn seed {seed}",
    )


def wait(runs: list[Run]) -> None:
    pending = {run.id for run in runs}
    shown: dict[int, int] = {}
    while pending:
        for run in Run.objects.filter(id__in=pending):
            if shown.get(run.id) != run.steps_done:
                shown[run.id] = run.steps_done
                print(f"  run {run.id} (seed {run.seed}): step {run.steps_done}/{run.max_steps} {run.status}",
                      file=sys.stderr, flush=True)
            if run.status not in Run.ACTIVE:
                pending.discard(run.id)
                if run.status != Run.Status.FINISHED:
                    print(f"  run {run.id} ended {run.status}: {run.error[:300]}", file=sys.stderr)
        time.sleep(5)


def figures(run: Run) -> dict:
    rollouts = Rollout.objects.filter(run=run, turns__gt=1).prefetch_related("chain")
    chains = [list(r.chain.all()) for r in rollouts]
    whole = [(c, r.step) for c, r in zip(chains, rollouts, strict=True) if all(t.reward is not None for t in c)]
    third = max(1, run.max_steps // 3)

    def gain(rows) -> float | None:
        return statistics.fmean(c[-1].reward - c[0].reward for c, _ in rows) if rows else None

    failed_first = [c for c, _ in whole if not gate_source(c[0].code).passed]
    return {
        "run": run.id, "seed": run.seed, "rollouts": len(chains), "whole": len(whole),
        "first": statistics.fmean(c[0].reward for c, _ in whole) if whole else None,
        "final": statistics.fmean(c[-1].reward for c, _ in whole) if whole else None,
        "gain": gain(whole),
        "improved": sum(1 for c, _ in whole if c[-1].reward > c[0].reward) / len(whole) if whole else None,
        "worse": sum(1 for c, _ in whole if c[-1].reward < c[0].reward) / len(whole) if whole else None,
        "fixed": (sum(1 for c in failed_first if c[-1].passed) / len(failed_first)) if failed_first else None,
        "failed_first": len(failed_first),
        "kept": sum(1 for c, _ in whole if c[-1].kept) / len(whole) if whole else None,
        "revised_gain": gain([(c, s) for c, s in whole if not c[-1].kept]),
        "gain_first_third": gain([(c, s) for c, s in whole if s <= third]),
        "gain_last_third": gain([(c, s) for c, s in whole if s > run.max_steps - third]),
    }


def show(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def report(rows: list[dict]) -> None:
    print(f"\n{'run':>5} {'seed':>4} {'rollouts':>8} {'first':>6} {'final':>6} {'gain':>7} {'improved':>8} {'worse':>6} "
          f"{'kept':>6} {'gain revised':>12} {'fixed':>12} {'gain 1st/3':>10} {'gain last/3':>11}")
    for r in rows:
        fixed = f"{show(r['fixed'])} of {r['failed_first']}"
        print(f"{r['run']:>5} {r['seed']:>4} {r['whole']:>8} {show(r['first']):>6} {show(r['final']):>6} "
              f"{show(r['gain'], True):>7} {show(r['improved']):>8} {show(r['worse']):>6} {show(r['kept']):>6} "
              f"{show(r['revised_gain'], True):>12} {fixed:>12} "
              f"{show(r['gain_first_third'], True):>10} {show(r['gain_last_third'], True):>11}")
    measured = [r for r in rows if r["gain"] is not None]
    if measured:
        print(f"\nmean over {len(measured)} runs: first {statistics.fmean(r['first'] for r in measured):.3f}, "
              f"final {statistics.fmean(r['final'] for r in measured):.3f}, "
              f"improved {statistics.fmean(r['improved'] for r in measured):.1%}")
        met = all(r["gain"] > 0 for r in measured) and len(measured) == len(rows)
        print(f"goal (the final turn beats the first on average in every seed): {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="the demo runs' rate (the README's table)")
    parser.add_argument("--gain-weight", type=float, default=0.0, help="revision_gain_weight")
    parser.add_argument("--render-size", type=int, default=384)
    parser.add_argument("--max-completion-length", type=int, default=3072)
    parser.add_argument("--recipe", default=default_recipe_name())
    parser.add_argument("--pool", default="demo")
    parser.add_argument("--model", default=services.default_base_model())
    parser.add_argument("--train-workers", type=int, default=1, help="runs trained at once")
    parser.add_argument("--use-running-workers", action="store_true")
    parser.add_argument("--runs", type=int, nargs="*", help="report on these runs instead of launching")
    parser.add_argument("--keep", action="store_true", help="keep the runs (default: delete them after the report)")
    args = parser.parse_args()

    if args.runs:
        report([figures(run) for run in Run.objects.filter(id__in=args.runs).order_by("seed", "id")])
        return
    procs = [] if args.use_running_workers else start_workers({"train": args.train_workers, "render": 2, "score": 1})
    runs = []
    try:
        runs = [launch(args, seed) for seed in args.seeds]
        print(f"runs {', '.join(str(r.id) for r in runs)}: {args.steps} steps, G={args.generations}, turns=2, "
              f"recipe {args.recipe}, model {args.model}", file=sys.stderr)
        wait(runs)
    finally:
        stop_workers(procs)
    report([figures(Run.objects.get(id=run.id)) for run in runs])
    if not args.keep:
        for run in runs:
            services.run_delete(run=Run.objects.get(id=run.id))


if __name__ == "__main__":
    main()
