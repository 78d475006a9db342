"""`manage.py train` — launch exactly what the Launch button launches; --follow prints each step."""
from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from curation.models import Pool
from curation.selectors import pool_get
from training import metrics as keys
from training import services
from training.config import RunArguments
from training.models import Run, Step


class Command(BaseCommand):
    help = "Launch a GRPO run on the train workers (and optionally follow it step by step)."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="NAME or NAME:VERSION of a frozen pool")
        parser.add_argument("--recipe", default="judge-led", help="hps-only, judge-led, hps-led or a saved recipe")
        parser.add_argument("--base-model", default=None, help="local path or Hugging Face id (default: the tiny model)")
        parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default 60)")
        parser.add_argument("--subject", action="append", default=[], help="subject text; repeat for several")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--name", default="")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="any hyper-parameter, e.g. --set num_generations=4 --set render_size=384")
        parser.add_argument("--follow", action="store_true", help="print one line per step until the run ends")
        parser.add_argument("--poll", type=float, default=1.0)

    def handle(self, *args, pool, recipe, base_model, steps, subject, seed, name, set, follow, poll, **options):
        try:
            frozen = pool_get(pool)
        except (Pool.DoesNotExist, ValueError) as exc:
            raise CommandError(f"no pool {pool!r}: {exc}", returncode=2) from exc
        arguments = RunArguments().to_dict()
        for item in set:
            key, _, raw = item.partition("=")
            if key not in arguments:
                raise CommandError(f"unknown hyper-parameter {key!r}", returncode=2)
            try:
                arguments[key] = json.loads(raw)
            except json.JSONDecodeError:
                arguments[key] = raw
        if steps is not None:
            arguments["max_steps"] = steps
        try:
            run = services.run_launch(
                pool=frozen, recipe_name=recipe, base_model=base_model, arguments=arguments,
                subjects=subject, seed=seed, name=name,
            )
        except services.LaunchError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(self.style.SUCCESS(f"Launched run {run.id}: {run.name}"))
        if follow:
            self.poll = max(0.2, poll)
            self._follow(run)

    def _follow(self, run: Run) -> None:
        from tqdm import tqdm

        printed = 0
        with tqdm(total=run.max_steps, desc=f"run {run.id}", unit="step", leave=True) as bar:
            while True:
                run.refresh_from_db()
                for step in Step.objects.filter(run=run, step__gt=printed).order_by("step"):
                    m = step.metrics
                    line = (
                        f"step {step.step:>4}  reward {_fmt(step.reward_mean)} ± {_fmt(step.reward_std)}  "
                        f"gate {_fmt(m.get(keys.GATE_PASS_RATE))}  none {int(m.get(keys.NONE_COUNT) or 0)}  "
                        f"<{keys.LOW_REWARD} {int(m.get(keys.LOW_COUNT) or 0)}  {_fmt(m.get(keys.STEP_S), 1)} s"
                    )
                    bar.write(line)
                    bar.update(step.step - printed)
                    printed = step.step
                if run.status not in Run.ACTIVE:
                    break
                time.sleep(self.poll)
        self.stdout.write(f"Run {run.id} ended: {run.status}" + (f"\n{run.error.splitlines()[0]}" if run.error else ""))
        if run.status == Run.Status.FAILED:
            raise CommandError("the run failed", returncode=1)


def _fmt(value, places: int = 3) -> str:
    return "  -  " if value is None else f"{value:.{places}f}"
