"""What a judged sketch becomes: its rollout row and turn rows, the rollout's reward, the
feedback the model is told, and the step's metrics (training/metrics.py names them).

One module for the trainer's reward function (training/trainer/rewarding.py gathers the step's
paintings and hands them here) and for a run trained elsewhere (serving/ stores each episode
the same way), so both draw the same rows and the same curves.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, pstdev

from django.core.files.storage import default_storage
from django.db import transaction

from paintapp.lib.db import outlasting_restarts
from paintenv.feedback import feedback_text, turn_from_records
from painting.pipeline import JudgedSketch
from training import metrics as keys
from training.models import Rollout, RolloutTurn, Run

log = logging.getLogger(__name__)
ROLLOUT_FIELDS = ["reply", "code", "png", "passed", "violations", "reward", "parts", "judge_detail", "reference_ids",
                  "paint_fraction", "errors", "stats", "timings", "failure", "subject", "prompt", "turns"]


@dataclass
class TurnOutcome:
    """One turn of one rollout: the reply the model wrote, how it came out, and the feedback
    it was given next ("" on the last turn, and on a kept one, which ends its chain)."""

    reply: str
    painted: JudgedSketch
    feedback: str = ""
    kept: bool = False  # the reply was KEEP: `painted` is the turn before's painting, which stands


    @property
    def reward(self) -> float | None:
        return self.painted.reward


def turn_feedback(painted: JudgedSketch) -> str:
    """What the model is told about one painted sketch (the same text the editor gives)."""
    return feedback_text(turn_from_records(
        painted.painting, render=painted.render, score=painted.score, reward=painted.reward, parts=painted.parts,
    ))


def rollout_reward(turn_rewards: Sequence[float | None], *, gain_weight: float) -> float | None:
    """A multi-turn rollout's reward: the final painting's reward plus `gain_weight` times its
    gain over the first (final - first). None when any turn's reward is None: an
    infrastructure failure at any turn leaves the rollout out of its group's baseline."""
    if not turn_rewards or any(r is None for r in turn_rewards):
        return None
    first, final = turn_rewards[0], turn_rewards[-1]
    return final + gain_weight * (final - first)


def rollout_rows(run: Run, step: int, *, prompts: Sequence[str], subjects: Sequence[str], replies: Sequence[str],
                 paintings: Sequence[JudgedSketch], rewards: Sequence[float | None],
                 chains: Sequence[list[TurnOutcome]] | None, group_size: int) -> list[Rollout]:
    """The step's rollout rows (not yet written): one per painted sketch, in groups of `group_size`."""
    return [
        Rollout(
            run=run, step=step, group=i // group_size, position=i % group_size, subject=subjects[i][:120],
            prompt=prompts[i], reply=replies[i], reward=rewards[i], reference_ids=list(painted.job.reference_ids),
            **{**painted_fields(painted), "failure": painted.failure or _chain_failure(chains[i] if chains else None)},
            turns=len(chains[i]) if chains else 1,
        )
        for i, painted in enumerate(paintings)
    ]


def store_rollouts(rows: list[Rollout], chains: Sequence[list[TurnOutcome]] | None, *, step: int) -> None:
    """Write the step's rollouts (and, with revision turns, each one's chain) before the
    rewards go back to TRL; a redone step overwrites its rows."""

    def write() -> None:
        with transaction.atomic():
            stored = Rollout.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["run", "step", "group", "position"],
                update_fields=ROLLOUT_FIELDS,
            )
            if chains is not None:
                RolloutTurn.objects.filter(rollout__in=stored).delete()
                RolloutTurn.objects.bulk_create(
                    [_turn_row(rollout, number, outcome) for rollout, chain in zip(stored, chains, strict=True)
                     for number, outcome in enumerate(chain, start=1)])

    outlasting_restarts(write, what=f"storing step {step}'s rollouts")


def store_failed_rollouts(run: Run, step: int, *, prompts: Sequence[str], subjects: Sequence[str],
                          replies: Sequence[str], message: str, group_size: int) -> None:
    """Rollouts with a None reward and why, when the reward function itself failed."""
    rows = [
        Rollout(
            run=run, step=step, group=i // group_size, position=i % group_size, subject=subjects[i][:120],
            prompt=prompts[i], reply=reply, reward=None, failure=message[:2000],
        )
        for i, reply in enumerate(replies)
    ]
    try:
        Rollout.objects.bulk_create(rows, ignore_conflicts=True)
    except Exception:  # noqa: BLE001 - the database may be what failed
        log.exception("could not store the failed rollouts of step %s", step)


