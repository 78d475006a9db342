"""`score_painting` on a real score worker: taste + features, and a VLM judge over HTTP."""
from __future__ import annotations

import pytest

from curation.models import TasteModel
from curation.selectors import group_references
from paintapp.lib.storage import store_content_addressed
from paintenv.reward import PRESETS, combine
from painting.tasks import score_painting
from tests.curation.factories import make_pool, png_bytes
from tests.support.fake_vlm_server import FakeVLMServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="scoring")


@pytest.fixture
def painting_path():
    return store_content_addressed(png_bytes(size=64), folder="renders")


def test_the_taste_judge_and_features_scorer_give_both_parts_with_both_orders(start_worker, pool, painting_path):
    start_worker("score")
    refs = [m.reference_id for m in group_references(pool, count=4, key=(0, 1, 0))]
    result = score_painting.delay(painting_path, "a peach hibiscus", PRESETS["studio-judge-led"].to_dict(), refs, pool.id).get(timeout=120)
    assert 0.0 <= result["quality"] <= 1.0
    judge = result["judge"]
    assert 0.0 <= judge["score"] <= 1.0 and judge["dropped"] == 0
    assert [r["reference_id"] for r in judge["references"]] == refs
    assert all([o["candidate_first"] for o in r["orders"]] == [True, False] for r in judge["references"])
    assert TasteModel.objects.filter(pool=pool).exists()  # trained on first use
    reward = combine(PRESETS["studio-judge-led"], True, 0.5, judge["score"], result["quality"]).reward
    assert 0.05 < reward < 1.0


def test_a_vlm_judge_over_http_is_judged_in_both_orders(start_worker, worker_env, pool, painting_path):
    with FakeVLMServer() as server:
        worker_env.update(PAINTAPP_VLM_BASE_URL=server.base_url, PAINTAPP_VLM_MODEL="qwen3-vl-test")
        start_worker("score")
        recipe = PRESETS["studio-judge-led"].with_(judge="vlm").to_dict()
        refs = [m.reference_id for m in group_references(pool, count=2, key=(0, 1, 0))]
        result = score_painting.delay(painting_path, "a rose", recipe, refs, pool.id).get(timeout=120)
    assert len(server.requests) == 4  # 2 references × both orders
    assert {r.body["model"] for r in server.requests} == {"qwen3-vl-test"}
    assert all(r.body["temperature"] == 0 for r in server.requests)
    assert result["judge"]["score"] is not None and all(len(r["orders"]) == 2 for r in result["judge"]["references"])


def test_a_vlm_endpoint_that_is_down_makes_the_judge_part_none_with_a_reason(start_worker, worker_env, pool, painting_path):
    server = FakeVLMServer().start()
    dead_url = server.base_url
    server.stop()  # nothing listens there any more
    worker_env.update(PAINTAPP_VLM_BASE_URL=dead_url)
    start_worker("score")
    recipe = PRESETS["studio-judge-led"].with_(judge="vlm").to_dict()
    refs = [m.reference_id for m in group_references(pool, count=2, key=(0, 1, 0))]
    result = score_painting.delay(painting_path, "a rose", recipe, refs, pool.id).get(timeout=180)
    assert result["judge"]["score"] is None
    assert result["reasons"]["judge"] == "no reference could be judged"
    breakdown = combine(PRESETS["studio-judge-led"], True, 1.0, None, result["quality"], reasons=result["reasons"])
    assert breakdown.reward is None and breakdown.unavailable == ["judge: no reference could be judged"]
