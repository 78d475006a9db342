"""Writes of the OpenEnv server when a group's sessions arrive at once."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from paintenv.paint import paint_reply
from paintenv.reward import PRESETS
from painting.pipeline import JudgedSketch, PaintJob
from serving import services
from tests.training.factories import BARE_RECT
from training.models import Rollout, Run, Step
from training.recording import TurnOutcome

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS = 8


def in_threads(count: int, work) -> list[BaseException]:
    """Run work(i) in `count` threads started together (each with its own database connection);
    what they raised."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def thread(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_sessions_that_ask_for_a_new_external_run_at_once_all_get_the_same_one(pool):
    """A group's episodes reset together and each asks for its run by name: one run is made."""
    run_ids: list[int] = []

    def session(_: int) -> None:
        run = services.external_run(pool=pool, recipe=PRESETS["studio-judge-led"], name="tiny painter",
                                    fed_by="ada's trainer")
        run_ids.append(run.id)

    errors = in_threads(SESSIONS, session)

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


def refused_turn() -> TurnOutcome:
    """A reply the gate refuses: worth 0, as the pipeline scores it, with no render."""
    reply = f"```js\n{BARE_RECT}```"
    painted = JudgedSketch(job=PaintJob(reply=reply, prompt="a peach hibiscus"),
                           painting=paint_reply(reply, renderer=None), render=None, reward=0.0)
    return TurnOutcome(reply=reply, painted=painted)


def test_episodes_of_one_run_recorded_while_new_seeds_arrive_each_land_once_without_a_deadlock(pool):
    """A group's episodes are recorded while the next group's first reset numbers its step: the
    step's numbering and the recording both write the run's row, and neither may fail the other."""
    run = services.external_run(pool=pool, recipe=PRESETS["studio-judge-led"], name="tiny painter",
                                fed_by="ada's trainer")
    seeds = range(6)

    def session(_: int) -> None:
        for seed in seeds:
            step = services.episode_step(run=run, seed=seed)
            services.episode_record(run=run, step=step, rollout_id=None, subject="peach hibiscus",
                                    prompt="paint a peach hibiscus", chain=[refused_turn()], reference_ids=[],
                                    fed_by="ada's trainer")

    assert in_threads(SESSIONS, session) == []
    assert list(Step.objects.filter(run=run).order_by("step").values_list("step", flat=True)) == [1, 2, 3, 4, 5, 6]
    for step in Step.objects.filter(run=run):
        positions = Rollout.objects.filter(run=run, step=step.step).values_list("position", flat=True)
        assert sorted(positions) == list(range(SESSIONS)), step.step
        assert step.metrics["ours/episodes"] == float(SESSIONS) and step.reward_mean == 0.0
