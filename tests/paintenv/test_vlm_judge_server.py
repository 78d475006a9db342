"""The VLM judge against a real OpenAI-compatible server: `transformers serve` running a tiny
vision-language model built and fine-tuned here (tests/support/tiny_vlm.py, vlm_server.py).

What the hand-written fake server (test_vlm_judge.py) cannot show: that the judge's request
(two PNG data URIs among text parts, response_format, temperature 0, max_tokens) is one a real
server takes, that the images reach a real processor and model, and that a real model's
generated answer comes back as a verdict.
"""
from __future__ import annotations

import json
import random
import threading
import time

import httpx

from paintenv.judges import judge_against_references, load_judge
from paintenv.judges.vlm import VLMJudge
from tests.support.tiny_vlm import JUDGE_ANSWER, random_painting

PROMPT = "Paint a peach hibiscus in loose watercolour."
TRAINED_REASON = json.loads(JUDGE_ANSWER)["reason"]


def paintings(count: int, seed: int = 2024) -> list[bytes]:
    rng = random.Random(seed)
    return [random_painting(rng, size=rng.choice((64, 200, 600))) for _ in range(count)]


def judge_for(server, **overrides) -> VLMJudge:
    config = {"base_url": server.base_url, "model": server.model, "retries": 1, "backoff_s": 0.1, "timeout_s": 60.0}
    return load_judge("vlm", **(config | overrides))


def test_the_server_lists_the_tiny_judge_under_v1_models(vlm_server):
    response = httpx.get(f"{vlm_server.base_url}/models", timeout=10)
    assert response.status_code == 200
    assert [entry["id"] for entry in response.json()["data"]] == [vlm_server.model]


def test_a_real_request_with_two_pngs_gets_the_models_parsed_verdict(vlm_server):
    candidate, reference = paintings(2)
    with judge_for(vlm_server) as judge:
        first = judge.compare(candidate, reference, prompt=PROMPT, candidate_first=True)
        second = judge.compare(candidate, reference, prompt=PROMPT, candidate_first=False)
        # The model answers "A" whatever it is shown: the candidate wins as A and loses as B.
        assert first == (1.0, TRAINED_REASON)
        assert second == (0.0, TRAINED_REASON)
        assert judge.structured_mode == "json_schema"  # accepted (transformers serve does not enforce it)
        assert judge.stats["requests"] == 2 and judge.stats["retries"] == 0 and judge.stats["failures"] == 0


def test_the_served_answer_is_the_json_the_tiny_model_was_trained_to_give(vlm_server):
    candidate, reference = paintings(2, seed=5)
    with judge_for(vlm_server) as judge:
        payload = judge.build_payload(candidate, reference, PROMPT, "json_schema")
    body = httpx.post(f"{vlm_server.base_url}/chat/completions", json=payload, timeout=60).json()
    assert body["choices"][0]["message"]["content"] == JUDGE_ANSWER
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] > 32  # the text and both images' 16 tokens each


def test_judging_against_references_through_the_server_uses_both_orders(vlm_server):
    candidate, *references = paintings(3, seed=11)
    with judge_for(vlm_server) as judge:
        result = judge_against_references(judge, candidate, list(enumerate(references)), prompt=PROMPT)
    # "A" always wins: the candidate wins one order and loses the other against each reference.
    assert result.score == 0.5 and result.dropped == 0
    assert [[order.p_candidate for order in verdict.orders] for verdict in result.references] == [[1.0, 0.0]] * 2


def test_an_unknown_model_name_gives_none_with_the_servers_error(vlm_server):
    candidate, reference = paintings(2)
    with judge_for(vlm_server, model="Qwen/Qwen3-VL-30B-A3B-Instruct") as judge:
        p, reason = judge.compare(candidate, reference, prompt=PROMPT)
        assert p is None
        assert "HTTP 400" in reason and "Qwen/Qwen3-VL-30B-A3B-Instruct" in reason and vlm_server.model in reason
        assert judge.stats["retries"] == 0 and judge.stats["failures"] == 1  # a client error is not retried


def test_a_server_stopped_mid_run_gives_none_with_the_reason(start_vlm_server):
    server = start_vlm_server()
    candidate, *references = paintings(7, seed=3)
    outcome = []
    with judge_for(server, retries=2, backoff_s=0.1) as judge:
        run = threading.Thread(target=lambda: outcome.append(  # one call at a time: a run under way, then the stop
            judge_against_references(judge, candidate, list(enumerate(references)), prompt=PROMPT, concurrency=1)
        ))
        run.start()
        while judge.stats["requests"] < 3 and run.is_alive():  # the run is under way
            time.sleep(0.01)
        server.stop()  # SIGTERM: the answer in flight is finished, then nothing listens
        run.join(timeout=120)
        result = outcome[0]
        assert result.references[0].score == 0.5  # judged before the stop
        assert 1 <= result.dropped < len(references)  # dropped, never scored as a loss
        assert result.score == 0.5  # the mean over the references that resolved
        failed = [order for verdict in result.references for order in verdict.orders if order.p_candidate is None]
        assert all(order.reason.startswith("vlm judge failed after 3 attempt(s): ") for order in failed)
        assert any("ConnectError" in order.reason for order in failed)
        p, reason = judge.compare(candidate, references[0], prompt=PROMPT)  # and later calls too
        assert p is None and "ConnectError" in reason
