"""End-to-end revision turns (issue #16): a 2-turn GRPO run with real workers, Chromium and TRL."""
from __future__ import annotations

import pytest

from tests.curation.factories import make_pool
from tests.support.runs import FAST, wait_until_ended
from training import metrics as keys
from training import services
from training.models import Rollout, RolloutTurn, Step
from training.recording import rollout_reward

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="revisions")


def test_a_two_turn_run_stores_every_rollouts_chain_with_the_feedback_it_was_given(workers, pool, tiny_model):
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=tiny_model,
                              arguments=FAST | {"max_steps": 1, "turns": 2, "revision_gain_weight": 0.5})
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    rollouts = list(Rollout.objects.filter(run=run).prefetch_related("chain"))
    assert len(rollouts) == 4
    for rollout in rollouts:
        chain = list(rollout.chain.all())
        assert [t.turn for t in chain] == list(range(1, rollout.turns + 1))
        assert rollout.turns == 2 or chain[-1].reward is None  # a None turn ends the chain
        last = chain[-1]
        assert (rollout.code, rollout.reply, rollout.passed) == (last.code, last.reply, last.passed)
        assert rollout.reward == rollout_reward([t.reward for t in chain], gain_weight=0.5)
        assert last.feedback == ""
        for turn in chain[:-1]:
            assert "Write a new, complete sketch" in turn.feedback
    step = Step.objects.get(run=run, step=1)
    assert keys.turn_reward(1) in step.metrics
    assert RolloutTurn.objects.filter(rollout__run=run).count() == sum(r.turns for r in rollouts)
