"""The HPSv3 scorer: the published architecture (Qwen2-VL + <|Reward|> + reward head) read from
a checkpoint in the published format, run on CPU with a tiny Qwen2-VL built here
(tests/support/tiny_vlm.py); its published mapping of mu; and what it says where it cannot run."""
from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys

import pytest
from safetensors.torch import load_file, save_file

from paintenv.quality import hpsv3 as hpsv3_module
from paintenv.quality import load_quality
from paintenv.quality.hpsv3 import (
    BASE_MODEL_ENV,
    CHECKPOINT_ENV,
    HPSv3Scorer,
    HPSv3Unavailable,
    current_key,
    mu_to_score,
    published_key,
    resized_size,
)
from tests.support.tiny_vlm import random_painting

PROMPT = "a peach hibiscus in loose watercolour"


def painting(seed: int, size: int = 600) -> bytes:
    return random_painting(random.Random(seed), size=size)


@pytest.fixture(scope="module")
def tiny_hpsv3(tiny_vlms) -> dict[str, str]:
    return {"checkpoint": str(tiny_vlms / "HPSv3.safetensors"), "base_model": str(tiny_vlms / "hpsv3-base")}


@pytest.fixture(scope="module")
def scorer(tiny_hpsv3) -> HPSv3Scorer:
    return HPSv3Scorer(**tiny_hpsv3, device="cpu")


# ---------------------------------------------------------------------------------------
# The published mapping, layout and image size


def test_mu_to_score_is_the_published_logistic_of_mu_over_four():
    assert mu_to_score(0.0) == 0.5
    assert mu_to_score(4.0) == pytest.approx(1 / (1 + math.exp(-1)))
    assert mu_to_score(-4.0) == pytest.approx(0.2689414213699951)
    assert mu_to_score(10.0) == pytest.approx(0.9241418199787566)
    assert mu_to_score(4.0) + mu_to_score(-4.0) == pytest.approx(1.0)
    values = [mu_to_score(mu) for mu in (-1e6, -20, -5, -1, 0, 1, 5, 20, 1e6)]
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0