def step_metrics(rows: list[Rollout], rewards: list[float | None], *, generation_s: float, render_s: float,
                 score_s: float, reward_s: float) -> dict[str, float]:
    """Our figures of one step's rollouts (training/metrics.py names them): the trainer's step,
    and a step of a run trained elsewhere (serving/), which the same curves draw."""
    n = len(rows)
    valid = [r for r in rewards if r is not None]
    violations = Counter(code for row in rows for code in row.violations)
    fractions = [row.paint_fraction for row in rows if row.paint_fraction is not None]
    metrics = {
        keys.GATE_PASS_RATE: sum(1 for row in rows if row.passed) / n if n else 0.0,
        keys.NONE_COUNT: float(sum(1 for r in rewards if r is None)),
        keys.LOW_COUNT: float(sum(1 for r in valid if r < keys.LOW_REWARD)),
        keys.PAINT_FRACTION: fmean(fractions) if fractions else 0.0,
        keys.GENERATION_S: generation_s,
        keys.RENDER_S: render_s,
        keys.SCORE_S: score_s,
        keys.REWARD_S: reward_s,
        keys.DIVERSITY: diversity(rows),
    }
    for part, key in keys.PART.items():
        values = [row.parts.get(part) for row in rows if row.passed and row.parts.get(part) is not None]
        if values:
            metrics[key] = fmean(values)
    if valid:
        metrics[keys.REWARD_VALID_STD] = pstdev(valid)
    for code, count in violations.items():
        metrics[keys.violation(code)] = float(count)
    return metrics


def diversity(rows: list[Rollout]) -> float:
    """Mean pairwise feature distance of the step's paintings (style collapse shows as a fall)."""
    # Loads scipy (~0.4 s): only a process that records a step pays it, not every studio process
    # and worker that imports the OpenEnv server's views or the trainer's recording.
    from paintenv.features import cached_image_features, mean_pairwise_distance

    features = []
    for row in rows:
        if row.png:
            try:
                with default_storage.open(row.png, "rb") as fh:
                    features.append(cached_image_features(fh.read()))
            except OSError:
                continue
    return mean_pairwise_distance(features)


def painted_fields(painted: JudgedSketch) -> dict:
    """What a Rollout and a RolloutTurn row both keep of one painted sketch."""
    render, score = painted.render or {}, painted.score or {}
    return {
        "code": painted.code, "png": render.get("png_path") or "", "passed": painted.passed,
        "violations": painted.violations, "parts": painted.parts, "judge_detail": score.get("judge") or {},
        "paint_fraction": render.get("paint_fraction"), "errors": render.get("errors", []),
        "stats": painted.painting.gate.stats if painted.painting else {},
        "timings": {**render.get("timings", {}), "render_ms": render.get("elapsed_ms")}, "failure": painted.failure,
    }


def _turn_row(rollout: Rollout, number: int, outcome: TurnOutcome) -> RolloutTurn:
    return RolloutTurn(rollout=rollout, turn=number, reply=outcome.reply, reward=outcome.reward,
                       feedback=outcome.feedback, kept=outcome.kept, **painted_fields(outcome.painted))


def _chain_failure(chain: list[TurnOutcome] | None) -> str:
    """Why a rollout's reward is None when its last turn scored but an earlier one did not."""
    for number, outcome in enumerate(chain or [], start=1):
        if outcome.reward is None:
            return f"turn {number}: {outcome.painted.failure or 'no reward'}"[:2000]
    return ""


def revision_metrics(chains: list[list[TurnOutcome]]) -> dict[str, float]:
    """A multi-turn step's revision figures: the mean reward of each turn's paintings, and over
    the rollouts whose every turn has a reward, the mean gain (final - first), the share that
    improved, the share that ended with KEEP, and of those whose first sketch failed the gate,
    the share whose final passed. A figure with nothing to count is left out, never 0."""
    metrics: dict[str, float] = {}
    for turn in range(1, max((len(c) for c in chains), default=0) + 1):
        values = [c[turn - 1].reward for c in chains if len(c) >= turn and c[turn - 1].reward is not None]
        if values:
            metrics[keys.turn_reward(turn)] = fmean(values)
    whole = [c for c in chains if len(c) > 1 and all(t.reward is not None for t in c)]
    if whole:
        metrics[keys.REVISION_GAIN] = fmean(c[-1].reward - c[0].reward for c in whole)
        metrics[keys.IMPROVED_SHARE] = sum(1 for c in whole if c[-1].reward > c[0].reward) / len(whole)
        metrics[keys.KEPT_SHARE] = sum(1 for c in whole if c[-1].kept) / len(whole)
    failed_first = [c for c in whole if not c[0].painted.gate_passed]
    if failed_first:
        metrics[keys.FIXED_SHARE] = sum(1 for c in failed_first if c[-1].painted.passed) / len(failed_first)
    return metrics
