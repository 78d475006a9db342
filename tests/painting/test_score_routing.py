"""HPSv3 once per GPU: with PAINTAPP_GPU_SCORE_QUEUE set, a recipe that weights HPSv3 is scored on
that queue (one process per GPU there), its probes are asked there, and launches wait for it."""
from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.reward import PRESETS
from painting.fanout import score_queue
from painting.pipeline import PaintJob, Workers, paint_batch, stage_queues
from painting.probing import recipes_probe

HPS_ONLY = PRESETS["hps-only"]  # HPSv3 weighted 0.9, the judge not at all
FEATURES = PRESETS["studio-hps-only"]
GOOD = (Path(__file__).resolve().parents[1] / "paintenv" / "corpus" / "good" / "hibiscus.js").read_text()


@pytest.fixture
def gpu_queue(settings):
    settings.GPU_SCORE_QUEUE = "score-gpu"
    return "score-gpu"


def test_a_recipe_weighting_hpsv3_is_scored_on_the_gpu_queue_and_the_rest_on_score(gpu_queue, settings):
    assert score_queue(HPS_ONLY) == "score-gpu" and stage_queues(HPS_ONLY) == ("render", "score-gpu")
    assert score_queue(FEATURES) == "score" and score_queue(HPS_ONLY.with_(w_quality=0.0)) == "score"
    settings.GPU_SCORE_QUEUE = ""
    assert score_queue(HPS_ONLY) == "score"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_gpu_queues_one_process_worker_takes_the_hpsv3_scores_and_probes(gpu_queue, start_worker, worker_env):
    start_worker("render")
    gpu = start_worker(gpu_queue)  # the only scorer: had the score gone to `score`, nothing would answer
    batch = paint_batch([PaintJob(reply=GOOD, prompt="a peach hibiscus", seed=1)], recipe=HPS_ONLY, pool_id=None,
                        size=128, executor=Workers(), render_deadline_s=120, score_deadline_s=120)
    painted = batch.paintings[0]
    assert painted.passed and painted.score is not None, painted.failure  # the GPU queue's worker scored it
    # HPSv3 cannot run on this CPU machine: its part is None with the reason, never 0.
    assert painted.score["quality"] is None and "quality" in painted.score["reasons"] and painted.reward is None
    [probe] = recipes_probe([HPS_ONLY])
    assert gpu.hostname in probe.where, probe.where  # asked on the GPU queue's worker
    quality = next(part for part in probe.parts if part.part == "quality")
    assert quality.reachable is False and quality.blocks_launch  # HPSv3 is not installed here, as it says
    [unanswered] = recipes_probe([FEATURES])  # no worker on `score`
    assert any("no worker answers on the `score` queue" in part.detail for part in unanswered.parts)
