from django.apps import AppConfig


class SystemConfig(AppConfig):
    name = "system"
    verbose_name = "System status"

    def ready(self) -> None:
        # Bind @shared_task to our Celery app (and its settings) in every Django process.
        import paintapp.celery  # noqa: F401
