"""Following a run from the command line (`train --follow`, `resume_run --follow`): a tqdm bar
of steps with one line per step, until the run is no longer queued, running or stopping."""
from __future__ import annotations

import time

from tqdm import tqdm

from training import metrics as keys
from training.models import Run, Step


def _fmt(value, places: int = 3) -> str:
    return "  -  " if value is None else f"{value:.{places}f}"


def step_line(step: Step) -> str:
    m = step.metrics
    line = (
        f"step {step.step:>4}  reward {_fmt(step.reward_mean)} ± {_fmt(step.reward_std)}  "
        f"gate {_fmt(m.get(keys.GATE_PASS_RATE))}  none {int(m.get(keys.NONE_COUNT) or 0)}  "
        f"<{keys.LOW_REWARD} {int(m.get(keys.LOW_COUNT) or 0)}  {_fmt(m.get(keys.STEP_S), 1)} s"
    )
    turns = [m.get(key) for key in keys.TURN_REWARDS if key in m]
    if turns:  # a run with revision turns: each turn's mean reward, the gain, the shares improved and kept
        line += (f"  turns {' → '.join(_fmt(t) for t in turns)}  gain {_fmt(m.get(keys.REVISION_GAIN))}"
                 f"  improved {_fmt(m.get(keys.IMPROVED_SHARE), 2)}  kept {_fmt(m.get(keys.KEPT_SHARE), 2)}")
    return line


def follow_run(run: Run, *, poll: float, initial: int = 0) -> Run:
    """Print each step written from now on (a resumed run rewrites the steps after its
    checkpoint); return the run once it has ended or paused."""
    seen = Step.objects.filter(run=run).order_by("-id").values_list("id", flat=True).first() or 0
    with tqdm(total=run.max_steps, initial=initial, desc=f"run {run.id}", unit="step", leave=True) as bar:
        while True:
            run.refresh_from_db()
            for step in Step.objects.filter(run=run, id__gt=seen).order_by("id"):
                bar.write(step_line(step))
                bar.n, seen = step.step, step.id
                bar.refresh()
            if run.status not in Run.ACTIVE:
                return run
            time.sleep(max(0.2, poll))


def ending(run: Run) -> str:
    """How the run ended, with the first line of its error (the reason) when it has one."""
    return f"Run {run.id} ended: {run.status}" + (f"\n{run.error.splitlines()[0]}" if run.error else "")
