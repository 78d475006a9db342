"""Recipe part probes: the VLM endpoint against a real local HTTP server, HPSv3's weights, base
model and device as this machine has them, the taste judge from a pool's status."""
from __future__ import annotations

import socket

import pytest

from paintenv.probes import (
    PartProbe,
    RecipeProbe,
    TasteStatus,
    configured,
    default_recipe_name,
    probe_hpsv3,
    probe_recipe,
    probe_taste,
    probe_vlm,
    unprobed_recipe,
)
from paintenv.reward import PRESETS, Recipe
from tests.support.fake_vlm_server import serve


@pytest.fixture
def server():
    yield from serve(served_models=["Qwen/Qwen3-VL-30B-A3B-Instruct", "another-model"])


def test_the_vlm_probe_names_the_unset_endpoint_setting():
    reachable, detail = probe_vlm({})
    assert reachable is False and "PAINTAPP_VLM_BASE_URL is not set" in detail


def test_the_vlm_probe_finds_the_configured_model_listed_by_the_endpoint(server):
    reachable, detail = probe_vlm({"PAINTAPP_VLM_BASE_URL": server.base_url})
    assert reachable is True and detail == f"Qwen/Qwen3-VL-30B-A3B-Instruct at {server.base_url}"
    assert [(r.path, r.body) for r in server.requests] == [("/v1/models", None)]


def test_the_vlm_probe_says_which_models_the_endpoint_serves_when_the_configured_one_is_not(server):
    reachable, detail = probe_vlm({"PAINTAPP_VLM_BASE_URL": server.base_url, "PAINTAPP_VLM_MODEL": "Qwen/Qwen3-VL-8B"})
    assert reachable is False
    assert "does not serve Qwen/Qwen3-VL-8B (it serves Qwen/Qwen3-VL-30B-A3B-Instruct, another-model" in detail


def test_the_vlm_probe_sends_the_key_and_reports_a_refused_one():
    for server in serve(api_key="secret"):
        environ = {"PAINTAPP_VLM_BASE_URL": server.base_url}
        assert probe_vlm(environ | {"PAINTAPP_VLM_API_KEY": "secret"})[0] is True
        reachable, detail = probe_vlm(environ | {"PAINTAPP_VLM_API_KEY": "wrong"})
        assert reachable is False and "refused the key (HTTP 401)" in detail
        assert server.requests[0].headers["authorization"] == "Bearer secret"


def test_the_vlm_probe_reports_an_endpoint_that_is_down():
    for server in serve():
        url = server.base_url
    reachable, detail = probe_vlm({"PAINTAPP_VLM_BASE_URL": url})
    assert reachable is False and detail.startswith(f"{url}/models does not answer: ConnectError")


def test_the_vlm_probe_gives_up_on_an_endpoint_that_never_answers_at_its_timeout():
    with socket.socket() as listener:  # accepts connections (the kernel's backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        reachable, detail = probe_vlm({"PAINTAPP_VLM_BASE_URL": url}, timeout_s=0.3)
    assert reachable is False and "does not answer: ReadTimeout" in detail


def test_the_hpsv3_probe_names_each_thing_missing_here(tmp_path):
    reachable, detail = probe_hpsv3({})
    assert reachable is False and "PAINTAPP_HPSV3_CHECKPOINT is not set" in detail
    assert "the base model Qwen/Qwen2-VL-7B-Instruct is not in the Hugging Face cache" in detail
    weights, base = tmp_path / "HPSv3.safetensors", tmp_path / "qwen2-vl"
    environ = {"PAINTAPP_HPSV3_CHECKPOINT": str(weights), "PAINTAPP_HPSV3_BASE_MODEL": str(base)}
    detail = probe_hpsv3(environ)[1]
    assert f"the checkpoint {weights} (PAINTAPP_HPSV3_CHECKPOINT) does not exist" in detail
    assert f"the base model folder {base} (PAINTAPP_HPSV3_BASE_MODEL) does not exist" in detail
    weights.write_bytes(b"weights")
    base.mkdir()
    assert probe_hpsv3(environ)[1] == f"{base} has no config.json"
    (base / "config.json").write_text("{}")
    assert probe_hpsv3(environ, device="cpu") == (True, f"{weights} on {base}, cpu")
    if not torch_cuda_available():
        assert probe_hpsv3(environ) == (False, "no CUDA device is available")


