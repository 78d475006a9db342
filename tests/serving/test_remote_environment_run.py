"""A studio run whose rewards come from a remote OpenEnv environment (the run argument
`environment_url`): here another `serve_env` of the same studio, with its own workers."""
from __future__ import annotations

import pytest

from tests.serving.conftest import DEPLOYMENT_SECRET
from tests.support.runs import FAST, wait_until_ended
from training import services
from training.models import Rollout, Run, Step

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_run_with_an_environment_url_trains_two_steps_on_the_remote_environments_rewards(
        start_worker, worker_env, serve, pool, painter_model):
    worker_env["PAINTAPP_REMOTE_ENV_TOKEN"] = DEPLOYMENT_SECRET
    start_worker("train")
    start_worker("render", concurrency=2)
    start_worker("score")
    server = serve()
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=painter_model,
                              arguments=FAST | {"max_steps": 2, "max_completion_length": 1024,
                                                "environment_url": server.url})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2]
    ours = Rollout.objects.filter(run=run)
    assert ours.count() == 2 * 4

    remote = Run.objects.get(status="external")  # what the remote studio kept of the same episodes
    assert (remote.name, remote.fed_by) == (run.name, "PAINTAPP_ENV_TOKEN")
    theirs = Rollout.objects.filter(run=remote)
    assert theirs.count() == 2 * 4 and Step.objects.filter(run=remote).count() == 2  # one reset seed a group
    assert sorted(r.reward for r in ours if r.reward is not None) == sorted(
        r.reward for r in theirs if r.reward is not None)
    passed = ours.filter(passed=True)
    assert passed.exists(), [(r.violations, r.failure) for r in ours]
    for rollout in passed:
        assert rollout.png.startswith("renders/") and rollout.parts["judge"] is not None
        assert len(rollout.reference_ids) == 4 and rollout.code
    assert all(r.failure == "" for r in ours if r.reward is not None)
