"""Recipe probes, asked where the parts run: each part of a recipe, reachable now or why not.

The judge and quality parts run on the score workers, which may be other machines with their
own VLM endpoint, HPSv3 package and GPU, so a small task (`probe_recipes`, queue `score`,
short expiry) probes there (services.recipes_probe_here; the probe logic itself is
`paintenv.probes`). A recipe that scores nothing is probed here: its gate and length are
computed in-process. The launch refusal, the launch form's parts table and `manage.py
recipes` read these.
"""
from __future__ import annotations

from celery.exceptions import TimeoutError as ResultTimeout
from django.conf import settings

from paintapp.lib.workers import answering_queues, missing_worker_message
from paintenv.probes import PartProbe, RecipeProbe, unprobed_recipe
from paintenv.reward import Recipe
from painting.fanout import score_queue
from painting.pipeline import stage_queues
from painting.services import recipes_probe_here
from painting.tasks import probe_recipes


def recipes_probe(recipes: list[Recipe], *, pool_id: int | None = None) -> list[RecipeProbe]:
    """Each recipe's parts as a score worker of its score queue finds them now (`score`, or the
    GPU score queue for a recipe that weights HPSv3: fanout.score_queue).

    With no score worker answering, or none answering the probe within
    RECIPE_PROBE_TIMEOUT_S (all busy scoring another run), the scored parts are unknown
    (None) with the reason: a missing worker is the launch's NoWorkers refusal, not this one."""
    queues = [score_queue(recipe) if len(stage_queues(recipe)) > 1 else None for recipe in recipes]
    found: dict[int, RecipeProbe] = {}
    local = [i for i, queue in enumerate(queues) if queue is None]
    for i, probe in zip(local, recipes_probe_here([recipes[i] for i in local], pool_id=pool_id, where="this process")):
        found[i] = probe
    for queue in dict.fromkeys(q for q in queues if q is not None):
        indices = [i for i, q in enumerate(queues) if q == queue]
        for i, probe in zip(indices, _probe_on(queue, [recipes[i] for i in indices], pool_id)):
            found[i] = probe
    return [found[i] for i in range(len(recipes))]


def _probe_on(queue: str, recipes: list[Recipe], pool_id: int | None) -> list[RecipeProbe]:
    if queue not in answering_queues(wanted=[queue]):
        reason = missing_worker_message(queue)
    else:
        timeout = settings.RECIPE_PROBE_TIMEOUT_S
        pending = probe_recipes.apply_async(([r.to_dict() for r in recipes], pool_id), expires=timeout, queue=queue)
        try:
            answer = pending.get(timeout=timeout, disable_sync_subtasks=False)
        except ResultTimeout:
            pending.revoke()
            reason = f"no score worker answered the probe within {timeout:g} s (all busy?)"
        else:
            return [
                RecipeProbe(recipe, [PartProbe.from_dict(part) for part in parts], answer["where"])
                for recipe, parts in zip(recipes, answer["recipes"], strict=True)
            ]
    return [RecipeProbe(recipe, unprobed_recipe(recipe, reason)) for recipe in recipes]


def recipe_probe(recipe: Recipe, *, pool_id: int | None = None) -> RecipeProbe:
    return recipes_probe([recipe], pool_id=pool_id)[0]
