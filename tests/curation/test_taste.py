"""Training a pool's taste judge (curation/taste.py) on the demo pool's grades: seed sketches
rendered for real, graded by the demo rule, frozen as `make demo` freezes them."""
from __future__ import annotations

import dataclasses
import io

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.urls import reverse

from curation.demo import ensure_demo_curator
from curation.models import Reference
from curation.services import pool_freeze
from curation.taste import taste_model_train
from paintapp.env.judges.taste import TasteJudge, TasteModel

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

# The first sketches of the demo pool (70% good, the rest weak), small: enough held-out
# love/okay pairs to measure, and a couple of minutes of rendering.
DEMO_SKETCHES = 80
RENDER_SIZE = 192
BAND = (0.02, 0.98)


def _png(reference: Reference) -> bytes:
    with default_storage.open(reference.image, "rb") as fh:
        return fh.read()


def _share_in_band(judge: TasteJudge, candidates: list[bytes], references: list[bytes]) -> float:
    probabilities = [judge.compare(c, r, prompt="") for c in candidates for r in references]
    return sum(BAND[0] <= p <= BAND[1] for p in probabilities) / len(probabilities)


def test_on_the_demo_grades_the_calibrated_judge_is_no_longer_stuck_at_0_or_1(client):
    call_command("seed_pool", "--count", str(DEMO_SKETCHES), "--size", str(RENDER_SIZE), "--in-process",
                 "--demo-grades", stdout=io.StringIO(), stderr=io.StringIO())
    pool = pool_freeze(name="demo", curator=ensure_demo_curator())  # love + okay, eval share 0.2, as make demo
    taste = taste_model_train(pool=pool)
    model = TasteModel.from_dict(taste.params)
    assert model.temperature > 1.0 and model.calibration["method"] == "temperature"

    held_out = taste.accuracy["love_vs_okay"]  # the eval split's pairs, which the temperature is fitted on
    assert held_out["pairs"] >= 20
    assert held_out["log_loss"] <= held_out["log_loss_uncalibrated"]
    assert model.calibration["out_of_fold"]["pairs"] > 0  # and the check on pairs it never saw

    members = list(pool.members.select_related("reference"))
    train_ids = {m.reference_id for m in members if m.split == "train"}
    loves = [_png(m.reference) for m in members if m.split == "train" and m.tier == "love"]
    others = [_png(r) for r in Reference.objects.exclude(id__in=train_ids)]  # eval members and rejects
    calibrated = TasteJudge(model=model)
    uncalibrated = TasteJudge(model=dataclasses.replace(model, temperature=1.0))
    before, after = _share_in_band(uncalibrated, others, loves), _share_in_band(calibrated, others, loves)
    assert after >= 0.5 and after > before, (before, after)

    client.force_login(pool.curator)
    page = client.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    assert f"log-loss {held_out['log_loss_uncalibrated']:.3f} → {held_out['log_loss']:.3f}" in page
    assert f"utilities divided by a temperature of {model.temperature:.2f}, fitted on these" in page
    out_of_fold = model.calibration["out_of_fold"]
    assert f"log-loss {out_of_fold['log_loss_before']:.3f} → {out_of_fold['log_loss_after']:.3f}" in page
