"""manage.py serve_env: serve a frozen pool as an OpenEnv environment (serving/)."""
from __future__ import annotations

import threading

import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from curation.models import Pool
from curation.selectors import pool_get
from paintapp.lib.workers import answering_queues
from painting.pipeline import stage_queues
from painting.selectors import UnknownRecipe, recipe_get
from serving.asgi import build_app
from serving.environment import Served
from serving.models import EnvToken
from training.arguments import MAX_TURNS, RENDER_SIZES


class Command(BaseCommand):
    help = ("Serve a frozen pool as an OpenEnv environment: reset() draws a subject and references, step() "
            "judges the model's reply with the recipe on the render and score workers and stores it as a "
            "rollout of a run trained elsewhere. Clients send a bearer token (PAINTAPP_ENV_TOKEN, or one "
            "created under Runs → Environment tokens).")

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="NAME or NAME:VERSION of a frozen pool")
        parser.add_argument("--recipe", required=True, help="a reward recipe (manage.py recipes lists them)")
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8010)
        parser.add_argument("--revisions", type=int, default=0,
                            help="revision turns per episode: a step that leaves some returns the critique, and "
                                 "the next step revises that painting")
        parser.add_argument("--render-size", type=int, default=600, choices=RENDER_SIZES)
        parser.add_argument("--render-deadline", type=float, default=300.0, help="seconds for a step's render")
        parser.add_argument("--score-deadline", type=float, default=300.0, help="seconds for a step's score")
        parser.add_argument("--max-sessions", type=int, default=settings.ENV_MAX_SESSIONS)

    def handle(self, *args, pool, recipe, host, port, revisions, render_size, render_deadline, score_deadline,
               max_sessions, **options):
        try:
            frozen = pool_get(pool)
        except (Pool.DoesNotExist, ValueError) as exc:
            raise CommandError(f"no pool {pool!r}: {exc}", returncode=2) from exc
        try:
            judged_with = recipe_get(recipe)
        except UnknownRecipe as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if not 0 <= revisions < MAX_TURNS:
            raise CommandError(f"--revisions runs from 0 to {MAX_TURNS - 1}", returncode=2)
        if not settings.ENV_TOKEN and not EnvToken.objects.filter(revoked_at__isnull=True).exists():
            self.stderr.write("No token can play yet: set PAINTAPP_ENV_TOKEN or create one under Runs → "
                              "Environment tokens (or manage.py env_token NAME).")
        # Asked in the background: with no worker the answer takes the broker's inspect timeout.
        threading.Thread(target=self._warn_of_missing_workers, args=(judged_with,), daemon=True).start()
        served = Served(pool_id=frozen.id, recipe=judged_with, revisions=revisions, render_size=render_size,
                        render_deadline_s=render_deadline, score_deadline_s=score_deadline)
        app = build_app(served, idle_s=settings.ENV_IDLE_S, max_sessions=max_sessions)
        self.stdout.write(f"Serving pool {frozen.label} with recipe {judged_with.name} as an OpenEnv environment at "
                          f"http://{host}:{port} ({revisions} revision turns per episode)")
        uvicorn.run(app, host=host, port=port, log_level="info", ws_max_size=16 * 1024 * 1024)

    def _warn_of_missing_workers(self, recipe) -> None:
        queues = stage_queues(recipe)
        answering = answering_queues(wanted=queues)
        missing = [q for q in queues if q not in answering]
        if missing:
            self.stderr.write(f"No worker answers on {', '.join(missing)} yet: steps wait for one (their reward is "
                              "None past the deadline).")
