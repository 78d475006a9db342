"""Runs on the pools of different curators (one pool per curator, frozen in one action) can be
overlaid on the run page: each run is offered for comparison and its curve is drawn."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from curation.services import grade_set, pool_freeze_per_curator
from tests.curation.factories import make_reference
from tests.training.factories import make_run

pytestmark = pytest.mark.django_db


def test_runs_on_each_curators_pool_can_be_compared_on_the_run_page(client, curator, django_user_model):
    jonas = django_user_model.objects.create_user(username="jonas", password="x")
    for i in range(8):
        reference = make_reference()
        grade_set(reference=reference, curator=curator, tier=("love", "okay")[i % 2])
        grade_set(reference=reference, curator=jonas, tier=("okay", "love")[i % 3 == 0])
    ada_pool, jonas_pool = pool_freeze_per_curator(name="taste", curators=["ada", "jonas"], created_by=curator)
    on_ada, on_jonas = make_run(ada_pool, steps=4, name="on ada"), make_run(jonas_pool, steps=4, name="on jonas", seed=2)
    client.force_login(curator)
    page = client.get(reverse("training:run", args=[on_ada.id]))
    assert (on_jonas, False) in page.context["compare_choices"]
    response = client.get(reverse("training:run", args=[on_ada.id]), {"compare": [str(on_jonas.id)]})
    assert [run.pool.label for run in response.context["compared"]] == ["taste-jonas:v1"]
    html = response.content.decode()
    sources = re.search(r'<script id="compare-runs" type="application/json">(.*?)</script>', html, re.S).group(1)
    assert reverse("training:metrics", args=[on_jonas.id]) in sources
    assert f'data-thirds-run="{on_jonas.id}"' in html
