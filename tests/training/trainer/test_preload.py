"""The trainer's libraries, imported by a train worker before its pool forks a process per run."""
from __future__ import annotations

import sys

import pytest
import torch

from training.trainer import preload


@pytest.mark.parametrize(("queues", "pool", "forks"), [
    (["train"], "prefork", True),
    (["render", "train", "score"], "prefork", True),  # one worker for every queue
    (["render"], "prefork", False),
    (["score"], "prefork", False),
    (["train"], "solo", False),  # runs the task in its own process: nothing is forked
    (["train"], "threads", False),
])
def test_only_a_prefork_worker_that_consumes_train_preloads(queues, pool, forks):
    assert preload.forks_train_processes(queues=queues, pool=pool) is forks


def test_the_pool_may_be_given_as_its_class():
    from celery.concurrency.prefork import TaskPool
    from celery.concurrency.solo import TaskPool as SoloPool

    assert preload.forks_train_processes(queues={"train": None}, pool=TaskPool)
    assert not preload.forks_train_processes(queues={"train": None}, pool=SoloPool)


def test_with_a_gpu_build_of_torch_it_imports_nothing(monkeypatch, caplog):
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert preload.preload_trainer(["colorsys"]) is None
    assert "colorsys" not in sys.modules and "GPU build" in caplog.text


def test_with_a_cpu_build_it_imports_each_module(monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert preload.preload_trainer(["colorsys"]) >= 0.0
    assert "colorsys" in sys.modules


def test_what_it_preloads_is_what_a_run_imports_and_no_tracker():
    assert {"torch", "trl", "peft", "datasets", "training.trainer.generation"} <= set(preload.TRAINER_MODULES)
    assert not {"wandb", "trackio", "vllm"} & {name.split(".")[0] for name in preload.TRAINER_MODULES}


def test_a_module_that_fails_to_import_leaves_the_worker_starting_and_says_why(monkeypatch, caplog):
    monkeypatch.setattr(torch.version, "cuda", None)
    assert preload.preload_trainer(["a_module_that_does_not_exist"]) is None
    assert "not preloaded" in caplog.text and "a_module_that_does_not_exist" in caplog.text