def torch_cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def test_the_taste_probe_reads_the_pools_model_and_grades():
    assert probe_taste(None) == (None, "trained per pool on its grades: choose a pool to probe it")
    assert probe_taste(TasteStatus("demo:v1", has_model=True)) == (True, "pool demo:v1 has a taste model")
    reachable, detail = probe_taste(TasteStatus("new:v1", has_model=False, train_tiers={"love": 4, "okay": 3}))
    assert reachable is True and "trained on first use from 7 graded references" in detail
    reachable, detail = probe_taste(TasteStatus("loves:v1", has_model=False, train_tiers={"love": 5, "okay": 0}))
    assert reachable is False and "needs two tiers" in detail


def test_a_recipe_probe_covers_every_part_and_probes_only_the_weighted_ones(server):
    environ = {"PAINTAPP_VLM_BASE_URL": server.base_url}
    parts = {p.part: p for p in probe_recipe(PRESETS["hps-only"].with_(quality="features"), environ=environ)}
    assert [parts[name].weight for name in ("gate", "length", "judge", "quality")] == [0.05, 0.05, 0.0, 0.90]
    assert (parts["judge"].reachable, parts["judge"].detail) == (None, "weight 0: not used")
    assert (parts["quality"].reachable, parts["quality"].detail) == (True, "embedded (CPU)")
    assert server.requests == []  # the unweighted vlm judge was not asked
    judged = {p.part: p for p in probe_recipe(PRESETS["judge-led"], environ=environ)}
    assert judged["judge"].reachable is True and judged["judge"].backend == "vlm"


def test_custom_backends_are_probed_by_loading_them():
    loads = Recipe("custom", w_judge=0.0, quality="paintenv.quality.features.FeatureQualityScorer")
    missing = Recipe("custom", w_judge=0.0, quality="paintenv.quality.nope.Scorer")
    assert probe_recipe(loads)[-1].reachable is True
    quality = probe_recipe(missing)[-1]
    assert quality.reachable is False and "cannot load paintenv.quality.nope.Scorer" in quality.detail


def test_a_recipe_probe_blocks_a_launch_only_for_a_weighted_part_that_cannot_answer():
    recipe = PRESETS["judge-led"]
    probe = RecipeProbe(recipe, probe_recipe(recipe, environ={}), where="score@gpu-box")
    assert probe.reachable is False and [p.part for p in probe.blocking] == ["judge", "quality"]
    assert probe.refusal().startswith(
        "recipe 'judge-led': the judge part (vlm, weight 0.6) cannot answer: PAINTAPP_VLM_BASE_URL is not set")
    assert probe.refusal().endswith("(probed on score@gpu-box)")
    unknown = RecipeProbe(recipe, unprobed_recipe(recipe, "no score worker answered"))
    assert unknown.reachable is None and unknown.blocking == []
    assert [PartProbe.from_dict(p.to_dict()) for p in probe.parts] == probe.parts


def test_the_default_recipe_is_the_published_judge_led_only_where_its_parts_are_configured():
    both = {"PAINTAPP_VLM_BASE_URL": "http://gpu-box:8001/v1", "PAINTAPP_HPSV3_CHECKPOINT": "/models/hpsv3.safetensors"}
    assert default_recipe_name(both) == "judge-led"
    assert default_recipe_name({"PAINTAPP_VLM_BASE_URL": "http://gpu-box:8001/v1"}) == "studio-judge-led"
    assert default_recipe_name({}) == "studio-judge-led"
    assert configured(PRESETS["studio-judge-led"], {}) and not configured(PRESETS["hps-only"], {})
