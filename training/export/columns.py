"""The columns of a run's dataset export, declared once (as `datasets` features with the card's
descriptions), and how a rollout or a turn of its chain becomes a row."""
from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Iterator
from statistics import fmean
from typing import Any

from datasets import Features, Image, List, Value
from django.core.files.storage import default_storage

from training.models import Rollout, RolloutTurn, Run

PARTS = ("gate", "length", "judge", "quality")


# --- Columns ------------------------------------------------------------------------------

def _string_list() -> List:
    return List(Value("string"))


# (column, feature, description for the dataset card): the one declaration of the columns.
COLUMNS: tuple[tuple[str, Any, str], ...] = (
    ("image", Image(), "the painting (PNG); null when nothing was rendered (failed gate)"),
    ("run", Value("int64"), "run id in the studio that exported it"),
    ("run_name", Value("string"), "run name"),
    ("step", Value("int64"), "GRPO step (1-based)"),
    ("group", Value("int64"), "GRPO group within the step (one prompt per group)"),
    ("position_in_group", Value("int64"), "completion index within the group"),
    ("turn", Value("int64"),
     "the turn this row's sketch and painting are from: 1 in a single-turn run; in a run with revision "
     "turns, the rollout's last turn (its number of turns), and every turn is a row of the `chain` config"),
    ("reward", Value("float64"),
     "total reward; 0 for a failed gate, null for an infrastructure failure (left out of the baseline); with "
     "revision turns the rollout's combined reward: last turn's + revision_gain_weight × (last − first)"),
    *((part, Value("float64"), f"reward part `{part}` (0-1); null when not scored") for part in PARTS),
    ("group_mean_reward", Value("float64"), "mean reward of the rollout's group, nulls left out"),
    *((f"group_mean_{part}", Value("float64"), f"mean `{part}` of the rollout's group, nulls left out")
      for part in PARTS),
    ("passed", Value("bool"), "passed the static gate and the render"),
    ("violations", _string_list(), "gate and render violation codes"),
    ("failure", Value("string"), "infrastructure failure behind a null reward, else empty"),
    ("unavailable", _string_list(), "reward parts that could not be computed, with why"),
    ("code", Value("string"), "the p5.brush sketch extracted from the reply"),
    ("code_chars", Value("int64"), "characters of the sketch, comments and blanks included"),
    ("estimated_tokens", Value("int64"), "tokens of painting code by the static rules (paintenv/length.py: comments, "
     "unread names, repeats and data tables left out), before the render: the length score reads the render's "
     "figure, of the code that ran"),
    ("n_shapes", Value("int64"), "brush.beginShape calls in the code"),
    ("n_vertices", Value("int64"), "brush.vertex calls in the code"),
    ("n_circles", Value("int64"), "brush.circle calls in the code"),
    ("n_fill_calls", Value("int64"), "brush.fill calls in the code"),
    ("n_brush_calls", Value("int64"), "all brush.* calls in the code"),
    ("brush_methods_used", _string_list(), "distinct brush methods the code calls"),
    ("paint_fraction", Value("float64"), "share of the canvas painted (pixels away from the background)"),
    ("render_ms", Value("float64"), "render time in milliseconds"),
    ("subject", Value("string"), "what the prompt asked to paint"),
    ("prompt", Value("string"), "the user prompt"),
    ("reply", Value("string"), "the model's whole reply"),
    ("reference_ids", List(Value("int64")), "pool references the group was judged against"),
    ("judge_detail", Value("string"), "per-reference judge verdicts in both orders, as JSON"),
    ("rollout_id", Value("int64"), "rollout id in the studio that exported it"),
)
ROLLOUT_FEATURES = Features({name: feature for name, feature, _ in COLUMNS})
COLUMN_NAMES = tuple(ROLLOUT_FEATURES)

# The chain of a multi-turn rollout, one row a turn (in order), joined to data/ by rollout_id.
CHAIN_COLUMNS: tuple[tuple[str, Any, str], ...] = (
    ("image", Image(), "the turn's painting (PNG); null when it has none (failed gate, infrastructure failure)"),
    ("rollout_id", Value("int64"), "the rollout (a row of the default config) this turn belongs to"),
    ("step", Value("int64"), "GRPO step (1-based)"),
    ("group", Value("int64"), "GRPO group within the step"),
    ("position_in_group", Value("int64"), "completion index within the group"),
    ("turn", Value("int64"), "1 = the first sketch; each later turn answers the feedback on the one before"),
    ("turns", Value("int64"), "turns in the rollout's chain"),
    ("kept", Value("bool"),
     "the model answered KEEP on this turn: its code, painting and reward are the turn before's, and the chain ends"),
    ("reward", Value("float64"),
     "this turn's own painting reward: 0 for a failed gate, null for an infrastructure failure"),
    *((part, Value("float64"), f"this turn's reward part `{part}` (0-1); null when not scored") for part in PARTS),
    ("rollout_reward", Value("float64"), "the rollout's combined reward (the `reward` of its row in data/)"),
    ("passed", Value("bool"), "the turn's sketch passed the static gate and the render"),
    ("violations", _string_list(), "gate and render violation codes"),
    ("errors", _string_list(), "runtime errors of the render, as `line:col message`"),
    ("failure", Value("string"), "infrastructure failure behind a null reward, else empty"),
    ("unavailable", _string_list(), "reward parts that could not be computed, with why"),
    ("code", Value("string"), "the sketch extracted from this turn's reply"),
    ("reply", Value("string"), "the model's whole reply on this turn"),
    ("feedback", Value("string"),
     "the user message the model got after this turn (how the sketch came out, then the ask for a new "
     "sketch); empty on the last turn. The chat of turn k+1 is the prompt, then each earlier reply and feedback"),
    ("paint_fraction", Value("float64"), "share of the canvas painted"),
    ("render_ms", Value("float64"), "render time in milliseconds"),
    ("judge_detail", Value("string"), "per-reference judge verdicts in both orders, as JSON"),
    ("subject", Value("string"), "what the prompt asked to paint"),
    ("prompt", Value("string"), "the user prompt of the first turn"),
)
CHAIN_FEATURES = Features({name: feature for name, feature, _ in CHAIN_COLUMNS})
CHAIN_COLUMN_NAMES = tuple(CHAIN_FEATURES)


