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


# --- multi-turn rollouts (revision turns) ---------------------------------------------------


@pytest.fixture
def chain_run(curator):
    """Step 1 of a 2-turn run (weight 0.5): a gate failure fixed, an improvement, a setback, a KEEP."""
    from tests.training.factories import BARE_RECT, FIXED_RECT, GOOD, make_chain_rollout, make_chain_run

    run = make_chain_run(make_pool(curator), turns=2, weight=0.5)
    make_chain_rollout(run, [BARE_RECT, FIXED_RECT], [0.0, 0.4], position=0)
    make_chain_rollout(run, [GOOD, GOOD.replace("#c2185b", "#d81b60")], [0.3, 0.5], position=1)
    make_chain_rollout(run, [GOOD, FIXED_RECT], [0.6, 0.2], position=2)
    make_chain_rollout(run, [GOOD, GOOD], [0.5, 0.5], position=3, kept=True)
    return run


def test_a_multi_turn_rollout_card_shows_each_turns_painting_and_reward_in_order(client, curator, chain_run):
    from training.models import Rollout

    client.force_login(curator)
    html = client.get(reverse("training:gallery", args=[chain_run.id])).content.decode()
    fixed = Rollout.objects.get(run=chain_run, position=0)
    card = re.search(rf'<li class="rolloutcard[^"]*" data-rollout="{fixed.id}".*?</li>\s*</ol>', html, re.S).group(0)
    assert re.findall(r'data-turn="(\d)"', card) == ["1", "2"]
    assert "bare_primitives" in card  # turn 1: the gate's refusal instead of a painting
    assert reverse("training:rollout-turn-image", args=[chain_run.id, fixed.id, 2]) in card
    assert reverse("training:rollout-turn-image", args=[chain_run.id, fixed.id, 1]) not in card
    assert "0.00" in card and "0.40" in card
    assert "2 turns" in html and "0.600" in html  # the combined reward 0.4 + 0.5 × (0.4 − 0)


@pytest.mark.parametrize("chain, positions", [("improved", [0, 1]), ("worse", [2]), ("fixed", [0]), ("same", [3]),
                                             ("kept", [3]), ("", [0, 1, 2, 3])])
def test_the_turns_filter_keeps_rollouts_that_improved_got_worse_fixed_a_gate_failure_or_ended_with_keep(
        client, curator, chain_run, chain, positions):
    from training.models import Rollout

    client.force_login(curator)
    ids = shown(client.get(reverse("training:gallery", args=[chain_run.id]), {"chain": chain}))
    assert sorted(Rollout.objects.filter(id__in=ids).values_list("position", flat=True)) == positions


def test_a_chain_that_ended_with_keep_says_so_on_its_card_and_on_its_page(client, curator, chain_run):
    from training.models import Rollout

    client.force_login(curator)
    kept = Rollout.objects.get(run=chain_run, position=3)
    html = client.get(reverse("training:gallery", args=[chain_run.id])).content.decode()
    card = re.search(rf'<li class="rolloutcard[^"]*" data-rollout="{kept.id}".*?</li>\s*</ol>', html, re.S).group(0)
    assert re.findall(r'<b class="kept"', card) == ['<b class="kept"'] and card.index("KEEP") > card.index('data-turn="2"')
    chain = client.get(reverse("training:rollout", args=[chain_run.id, kept.id])).content.decode()
    turn2 = re.search(r'id="turn-2".*?</li>', chain, re.S).group(0)
    assert '<span class="pill kept"' in turn2 and "the painting of turn 1 stands" in turn2
    assert "The model answered KEEP: the sketch and painting of turn 1 stand." in chain
    fixed = client.get(reverse("training:rollout", args=[chain_run.id, Rollout.objects.get(run=chain_run, position=0).id]))
    assert "pill kept" not in fixed.content.decode()


def test_most_improved_first_ranks_by_the_gain_of_the_last_turn_over_the_first(client, curator, chain_run):
    from training.models import Rollout

    client.force_login(curator)
    ids = shown(client.get(reverse("training:gallery", args=[chain_run.id]), {"sort": "gain-desc"}))
    assert [Rollout.objects.get(id=i).position for i in ids] == [0, 1, 3, 2]  # +0.4, +0.2, 0, −0.4


def test_a_single_turn_run_shows_no_turns_filter_nor_chain(client, curator, run):
    client.force_login(curator)
    html = client.get(reverse("training:gallery", args=[run.id])).content.decode()
    assert 'name="chain"' not in html and "most improved" not in html and "is-chain" not in html


