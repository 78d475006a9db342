from celery.signals import worker_init
from django.apps import AppConfig

from training.trainer.preload import forks_train_processes, preload_trainer


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        # A train worker imports the trainer's libraries once, before its pool forks a process per run.
        worker_init.connect(_preload_trainer, weak=False, dispatch_uid="training.preload_trainer")


def _preload_trainer(sender=None, **_kwargs) -> None:
    if sender is None:
        return
    queues = sender.app.amqp.queues.consume_from or {}
    if forks_train_processes(queues=queues, pool=sender.pool_cls):
        preload_trainer()