# --- Rows ---------------------------------------------------------------------------------

def number(value: Any) -> float | None:
    """A finite float, or None for anything else (missing, null, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, (list, tuple)) else []


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def groups(rollouts: Iterator[Rollout]) -> Iterator[list[Rollout]]:
    """Consecutive rollouts of one (step, group); the query orders them that way."""
    current: list[Rollout] = []
    for rollout in rollouts:
        if current and (current[0].step, current[0].group) != (rollout.step, rollout.group):
            yield current
            current = []
        current.append(rollout)
    if current:
        yield current


def stored(name: str) -> bytes | None:
    try:
        with default_storage.open(name, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def image_of(row: Rollout | RolloutTurn) -> tuple[dict | None, bool]:
    """(HF image struct or None, whether a stored PNG was missing)."""
    if not row.png:
        return None, False
    data = stored(row.png)
    if data is None:
        return None, True
    return {"bytes": data, "path": posixpath.basename(row.png)}, False


def rollout_row(rollout: Rollout, run: Run, group_means: dict[str, float | None], image: dict | None) -> dict:
    parts = rollout.parts if isinstance(rollout.parts, dict) else {}
    stats = rollout.stats if isinstance(rollout.stats, dict) else {}
    timings = rollout.timings if isinstance(rollout.timings, dict) else {}
    references = rollout.reference_ids if isinstance(rollout.reference_ids, list) else []
    return {
        "image": image,
        "run": run.pk,
        "run_name": run.name,
        "step": rollout.step,
        "group": rollout.group,
        "position_in_group": rollout.position,
        "turn": rollout.turns,
        "reward": rollout.reward,
        **{part: number(parts.get(part)) for part in PARTS},
        **group_means,
        "passed": rollout.passed,
        "violations": strings(rollout.violations),
        "failure": rollout.failure,
        "unavailable": strings(parts.get("unavailable")),
        "code": rollout.code,
        "code_chars": _count(stats.get("code_chars")),
        "estimated_tokens": _count(stats.get("estimated_tokens")),
        "n_shapes": _count(stats.get("shapes")),
        "n_vertices": _count(stats.get("vertices")),
        "n_circles": _count(stats.get("circles")),
        "n_fill_calls": _count(stats.get("fills")),
        "n_brush_calls": _count(stats.get("brush_calls")),
        "brush_methods_used": strings(stats.get("brush_methods_used")),
        "paint_fraction": rollout.paint_fraction,
        "render_ms": number(timings.get("render_ms")),
        "subject": rollout.subject,
        "prompt": rollout.prompt,
        "reply": rollout.reply,
        "reference_ids": [int(r) for r in references if isinstance(r, int) and not isinstance(r, bool)],
        "judge_detail": json.dumps(rollout.judge_detail, ensure_ascii=False) if rollout.judge_detail else None,
        "rollout_id": rollout.pk,
    }


def group_means(group: list[Rollout]) -> dict[str, float | None]:
    means = {"group_mean_reward": _mean([r.reward for r in group])}
    for part in PARTS:
        means[f"group_mean_{part}"] = _mean(
            [number(r.parts.get(part)) if isinstance(r.parts, dict) else None for r in group]
        )
    return means


def chain_row(turn: RolloutTurn, image: dict | None) -> dict:
    rollout = turn.rollout
    parts = turn.parts if isinstance(turn.parts, dict) else {}
    timings = turn.timings if isinstance(turn.timings, dict) else {}
    errors = turn.errors if isinstance(turn.errors, list) else []
    return {
        "image": image, "rollout_id": rollout.pk, "step": rollout.step, "group": rollout.group,
        "position_in_group": rollout.position, "turn": turn.turn, "turns": rollout.turns, "kept": turn.kept,
        "reward": turn.reward,
        **{part: number(parts.get(part)) for part in PARTS},
        "rollout_reward": rollout.reward, "passed": turn.passed, "violations": strings(turn.violations),
        "errors": [_error_text(e) for e in errors], "failure": turn.failure,
        "unavailable": strings(parts.get("unavailable")), "code": turn.code, "reply": turn.reply,
        "feedback": turn.feedback, "paint_fraction": turn.paint_fraction,
        "render_ms": number(timings.get("render_ms")),
        "judge_detail": json.dumps(turn.judge_detail, ensure_ascii=False) if turn.judge_detail else None,
        "subject": rollout.subject, "prompt": rollout.prompt,
    }


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)
    where = f"{error['line']}:{error.get('col') or 1} " if error.get("line") else ""
    return f"{where}{error.get('message', '')}"
