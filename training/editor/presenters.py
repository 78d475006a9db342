"""What the rollout page shows: the two sides of a comparison, the parts table, diagnostics."""
from __future__ import annotations

from dataclasses import dataclass

from paintapp.env.reward import Recipe
from training.models import Revision, Rollout

PARTS = ("gate", "length", "judge", "quality")


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


def side_of_original(rollout: Rollout, image_url: str | None) -> Side:
    return Side(
        key="original", label=f"Original (step {rollout.step}, #{rollout.position})", image_url=image_url,
        reward=rollout.reward, parts=rollout.parts or {}, passed=rollout.passed, violations=rollout.violations,
        status="done", note=rollout.failure,
    )


def side_of_revision(revision: Revision, image_url: str | None) -> Side:
    who = revision.created_by.get_username() if revision.created_by else "someone"
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
        rows.append({"name": name, "weight": weights[name], "a": va, "b": vb, "delta": delta,
                     "weighted_delta": None if delta is None else delta * weights[name]})
    delta = b.reward - a.reward if b and a.reward is not None and b.reward is not None else None
    rows.append({"name": "reward", "weight": None, "a": a.reward, "b": b.reward if b else None, "delta": delta,
                 "weighted_delta": delta})
    return rows
