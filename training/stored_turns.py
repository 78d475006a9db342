"""A stored sketch (a Rollout, a RolloutTurn or an editor Revision) as the feedback's `Turn`,
and the revision-turn chat the trainer gives after it.

The trainer holds a turn as records (the gate's verdict, the render task's dict, the score
task's dict, the reward and its parts) and `paintenv.feedback.turn_from_records` turns
them into a `Turn`. A row keeps less: its violation codes (no gate messages), the render's
errors and paint fraction, the judge's detail, the reward and parts. `stored_turn` rebuilds
the records from those fields so a stored sketch gets the same feedback text the trainer
gave (or would give) it:

* the gate verdict is recomputed (deterministic, milliseconds) from the reply, as the
  trainer gates a reply, or from the code where there is no reply (a curator's edit), so
  its messages keep their line:col and source line;
* the render ran when the row shows a trace of it (a painting, a paint fraction, runtime
  errors or runtime codes); otherwise it was never run (a refused sketch in training) or its
  result never came back (an infrastructure failure), and nothing is said about it;
* the names a render refused (`bare_calls`) are not stored on rollouts: the feedback then
  names the kind of refusal without the names.

No Celery, no model: the editor's web process and the trainer can both call this.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.files.storage import default_storage

from paintenv.feedback import Turn, feedback_text, revision_messages, turn_from_records
from paintenv.paint import paint_reply, paint_source
from paintenv.prompts import build_messages, make_subject
from paintenv.sandbox import RUNTIME_CODES
from training.models import Revision, Rollout, RolloutTurn

__all__ = ["fenced", "revision_chat", "row_painting", "row_reply", "row_turn", "stored_turn"]


def stored_turn(
    *, reply: str | None, code: str, png: str, paint_fraction: float | None, violations: Sequence[str],
    errors: Sequence[Mapping[str, Any]], judge_detail: Mapping[str, Any] | None, reward: float | None,
    parts: Mapping[str, Any] | None, render: Mapping[str, Any] | None = None,
) -> Turn:
    """The Turn of a stored sketch, from its row's fields. `render` is the render task's own
    dict where the row kept it (a Revision's): then it is used as is. `parts` None: no reward
    was computed (nothing is said about one)."""
    painting = paint_reply(reply, renderer=None) if reply else paint_source(code, renderer=None)
    if render is None:
        ran = bool(png) or paint_fraction is not None or bool(errors) or bool(set(violations) & set(RUNTIME_CODES))
        render = {
            "rendered": bool(png) or paint_fraction is not None, "violations": list(violations),
            "errors": list(errors), "paint_fraction": paint_fraction, "bare_calls": {},
        } if ran else None
    score = {"judge": dict(judge_detail)} if judge_detail else None
    return turn_from_records(painting, render=render, score=score, reward=reward, parts=parts)


def row_turn(row: Rollout | RolloutTurn | Revision) -> Turn:
    """The Turn of a stored sketch. A multi-turn Rollout's reward is its chain's combined
    reward, so its last RolloutTurn (the same sketch, with that painting's own reward) is
    used instead. A revision not scored (yet, or ever) has no reward to speak of."""
    row = _last_turn(row)
    if isinstance(row, Revision):
        scored = row.status == Revision.Status.DONE
        return stored_turn(
            reply=row.reply or None, code=row.code, png=row.png, paint_fraction=(row.render or {}).get("paint_fraction"),
            violations=row.violations, errors=(row.render or {}).get("errors", []), judge_detail=row.judge_detail,
            reward=row.reward if scored else None, parts=row.parts if scored else None, render=row.render or None,
        )
    return stored_turn(
        reply=row.reply, code=row.code, png=row.png, paint_fraction=row.paint_fraction, violations=row.violations,
        errors=row.errors, judge_detail=row.judge_detail, reward=row.reward, parts=row.parts,
    )


def _last_turn(row: Rollout | RolloutTurn | Revision) -> Rollout | RolloutTurn | Revision:
    if isinstance(row, Rollout) and row.turns > 1:
        return row.chain.order_by("-turn").first() or row
    return row


def row_painting(row: Rollout | RolloutTurn | Revision) -> bytes | None:
    """The PNG of the painting the feedback on `row` speaks of (a multi-turn rollout's: its
    last turn's), None where it painted nothing."""
    name = _last_turn(row).png
    if not name:
        return None
    with default_storage.open(name, "rb") as fh:
        return fh.read()


def fenced(code: str) -> str:
    """A sketch as a reply that is nothing but its code block."""
    return f"```js\n{code.rstrip()}\n```"


def row_reply(row: Rollout | RolloutTurn | Revision) -> str:
    """What the model 'said' for this sketch: its reply, or a curator's code as a code block."""
    return row.reply or fenced(row.code)


def revision_chat(subject: str, row: Rollout | RolloutTurn | Revision, *, show_painting: bool = False
                  ) -> list[dict[str, Any]]:
    """The chat the trainer gives at turn 2, with `row` as turn 1: the subject's prompt, the
    row's reply, and the feedback on how it came out; with `show_painting` (a vision-language
    base model) the feedback message begins with the row's painting, where it painted one."""
    painting = row_painting(row) if show_painting else None
    return revision_messages(build_messages(make_subject(subject)), row_reply(row), feedback_text(row_turn(row)),
                             painting_png=painting)
