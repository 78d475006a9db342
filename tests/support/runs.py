"""Launch arguments and waits shared by the tests that train a run end to end."""
from __future__ import annotations

import time

from training.models import Run

# A few cheap steps of the tiny model: small groups (one a step, in the published layout of one
# completion per pass: 1 × 4), small renders, a checkpoint every step, and the held-out
# evaluation's smallest sample (one reply a subject; the tests of evaluation ask for more).
FAST = {"num_generations": 4, "gradient_accumulation_steps": 4, "render_size": 128, "max_completion_length": 384, "checkpoint_every": 1,
        "warmup_steps": 1, "render_deadline_s": 60, "score_deadline_s": 60, "eval_samples_per_subject": 1}
# For tests of the run's mechanics only (steps, groups, stop and resume): the tiny model never
# ends a sketch, so its every completion runs to max_completion_length and fails the gate as
# truncated, at 384 tokens as at 64; generating the 320 more cost most of each step.
MECHANICS = FAST | {"max_completion_length": 64}


def wait_for(predicate, timeout: float, what, poll: float = 0.5):
    """Poll `predicate` until it is truthy; `what` (a text, or a function giving one at the
    end) says what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what() if callable(what) else what}")


def wait_until_ended(run: Run, timeout: float = 420, ends=("finished", "stopped", "failed")) -> Run:
    def ended():
        run.refresh_from_db()
        return run.status in ends

    wait_for(ended, timeout, lambda: f"run {run.id} to be {' or '.join(ends)} (status {run.status}, {run.steps_done} steps)")
    return run
