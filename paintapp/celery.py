"""The Celery app: three queues, routed by task name.

- `train`  — the GPU trainer (concurrency 1, on the GPU box)
- `render` — headless Chromium renders (any number of machines)
- `score`  — judges and quality scorers (any number of machines), exports, and the reaper of
  runs whose trainer went silent, which Celery beat sends every TRAINER_REAP_EVERY_S
  (`celery -A paintapp beat`; schedule in settings.CELERY_BEAT_SCHEDULE)

Loaded as Celery's Django guide says: `paintapp/__init__.py` imports this app, so it exists
before any `@shared_task` is defined; tasks are found in each app's `tasks.py`. Time limits
are set on the tasks themselves; an app connects its worker signals in its `ready()`, and the
project's own one is at the end of this module.
"""
from __future__ import annotations

import os

from celery import Celery
from celery.signals import celeryd_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

app = Celery("paintapp")
app.config_from_object("django.conf:settings", namespace="CELERY")

QUEUES = ("train", "render", "score")
app.conf.task_queues = [Queue(name) for name in QUEUES]
app.conf.task_default_queue = "score"
# Each task is registered under its own module's name. The render and score tasks were first
# registered as `training.tasks.*`; painting/tasks.py maps those names to them (RENAMED_TASKS), so
# a message queued before the rename still runs, on the same queue.
app.conf.task_routes = {
    "training.tasks.run_training": {"queue": "train"},
    "painting.tasks.render_sketch": {"queue": "render"},
    "painting.tasks.score_painting": {"queue": "score"},
    "training.tasks.render_sketch": {"queue": "render"},  # the names before the rename
    "training.tasks.score_painting": {"queue": "score"},
    "painting.tasks.probe_recipes": {"queue": "score"},  # it probes where the parts run
    "training.tasks.build_run_export": {"queue": "score"},  # never `train`: it would wait behind a run
    "training.tasks.reap_runs": {"queue": "score"},  # never `train`: it finds the train worker dead
    # `train`: the worker a resumed run needs, idle while its run waits for render or score workers.
    "training.tasks.resume_waiting_runs": {"queue": "train"},
    "training.tasks.merge_run_adapter": {"queue": "train"},  # loads the base model, like the trainer
    "training.tasks.revise_with_model": {"queue": "train"},  # the editor's "Ask the model to revise"
    "curation.tasks.*": {"queue": "score"},
}
app.autodiscover_tasks()


@celeryd_init.connect
def _store_results_across_broker_restarts(conf=None, **_kwargs) -> None:
    """A worker retries storing a result while Redis restarts (the waits are in settings). Not
    the web process: a page reading a result must fail fast, never wait a minute."""
    conf.result_backend_always_retry = True


@celeryd_init.connect
def _train_each_task_in_a_fresh_process(conf=None, options=None, **_kwargs) -> None:
    """A worker that consumes `train` runs each task in a new child process, however it was
    started (make, the Procfile, compose, the smoke script, a hand-typed command): vLLM does not
    give back an in-process engine's GPU memory when it is deleted, and CUDA, NCCL and
    torch.compile keep state per process, so a second run (a resume, the next backend of the
    smoke script) in the same child would start on the first one's leftovers."""
    queues = (options or {}).get("queues") or []
    if isinstance(queues, str):
        queues = queues.split(",")
    if "train" in [queue.strip() for queue in queues]:
        conf.worker_max_tasks_per_child = 1
