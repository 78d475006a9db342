"""Paint with Code Studio — Django project package.

The Celery app is imported here so that `@shared_task` binds to it whenever Django starts.
"""
from paintapp.celery import app as celery_app

__all__ = ("celery_app",)