def test_the_rollout_page_shows_the_chain_with_feedback_and_the_code_diff(client, curator, chain_run):
    from training.models import Rollout

    client.force_login(curator)
    rollout = Rollout.objects.get(run=chain_run, position=0)
    response = client.get(reverse("training:rollout", args=[chain_run.id, rollout.id]))
    html = response.content.decode()
    assert response.status_code == 200
    chain = re.search(r'<section class="card chain" id="chain".*?</section>', html, re.S).group(0)
    assert 'id="turn-1"' in chain and 'id="turn-2"' in chain and chain.index('id="turn-1"') < chain.index('id="turn-2"')
    # Turn 1 failed the gate: no painting, and the feedback quotes the offending line.
    turn1 = re.search(r'id="turn-1".*?</li>', chain, re.S).group(0)
    assert "<img" not in turn1 and "gate failed" in turn1 and "bare_primitives" in turn1
    feedback = re.search(r'<pre class="feedbacktext">(.*?)</pre>', chain, re.S).group(1)
    assert "line 5:3" in feedback and "rect(0, 0, 10, 10);" in feedback and "Write a new, complete sketch" in feedback
    assert reverse("training:rollout-turn-image", args=[chain_run.id, rollout.id, 2]) in chain
    # The diff: the removed rect, the added brush calls, counted.
    assert re.search(r'<span class="dl del">-  rect\(0, 0, 10, 10\);</span>', chain)
    assert re.search(r'<span class="dl add">\+  brush.circle\(320, 260, 60\);</span>', chain)
    assert "+2</span>" in chain and "−1</span>" in chain
    formula = re.search(r'id="chain-formula">(.*?)</p>', chain, re.S).group(1)
    assert "0.600" in formula and "0.400" in formula and "0.5" in formula and "+0.400" in formula


def test_a_turns_painting_is_served_and_a_turn_without_one_is_not_found(client, curator, chain_run):
    from training.models import Rollout

    client.force_login(curator)
    rollout = Rollout.objects.get(run=chain_run, position=0)
    painted = client.get(reverse("training:rollout-turn-image", args=[chain_run.id, rollout.id, 2]))
    assert painted.status_code == 200 and painted["Content-Type"] == "image/png"
    assert client.get(reverse("training:rollout-turn-image", args=[chain_run.id, rollout.id, 1])).status_code == 404
    assert client.get(reverse("training:rollout-turn-image", args=[chain_run.id, rollout.id, 3])).status_code == 404


def test_a_single_turn_rollout_page_shows_no_chain(client, curator, run):
    client.force_login(curator)
    rollout = run.rollouts.first()
    html = client.get(reverse("training:rollout", args=[run.id, rollout.id])).content.decode()
    assert 'id="chain"' not in html and "feedbacktext" not in html


def test_the_run_pages_settings_line_says_how_many_turns_and_the_weight_on_their_gain(client, curator, chain_run, run):
    client.force_login(curator)
    settings_line = r'<span id="run-settings"[^>]*>(.*?)</span>'
    multi = re.search(settings_line, client.get(reverse("training:run", args=[chain_run.id])).content.decode()).group(1)
    assert multi.endswith(", 2 turns (reward: last + 0.5 × gain)")
    single = re.search(settings_line, client.get(reverse("training:run", args=[run.id])).content.decode()).group(1)
    assert "turns" not in single


def test_a_turn_that_lost_its_reward_to_infrastructure_says_so_and_the_rollout_reward_is_none(client, curator):
    from tests.training.factories import GOOD, make_chain_rollout, make_chain_run

    client.force_login(curator)
    run = make_chain_run(make_pool(curator), turns=2)
    rollout = make_chain_rollout(run, [GOOD, GOOD.replace("#c2185b", "#ad1457")], [0.5, None])
    assert rollout.reward is None
    html = client.get(reverse("training:rollout", args=[run.id, rollout.id])).content.decode()
    turn2 = re.search(r'id="turn-2".*?</li>', html, re.S).group(0)
    assert "No reward" in turn2 and "no render worker answered" in turn2 and "<img" not in turn2
    assert "Reward <b>None</b>" in re.search(r'id="chain-formula">(.*?)</p>', html, re.S).group(1)


def test_the_code_diff_keeps_removed_lines_that_start_with_dashes_and_counts_each_kind():
    from training.chain_selectors import code_diff

    diff = code_diff("let i = 3;\n--i;\nbrush.circle(1, 2, 3);\n", "let i = 3;\nbrush.circle(1, 2, 4);\n++i;\n")
    assert [(line.kind, line.text) for line in diff.lines] == [
        ("hunk", "@@ -1,3 +1,3 @@"), ("ctx", " let i = 3;"), ("del", "---i;"), ("del", "-brush.circle(1, 2, 3);"),
        ("add", "+brush.circle(1, 2, 4);"), ("add", "+++i;"),
    ]
    assert (diff.added, diff.removed) == (2, 2) and code_diff("same\n", "same\n").lines == ()
