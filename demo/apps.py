from django.apps import AppConfig


class DemoConfig(AppConfig):
    """What `make demo` builds: the tiny models, the demo curator and its seeded, graded pool."""

    name = "demo"
    verbose_name = "Demo setup"
