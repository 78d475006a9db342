from celery.signals import worker_process_shutdown
from django.apps import AppConfig

from paintenv.renderer import close_renderer


class PaintingConfig(AppConfig):
    name = "painting"
    verbose_name = "Painting: render, score, reward"

    def ready(self) -> None:
        # Each pool process owns one warm browser; close it with the process, not by orphaning it.
        worker_process_shutdown.connect(_close_renderer, weak=False, dispatch_uid="painting.close_renderer")


def _close_renderer(**_kwargs) -> None:
    close_renderer()