@pytest.mark.parametrize(("published", "today"), [
    ("visual.blocks.0.attn.qkv.weight", "model.visual.blocks.0.attn.qkv.weight"),
    ("visual.merger.mlp.0.weight", "model.visual.merger.mlp.0.weight"),
    ("model.embed_tokens.weight", "model.language_model.embed_tokens.weight"),
    ("model.layers.27.mlp.down_proj.weight", "model.language_model.layers.27.mlp.down_proj.weight"),
    ("model.norm.weight", "model.language_model.norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
    ("rm_head.5.bias", "rm_head.5.bias"),
])
def test_published_keys_map_to_todays_qwen2_vl_layout_and_back(published, today):
    assert current_key(published) == today
    assert published_key(today) == published
    assert current_key(today) == today  # already renamed keys stay as they are


@pytest.mark.parametrize(("size", "resized"), [
    ((600, 600), (420, 420)),  # the renderer's paintings: 600/β = 447.99… floors to 15 patches
    ((512, 512), (448, 448)),
    ((100, 100), (448, 448)),  # small images are scaled up to about the same area
    ((1024, 768), (504, 364)),  # the aspect kept, sides multiples of 28
])
def test_images_are_resized_to_the_published_pixel_count(size, resized):
    assert resized_size(*size) == resized
    width, height = resized
    assert width % 28 == 0 and height % 28 == 0 and width * height <= 256 * 28 * 28


def test_the_image_reaches_the_model_at_the_resized_size_with_one_token_per_merged_patch(scorer):
    from PIL import Image

    inputs = scorer.model_inputs(Image.new("RGB", (600, 600), "white"), PROMPT)
    assert inputs["image_grid_thw"].tolist() == [[1, 30, 30]]  # 420 / 14 patches a side
    assert int((inputs["input_ids"] == scorer.model.config.image_token_id).sum()) == 15 * 15
    assert int((inputs["input_ids"] == scorer.reward_token_id).sum()) == 1


def test_the_tiny_checkpoint_is_in_the_published_format(tiny_hpsv3):
    state = load_file(tiny_hpsv3["checkpoint"])
    prefixes = {key.split(".", 1)[0] for key in state}
    assert prefixes == {"visual", "model", "lm_head", "rm_head"}
    assert sorted(k for k in state if k.startswith("rm_head.")) == [
        f"rm_head.{layer}.{kind}" for layer in (0, 3, 5) for kind in ("bias", "weight")
    ]
    assert state["rm_head.5.weight"].shape[0] == 2  # (mu, sigma)
    assert {str(v.dtype) for k, v in state.items() if k.startswith("rm_head.")} == {"torch.float32"}
    assert {str(v.dtype) for k, v in state.items() if not k.startswith("rm_head.")} == {"torch.bfloat16"}


# ---------------------------------------------------------------------------------------
# Scoring on CPU


def test_hpsv3_scores_a_png_on_cpu_as_the_mapping_of_its_mu(scorer):
    png = painting(1)
    mu, sigma = scorer.reward(png, prompt=PROMPT)
    assert math.isfinite(mu) and math.isfinite(sigma)
    score = scorer.score(png, prompt=PROMPT)
    assert 0.0 < score < 1.0
    assert score == pytest.approx(mu_to_score(mu))
    assert scorer.score(png, prompt=PROMPT) == score  # deterministic


def test_hpsv3_rewards_depend_on_the_image_and_the_prompt(scorer):
    mu = scorer.reward(painting(1), prompt=PROMPT)[0]
    assert scorer.reward(painting(2), prompt=PROMPT)[0] != mu
    assert scorer.reward(painting(1), prompt="a blue iris")[0] != mu


def test_a_head_answering_mu_2_scores_the_published_logistic_of_2(tiny_hpsv3, tmp_path):
    state = load_file(tiny_hpsv3["checkpoint"])
    state["rm_head.5.weight"].zero_()
    state["rm_head.5.bias"][:] = state["rm_head.5.bias"].new_tensor([2.0, 0.5])
    save_file(state, str(tmp_path / "HPSv3.safetensors"))
    constant = HPSv3Scorer(checkpoint=str(tmp_path / "HPSv3.safetensors"), base_model=tiny_hpsv3["base_model"], device="cpu")
    assert constant.reward(painting(3), prompt=PROMPT) == (2.0, 0.5)
    assert constant.score(painting(3), prompt=PROMPT) == pytest.approx(1 / (1 + math.exp(-0.5)))


def test_a_broken_image_scores_none(scorer):
    assert scorer.score(b"not a png", prompt=PROMPT) is None
    png = painting(4)
    assert scorer.score(png[: len(png) // 2], prompt=PROMPT) is None
    assert scorer.score(png, prompt=PROMPT) is not None  # the scorer still works afterwards


def test_load_quality_builds_hpsv3_from_the_environment(tiny_hpsv3, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, tiny_hpsv3["checkpoint"])
    monkeypatch.setenv(BASE_MODEL_ENV, tiny_hpsv3["base_model"])
    scorer = load_quality("hpsv3", params={"device": "cpu"})
    assert scorer.name == "hpsv3"
    assert 0.0 < scorer.score(painting(5), prompt=PROMPT) < 1.0


# ---------------------------------------------------------------------------------------
# Where it cannot run


def test_hpsv3_without_weights_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    with pytest.raises(HPSv3Unavailable, match=CHECKPOINT_ENV):
        HPSv3Scorer()
    monkeypatch.setenv(CHECKPOINT_ENV, "/nonexistent/hpsv3.safetensors")
    with pytest.raises(HPSv3Unavailable, match="/nonexistent/hpsv3.safetensors"):
        load_quality("hpsv3")


def test_hpsv3_without_its_base_model_names_the_environment_variable(tiny_hpsv3, tmp_path):
    with pytest.raises(HPSv3Unavailable, match=BASE_MODEL_ENV):
        HPSv3Scorer(checkpoint=tiny_hpsv3["checkpoint"], base_model=str(tmp_path / "no-model"), device="cpu")


def test_weights_that_are_not_hpsv3s_are_refused(tiny_vlms, tiny_hpsv3, tmp_path):
    with pytest.raises(HPSv3Unavailable, match="not an HPSv3 checkpoint"):  # the LLaVA judge's weights
        HPSv3Scorer(checkpoint=str(tiny_vlms / "judge" / "model.safetensors"), base_model=tiny_hpsv3["base_model"],
                    device="cpu")
    state = load_file(tiny_hpsv3["checkpoint"])
    del state["model.layers.1.mlp.up_proj.weight"]
    save_file(state, str(tmp_path / "HPSv3.safetensors"))
    with pytest.raises(HPSv3Unavailable, match="missing.*layers.1.mlp.up_proj"):
        HPSv3Scorer(checkpoint=str(tmp_path / "HPSv3.safetensors"), base_model=tiny_hpsv3["base_model"], device="cpu")
    state = load_file(tiny_hpsv3["checkpoint"])
    state["model.embed_tokens.weight"] = state["model.embed_tokens.weight"][:-1].clone()  # no <|Reward|> row
    save_file(state, str(tmp_path / "HPSv3.safetensors"))
    with pytest.raises(HPSv3Unavailable, match="token embeddings"):
        HPSv3Scorer(checkpoint=str(tmp_path / "HPSv3.safetensors"), base_model=tiny_hpsv3["base_model"], device="cpu")


def test_a_chat_template_kept_beside_the_processor_config_is_used(tiny_hpsv3, scorer, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(tiny_hpsv3["base_model"], base)
    template = (base / "chat_template.jinja").read_text()
    (base / "chat_template.jinja").unlink()
    (base / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    moved = HPSv3Scorer(checkpoint=tiny_hpsv3["checkpoint"], base_model=str(base), device="cpu")
    assert moved.reward(painting(6), prompt=PROMPT) == scorer.reward(painting(6), prompt=PROMPT)


def test_a_base_whose_chat_template_drops_the_image_is_refused(tiny_hpsv3, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(tiny_hpsv3["base_model"], base)
    (base / "chat_template.jinja").write_text(
        "{% for m in messages %}{% for p in m['content'] %}{{ p.get('text', '') }}{% endfor %}{% endfor %}"
    )
    with pytest.raises(HPSv3Unavailable, match="does not place one"):
        HPSv3Scorer(checkpoint=tiny_hpsv3["checkpoint"], base_model=str(base), device="cpu")


def test_hpsv3_without_torch_or_transformers_says_so(tiny_hpsv3, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # importing it now fails, installed or not
    with pytest.raises(HPSv3Unavailable, match="torch and transformers"):
        HPSv3Scorer(**tiny_hpsv3, device="cpu")


def test_hpsv3_on_a_machine_without_cuda_says_so(tiny_hpsv3, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(HPSv3Unavailable, match="CUDA"):
        HPSv3Scorer(**tiny_hpsv3, device="cuda")


def test_the_hpsv3_module_imports_nothing_heavy_until_a_scorer_is_built():
    assert not hasattr(hpsv3_module, "torch") and not hasattr(hpsv3_module, "transformers")
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, paintenv.quality.hpsv3; print(sorted({'torch', 'transformers'} & set(sys.modules)))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    assert loaded == "[]"
