"""A remote environment's observation becomes a judged sketch by the None rules: what the remote
could not judge is None with the reason, even where it reported a number."""
from __future__ import annotations

import base64

import pytest

from painting.pipeline import PaintJob
from tests.curation.factories import png_bytes
from training.trainer.remote import RemoteJudged, observed

WEIGHTS = {"gate": 0.05, "length": 0.05, "judge": 0.6, "quality": 0.3}


def seen(**changes) -> dict:
    return {"gate_passed": True, "violations": [], "js_errors": [], "render_unavailable": False, "judged": True,
            "judge_score": 0.5, "judge_weight": 0.6, "quality_scored": True, "quality_score": 0.4,
            "paint_fraction": 0.3, "image_png_base64": base64.b64encode(png_bytes()).decode(),
            "breakdown": {"components": {"gate": 1.0, "length": 0.8, "judge": 0.5, "quality": 0.4},
                          "weights": WEIGHTS, "judge": {"score": 0.5, "comparisons": [{"reference": 3, "score": 0.5}]}},
            **changes}


def judged() -> RemoteJudged:
    return RemoteJudged(job=PaintJob(reply="x", prompt="a rose"), painting=None)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_a_judged_painting_keeps_the_remotes_reward_parts_and_painting(media):
    out = observed(judged(), seen(), 0.61)
    assert out.reward == 0.61 and out.passed and out.failure == ""
    assert out.parts == {"gate": 1.0, "length": 0.8, "judge": 0.5, "quality": 0.4}
    assert (media / out.render["png_path"]).read_bytes()[:4] == b"\x89PNG"
    assert out.score["judge"]["references"] == [{"reference_id": 3, "score": 0.5, "orders": []}]


@pytest.mark.parametrize(("changes", "reason"), [
    ({"render_unavailable": True, "gate_passed": True}, "render unavailable"),
    ({"judged": False, "judge_score": None}, "the judge did not answer"),
    ({"quality_scored": False, "quality_score": None}, "the quality scorer did not answer"),
])
def test_what_the_remote_could_not_judge_is_none_even_where_it_reported_zero(media, changes, reason):
    out = observed(judged(), seen(**changes), 0.0)
    assert out.reward is None and out.failure == f"remote environment: {reason}"
    assert out.parts["unavailable"] == [out.failure]


def test_a_gate_refusal_is_the_remotes_zero_and_not_a_failure(media):
    out = observed(judged(), seen(gate_passed=False, violations=["text"], judged=False, quality_scored=False,
                                  image_png_base64=None), 0.0)
    assert out.reward == 0.0 and not out.passed and out.failure == "" and out.render["png_path"] is None


def test_a_reward_missing_for_no_stated_reason_is_none(media):
    assert observed(judged(), seen(), None).failure == "remote environment: no reward"


def test_an_image_that_is_not_a_png_is_not_stored(media):
    out = observed(judged(), seen(image_png_base64=base64.b64encode(b"GIF89a....").decode()), 0.5)
    assert out.render["png_path"] is None
