"""Thin Celery tasks: they take plain values or ids and call services.

Routes are in `paintapp/celery.py` (render_sketch -> `render`, score_painting -> `score`).
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from paintenv.reward import Recipe
from painting import services
from painting.results import RenderResult, ScoreResult

RENDER_OPTIONS = {"acks_late": True, "time_limit": settings.RENDER_TIME_LIMIT_S,
                  "soft_time_limit": settings.RENDER_TIME_LIMIT_S - 30}
SCORE_OPTIONS = {"acks_late": True, "time_limit": settings.SCORE_TIME_LIMIT_S,
                 "soft_time_limit": settings.SCORE_TIME_LIMIT_S - 30}


def render_sketch_run(
    code: str, seed: int = 0, size: int | None = None, strictness: str = "allowlist", render_failed_gate: bool = False,
    check_determinism: bool = False, twin: bool = False,
) -> RenderResult:
    """Gate + sandboxed render of one sketch (+ the painted-text check, and a second render when
    `check_determinism`); the PNG is stored, its path returned.

    Idempotent: the same (code, seed, size) stores the same content-addressed file. A bad
    sketch is a verdict in the result; only infrastructure failure (RenderUnavailable)
    fails the task, which callers turn into a None reward.
    """
    return services.painting_render(
        code=code, seed=seed, size=size, strictness=strictness, render_failed_gate=render_failed_gate,
        check_determinism=check_determinism, twin=twin,
    )


def score_painting_run(png_path: str, prompt: str, recipe: dict, reference_ids: list[int], pool_id: int | None = None) -> ScoreResult:
    """Judge (both orders, against the group's references) and quality parts of one painting."""
    return services.painting_score_stored(
        png_path=png_path, prompt=prompt, recipe=recipe, reference_ids=reference_ids, pool_id=pool_id
    )


render_sketch = shared_task(name="painting.tasks.render_sketch", **RENDER_OPTIONS)(render_sketch_run)
score_painting = shared_task(name="painting.tasks.score_painting", **SCORE_OPTIONS)(score_painting_run)
# The names these two were registered under before they moved to this app: a message queued
# under an old name (by a process not yet upgraded) runs the same function, with the same limits.
shared_task(name="training.tasks.render_sketch", **RENDER_OPTIONS)(render_sketch_run)
shared_task(name="training.tasks.score_painting", **SCORE_OPTIONS)(score_painting_run)


@shared_task(name="painting.tasks.probe_recipes", acks_late=True, bind=True, time_limit=60, soft_time_limit=45)
def probe_recipes(self, recipes: list[dict], pool_id: int | None = None) -> dict:
    """Probe each recipe's parts on this score worker (it is where they would run)."""
    probes = services.recipes_probe_here(
        [Recipe.from_dict(r) for r in recipes], pool_id=pool_id, where=self.request.hostname or "a score worker"
    )
    return {"where": probes[0].where if probes else "", "recipes": [[p.to_dict() for p in probe.parts] for probe in probes]}

