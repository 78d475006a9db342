from django.apps import AppConfig


class SystemConfig(AppConfig):
    name = "system"
    verbose_name = "System status"

    def ready(self) -> None:
        # Registers the `paintapp_capabilities` inspect command and connects the heartbeat's
        # worker signals, in every worker (and harmlessly in the web process).
        from system import worker_control

        worker_control.connect_signals()
