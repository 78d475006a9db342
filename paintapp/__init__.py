"""Paint with Code Studio — Django project package.

The Celery app is loaded here, as Celery's Django guide says, so `@shared_task` binds to it
in every process that starts Django. `paintenv` is a plain library: it imports nothing
from Django or Celery itself (`make lint` checks that contract).
"""
from paintapp.celery import app as celery_app

__all__ = ("celery_app",)
