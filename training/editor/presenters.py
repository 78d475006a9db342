"""What the rollout page shows: the two sides of a comparison, the parts table, diagnostics."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from paintenv.reward import Recipe
from training.failures import failure_label
from training.models import Revision, Rollout
from training.trainer.checkpoints import checkpoint_step

PARTS = ("gate", "length", "judge", "quality")
# The recipe's "gate" part is 1 only when the sketch passed the static gate AND rendered
# cleanly, so its row must not blame the gate for a render that failed.
PART_LABELS = {"gate": "gate + render"}


def revision_status(revision: Revision) -> dict:
    """The revision's state in words, and a key for its colour: a finished painting that did
    not pass says whether the gate or the render failed it."""
    if revision.status == Revision.Status.DONE and not revision.passed and revision.violations:
        label = failure_label(revision.violations)
        return {"key": "timeout" if label == "Timed out" else "zero", "text": label}
    return {"key": revision.status, "text": revision.get_status_display()}


def render_diagnostics(errors: list[dict]) -> list[dict]:
    """Runtime errors of a render (with the sketch's line:col when the page knew it)."""
    return [
        {"source": "render", "code": "render_error", "message": e.get("message", ""), "line": e.get("line"),
         "col": e.get("col"), "severity": "error"}
        for e in errors or []
    ]


@dataclass
class Side:
    """One side of a comparison: the original rollout or one of its revisions."""

    key: str  # "original" or the revision id
    label: str
    image_url: str | None
    reward: float | None
    parts: dict
    passed: bool
    violations: list
    status: str
    note: str = ""

    @property
    def failure(self) -> str:
        """How a painting that was judged failed ("Render failed", "Gate failed", ...), else ""."""
        judged = self.status == "done" and not self.passed and self.violations
        return failure_label(self.violations) if judged else ""


def side_of_original(rollout: Rollout, image_url: str | None) -> Side:
    return Side(
        key="original", label=f"Original (step {rollout.step}, #{rollout.position})", image_url=image_url,
        reward=rollout.reward, parts=rollout.parts or {}, passed=rollout.passed, violations=rollout.violations,
        status="done", note=rollout.failure,
    )


def author_label(revision: Revision) -> str:
    """Who wrote the revision: its curator, or the model (and who asked it)."""
    who = revision.created_by.get_username() if revision.created_by else "someone"
    return f"the model (asked by {who})" if revision.by_model else who


def model_used(revision: Revision) -> str:
    """What a model's revision was sampled with, in words ("" before it is written, and for a
    curator's): the run's final adapter, a checkpoint, or the base model alone."""
    if not revision.by_model or revision.status == Revision.Status.WRITING or not revision.reply:
        return ""
    if not revision.adapter:
        return "the base model alone: the run had no saved adapter or checkpoint yet"
    name = Path(revision.adapter).name
    step = checkpoint_step(Path(revision.adapter))
    return f"the adapter of checkpoint step {step}" if step is not None else f"the run's final adapter ({name}/)"


def side_of_revision(revision: Revision, image_url: str | None) -> Side:
    who = "the model" if revision.by_model else author_label(revision)
    return Side(
        key=str(revision.id), label=f"Revision {revision.id} by {who}", image_url=image_url if revision.png else None,
        reward=revision.reward, parts=revision.parts or {}, passed=revision.passed, violations=revision.violations,
        status=revision.status, note=revision.error,
    )


def parts_table(recipe: Recipe, a: Side, b: Side | None) -> list[dict]:
    """Rows of part, weight, A, B and B − A (weighted contribution differences too)."""
    weights = {"gate": recipe.w_gate, "length": recipe.w_length, "judge": recipe.w_judge, "quality": recipe.w_quality}
    rows = []
    for name in PARTS:
        va = a.parts.get(name)
        vb = b.parts.get(name) if b else None
        delta = vb - va if va is not None and vb is not None else None
        failed = name == "gate"  # how each side failed, beside its 0
        rows.append({"name": name, "label": PART_LABELS.get(name, name), "weight": weights[name], "a": va, "b": vb,
                     "delta": delta, "weighted_delta": None if delta is None else delta * weights[name],
                     "a_failed": a.failure if failed else "", "b_failed": b.failure if failed and b else ""})
    delta = b.reward - a.reward if b and a.reward is not None and b.reward is not None else None
    rows.append({"name": "reward", "label": "reward", "weight": None, "a": a.reward, "b": b.reward if b else None,
                 "delta": delta, "weighted_delta": delta, "a_failed": "", "b_failed": ""})
    return rows
