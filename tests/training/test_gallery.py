"""The gallery: a run's rollouts per step or ranked by reward, filtered, paged."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import make_run

pytestmark = pytest.mark.django_db

# Per step: a passed rollout, an infrastructure failure (None), a failed gate (0.0), a passed one.
STEP = [0.6, None, 0.0, 0.25]


@pytest.fixture
def run(curator):
    return make_run(make_pool(curator), steps=12, generations=4,
                    rewards=[[round(r + s / 100, 2) if r else r for r in STEP] for s in range(12)])


def shown(response) -> list[int]:
    return [int(x) for x in re.findall(r'data-rollout="(\d+)"', response.content.decode())]


def steps_shown(response) -> list[int]:
    return [int(x) for x in re.findall(r'class="card steprow" data-step="(\d+)"', response.content.decode())]


def test_it_shows_the_newest_steps_first_with_every_rollout_of_their_group(client, curator, run):
    client.force_login(curator)
    response = client.get(reverse("training:gallery", args=[run.id]))
    assert response.status_code == 200
    assert steps_shown(response) == [12, 11, 10, 9, 8, 7, 6, 5]
    assert len(shown(response)) == 8 * 4
    html = response.content.decode()
    assert "None" in html and "bare_primitives" in html and "infrastructure" in html
    assert reverse("training:rollout", args=[run.id, shown(response)[0]]) in html


def test_it_pages_back_to_earlier_steps_and_jumps_to_a_chosen_step(client, curator, run):
    client.force_login(curator)
    first = client.get(reverse("training:gallery", args=[run.id]))
    earlier = re.search(r'href="\?([^"]*)"[^>]*>← Earlier steps', first.content.decode()).group(1)
    # A page always holds a full window: the earliest one is steps 1-8.
    assert steps_shown(client.get(reverse("training:gallery", args=[run.id]) + "?" + earlier)) == list(range(8, 0, -1))
    assert steps_shown(client.get(reverse("training:gallery", args=[run.id]), {"step": 3})) == list(range(10, 2, -1))


@pytest.mark.parametrize("state, rewards", [
    ("none", {None}),
    ("failed", {0.0}),
    ("passed", "positive"),
])
def test_it_filters_by_state(client, curator, run, state, rewards):
    from training.models import Rollout

    client.force_login(curator)
    ids = shown(client.get(reverse("training:gallery", args=[run.id]), {"state": state}))
    assert len(ids) == 8 * (2 if state == "passed" else 1)
    values = set(Rollout.objects.filter(id__in=ids).values_list("reward", flat=True))
    assert all(v and v > 0 for v in values) if rewards == "positive" else values == rewards


def test_it_filters_by_violation_code_and_reward_range(client, curator, run):
    from training.models import Rollout

    client.force_login(curator)
    url = reverse("training:gallery", args=[run.id])
    failed = Rollout.objects.filter(id__in=shown(client.get(url, {"violation": "bare_primitives"})))
    assert failed.count() == 8 and all("bare_primitives" in r.violations for r in failed)
    ranged = Rollout.objects.filter(id__in=shown(client.get(url, {"reward_min": "0.5", "reward_max": "0.9"})))
    assert ranged.count() == 8 and all(0.5 <= r.reward <= 0.9 for r in ranged)


def test_it_ranks_by_reward_across_steps_and_leaves_none_out(client, curator, run):
    from training.models import Rollout

    client.force_login(curator)
    url = reverse("training:gallery", args=[run.id])
    best = shown(client.get(url, {"sort": "reward-desc"}))
    rewards = [Rollout.objects.get(id=i).reward for i in best]
    assert len(best) == 12 * 3 and rewards == sorted(rewards, reverse=True) and None not in rewards
    worst = shown(client.get(url, {"sort": "reward-asc", "state": "passed"}))
    assert Rollout.objects.get(id=worst[0]).reward == pytest.approx(0.25)


def test_it_says_what_is_wrong_with_a_bad_filter_instead_of_failing(client, curator, run):
    client.force_login(curator)
    response = client.get(reverse("training:gallery", args=[run.id]),
                          {"reward_min": "lots", "sort": "chaos", "reward_max": "0.1"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "reward min must be a number" in html and "unknown sort" in html
    assert len(shown(response)) > 0  # the rest of the filter still applies


def test_an_htmx_request_gets_only_the_results_fragment(client, curator, run):
    client.force_login(curator)
    response = client.get(reverse("training:gallery", args=[run.id]), {"state": "none"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="gallery-results">') and "<html" not in html
    assert len(shown(response)) == 8


def test_an_empty_run_says_so(client, curator):
    client.force_login(curator)
    run = make_run(make_pool(curator, name="empty"), steps=0, status="queued")
    response = client.get(reverse("training:gallery", args=[run.id]))
    assert response.status_code == 200 and "No rollout yet" in response.content.decode()
