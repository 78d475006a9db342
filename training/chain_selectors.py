"""Reads for a multi-turn rollout's chain: each turn with its code diff from the one before, its
reward change, and how the rollout's reward was made from the turns."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from training import metrics as keys
from training.failures import failure_label
from training.models import Rollout, RolloutTurn


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "ctx" or "hunk" (an @@ line: where the lines below are)
    text: str


@dataclass(frozen=True)
class CodeDiff:
    """The unified line diff from one turn's code to the next's."""

    lines: tuple[DiffLine, ...]
    added: int
    removed: int


def code_diff(before: str, after: str, *, context: int = 3) -> CodeDiff:
    lines: list[DiffLine] = []
    for text in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context):
        if text.startswith(("---", "+++")) and not lines:
            continue  # the two file headers; a removed line starting "--" comes after a hunk header
        kind = {"@": "hunk", "+": "add", "-": "del"}.get(text[:1], "ctx")
        lines.append(DiffLine(kind, text))
    return CodeDiff(tuple(lines), sum(1 for x in lines if x.kind == "add"), sum(1 for x in lines if x.kind == "del"))


@dataclass(frozen=True)
class ChainTurn:
    turn: RolloutTurn
    diff: CodeDiff | None  # from the turn before; None on turn 1
    delta: float | None  # this turn's reward minus the turn before's; None on turn 1 or with a None
    failure: str  # "Gate failed", "Render failed"...: why a turn has no passing painting; "" when it has

    @property
    def parts(self) -> list[tuple[str, float]]:
        """(part, value) of the reward parts this turn has, in the charts' order."""
        parts = self.turn.parts if isinstance(self.turn.parts, dict) else {}
        return [(name, parts[name]) for name in keys.PART if isinstance(parts.get(name), (int, float))]


@dataclass(frozen=True)
class RolloutChain:
    """A multi-turn rollout's turns in order, and how its reward was made from them."""

    turns: tuple[ChainTurn, ...]
    weight: float  # the run's revision_gain_weight
    first: float | None  # turn 1's own painting reward
    final: float | None  # the last turn's
    reward: float | None  # the rollout's stored (combined) reward

    @property
    def gain(self) -> float | None:
        return None if self.first is None or self.final is None else self.final - self.first


def rollout_chain(rollout: Rollout) -> RolloutChain | None:
    """The chain of a multi-turn rollout; None for a single-turn one (it has no chain rows)."""
    turns = list(rollout.chain.order_by("turn")) if rollout.turns > 1 else []
    if not turns:
        return None
    shown: list[ChainTurn] = []
    for before, turn in zip([None, *turns], turns):
        delta = None
        if before is not None and before.reward is not None and turn.reward is not None:
            delta = turn.reward - before.reward
        failure = failure_label(turn.violations) if not turn.passed and turn.reward is not None else ""
        shown.append(ChainTurn(turn, code_diff(before.code, turn.code) if before else None, delta, failure))
    weight = rollout.run.arguments.revision_gain_weight
    return RolloutChain(tuple(shown), weight=weight, first=turns[0].reward, final=turns[-1].reward,
                        reward=rollout.reward)
