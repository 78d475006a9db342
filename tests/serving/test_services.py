"""Writes of the OpenEnv server when a group's sessions arrive at once."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from paintenv.reward import PRESETS
from serving import services
from training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS = 8


def test_sessions_that_ask_for_a_new_external_run_at_once_all_get_the_same_one(pool):
    """A group's episodes reset together and each asks for its run by name: one run is made."""
    start = threading.Barrier(SESSIONS)
    run_ids: list[int] = []
    errors: list[BaseException] = []

    def session() -> None:
        try:
            start.wait()
            run = services.external_run(pool=pool, recipe=PRESETS["studio-judge-led"], name="tiny painter",
                                        fed_by="ada's trainer")
            run_ids.append(run.id)
        except BaseException as exc:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=session) for _ in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(run_ids) == SESSIONS
    assert Run.objects.count() == 1
    run = Run.objects.get()
    assert (run.name, run.status, run.fed_by) == ("tiny painter", Run.Status.EXTERNAL, "ada's trainer")
    assert set(run_ids) == {run.id}


def test_a_run_of_the_same_name_for_another_token_is_another_run(pool):
    recipe = PRESETS["studio-judge-led"]
    ada = services.external_run(pool=pool, recipe=recipe, name="tiny painter", fed_by="ada's trainer")
    bob = services.external_run(pool=pool, recipe=recipe, name="tiny painter", fed_by="bob's trainer")
    again = services.external_run(pool=pool, recipe=recipe, name="  tiny   painter ", fed_by="ada's trainer")
    assert ada.id != bob.id
    assert again.id == ada.id
    assert Run.objects.count() == 2
