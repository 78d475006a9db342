"""Held-out evaluation judges samples through the painting pipeline: None is never a 0."""
from __future__ import annotations

import pytest

from tests.curation.factories import make_pool
from tests.training.factories import BARE_RECT, GOOD, make_run
from training.evaluation import evaluate_replies
from training.models import Run

pytestmark = pytest.mark.django_db


def test_a_sample_lost_to_infrastructure_is_left_out_of_the_mean_and_counted(curator, no_worker):
    run = make_run(make_pool(curator), steps=1, generations=2)
    # No render worker is running: the good sample's render misses its deadline.
    result = evaluate_replies(run, {"a peach hibiscus": [GOOD, BARE_RECT]}, deadline_s=1.0)
    subject = result["per_subject"]["a peach hibiscus"]
    assert subject["rewards"] == [None, 0.0], "the failed gate is a verdict (0); the lost render is None"
    assert subject["none"] == 1 and "not back by the stage's 1 s deadline" in subject["failures"][0]
    assert subject["mean_reward"] == 0.0 and result["mean_reward"] == 0.0
    assert (result["none"], result["late"], result["samples"]) == (1, 0, 2)
    assert Run.objects.get(id=run.id).eval_result["none"] == 1
