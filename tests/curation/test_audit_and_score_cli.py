"""audit_judge and paint score on a real pool (taste judge, features scorer, no workers needed)."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image, ImageDraw, ImageFont

from curation.models import JudgeAudit
from curation.services import grade_set, pool_freeze
from tests.curation.factories import make_reference, painting_png

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    for tier in ["love"] * 6 + ["okay"] * 6 + ["reject"] * 4:
        grade_set(reference=make_reference(), curator=curator, tier=tier)
    return pool_freeze(name="audited", curator=curator, tiers=["love", "okay", "reject"], eval_share=0.5)


def test_audit_judge_reports_agreement_order_bias_and_accuracy_and_keeps_the_report(pool, capsys):
    call_command("audit_judge", pool="audited", recipe="studio-judge-led", pairs=8)
    out = capsys.readouterr().out
    assert "self-agreement" in out and "order bias" in out and "accuracy vs held-out grades" in out
    audit = JudgeAudit.objects.get(pool=pool)
    assert audit.results["judged"] == audit.pairs == 8
    # The taste judge ignores presentation order and is deterministic.
    assert audit.results["self_agreement"] == 1.0 and audit.results["order_bias"] == 0.0
    assert 0.0 <= audit.results["accuracy"] <= 1.0


def test_audit_judge_refuses_an_unknown_pool():
    with pytest.raises(CommandError, match="no pool"):
        call_command("audit_judge", pool="nope")


def test_paint_score_prints_every_part_and_the_combined_reward(pool, tmp_path, capsys):
    painting = tmp_path / "painting.png"
    painting.write_bytes(painting_png(size=64))
    sketch = tmp_path / "sketch.js"
    sketch.write_text("function setup(){ createCanvas(600,600,WEBGL); brush.fill('#c0546a', 200); brush.circle(300,300,80,0.2); }")
    call_command("paint", "score", str(painting), pool="audited", recipe="studio-judge-led", sketch=str(sketch), json=True)
    data = json.loads(capsys.readouterr().out)
    parts = data["parts"]
    assert data["reward"] == pytest.approx(0.05 + 0.05 * parts["length"] + 0.60 * parts["judge"] + 0.30 * parts["quality"], abs=1e-5)
    assert len(data["references"]) == 4
    assert all(len(r["orders"]) == 2 for r in data["judge"]["references"])
    assert data["violations"] == [] and data["note"] == "gate passed"


def test_paint_score_says_a_painting_with_writing_in_it_is_refused_as_painted_text(pool, tmp_path, capsys):
    image = Image.new("RGB", (384, 384), (250, 247, 240))
    ImageDraw.Draw(image).text((30, 150), "PICK ME", fill=(40, 40, 90), font=ImageFont.load_default(size=60))
    painting = tmp_path / "painting.png"
    image.save(painting, format="PNG")
    call_command("paint", "score", str(painting), pool="audited", recipe="studio-judge-led", json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["reward"] == 0.0 and data["parts"]["gate"] == 0.0 and data["judge"] is None
    assert data["violations"] == ["painted_text"] and data["note"] == "painted_text"
    call_command("paint", "score", str(painting), pool="audited", recipe="studio-judge-led")
    assert "gate     0   (painted_text)" in capsys.readouterr().out


def test_paint_score_refuses_a_file_that_is_not_a_png(pool, tmp_path):
    bogus = tmp_path / "bogus.png"
    bogus.write_text("not a png")
    with pytest.raises(CommandError, match="not a PNG"):
        call_command("paint", "score", str(bogus), pool="audited")
