"""Training a pool's taste judge (curation/taste.py): the calibration it records and the pool
page's report of it. (Calibration on the demo pool's grades: tests/paintenv/test_taste.py.)"""
from __future__ import annotations

import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from curation.taste import taste_model_train
from tests.curation.factories import make_pool

pytestmark = pytest.mark.django_db


def test_the_record_and_the_pool_page_give_the_held_out_log_loss_before_and_after_and_the_temperature(
    signed_in, curator
):
    pool = make_pool(curator, love=8, okay=8, reject=0, eval_share=0.5)
    taste = taste_model_train(pool=pool)
    held_out = taste.accuracy["love_vs_okay"]
    assert held_out["pairs"] == 4 * 4
    assert held_out["log_loss"] <= held_out["log_loss_uncalibrated"]
    calibration, temperature = taste.params["calibration"], taste.params["temperature"]
    assert calibration["method"] == "temperature" and calibration["pairs"] == 16 and temperature >= 1.0

    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    # The page rounds as Django's floatformat does (half up on the decimal), not as Python's
    # format spec does (on the binary float): 1.0225 is 1.023 on the page and may be 1.022 in Python.
    assert f"log-loss {floatformat(held_out['log_loss_uncalibrated'], 3)} → {floatformat(held_out['log_loss'], 3)}" in page
    assert f"utilities divided by a temperature of {floatformat(temperature, 2)}, fitted on these 16 held-out pairs" in page
    out_of_fold = calibration["out_of_fold"]
    assert f"on {out_of_fold['pairs']} train pairs out of fold, which it never saw, log-loss " \
           f"{floatformat(out_of_fold['log_loss_before'], 3)} → {floatformat(out_of_fold['log_loss_after'], 3)}" in page


def test_a_pool_with_too_few_held_out_pairs_says_its_judge_is_not_calibrated(signed_in, curator):
    pool = make_pool(curator, love=4, okay=4, reject=0, eval_share=0.25)
    taste = taste_model_train(pool=pool)
    assert taste.params["temperature"] == 1.0
    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    assert "Not calibrated (temperature 1): fewer than 10 held-out pairs." in page


def test_the_judge_is_scored_against_each_curator_who_graded_the_eval_references(signed_in, curator,
                                                                                 django_user_model):
    from curation.models import Grade
    from curation.services import grade_set

    pool = make_pool(curator, love=8, okay=8, reject=0, eval_share=0.5)
    eval_members = list(pool.members.filter(split="eval").select_related("reference"))
    contrary = django_user_model.objects.create_user(username="contrary", password="x")
    for member in eval_members:  # the opposite of every grade the pool's curator gave
        grade_set(reference=member.reference, curator=contrary, tier="okay" if member.tier == "love" else "love")
    partial = django_user_model.objects.create_user(username="partial", password="x")
    grade_set(reference=eval_members[0].reference, curator=partial, tier="love")
    taste = taste_model_train(pool=pool)

    by_curator = taste.accuracy["by_curator"]
    assert set(by_curator) == {curator.get_username(), "contrary", "partial"}
    own, other = by_curator[curator.get_username()], by_curator["contrary"]
    assert own["own"] and not other["own"] and own["graded"] == other["graded"] == 8
    assert own["love_vs_okay"]["accuracy"] == taste.accuracy["love_vs_okay"]["accuracy"]
    # Every pair reversed: the pairs it ordered like the curator it orders against "contrary".
    assert other["love_vs_okay"]["pairs"] == 16
    assert other["love_vs_okay"]["accuracy"] == pytest.approx(1.0 - own["love_vs_okay"]["accuracy"])
    assert by_curator["partial"]["graded"] == 1 and by_curator["partial"]["all"]["pairs"] == 0
    assert Grade.objects.filter(curator=contrary).count() == 8  # scoring changes no grade

    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    assert 'id="taste-accuracy-by-curator"' in page and "contrary" in page
    low, high = own["love_vs_okay"]["interval"]
    assert f"{low:.3f}–{high:.3f}" in page and "small sample" in page  # 16 pairs < 30
    assert 'id="taste-reliability"' in page and "<svg" in page
