"""A run's adapter merged into its base model and saved, or pushed to a Hub repository with a
model card: a real tiny model and a real PEFT adapter; the Hub is a local server that speaks
its HTTP API (tests/support/hub_server.py), so everything up to the upload's requests is real."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from django.urls import reverse

from tests.conftest import database_url_for_workers
from tests.curation.factories import make_pool
from tests.support.hub_server import LocalHub
from tests.training.factories import make_run, trained_adapter
from training.export.model import ModelExportError, adapter_merge, model_push

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def trained_run(curator, tiny_model, tmp_path):
    run = make_run(make_pool(curator, name="merge"), steps=6, name="judge-led merged", created_by=curator)
    run.base_model, run.output_dir = tiny_model, str(tmp_path / "run")
    run.eval_result = {"mean_reward": 0.61, "samples": 4, "none": 0,
                       "per_subject": {"a peach hibiscus": {"mean_reward": 0.61, "samples": 4}}}
    run.save()
    trained_adapter(tiny_model, Path(run.output_dir) / "adapter")
    return run


def logits(model, tokens: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=tokens).logits


@pytest.mark.django_db
def test_a_merged_model_loads_back_by_path_and_answers_as_the_base_with_the_adapter(trained_run, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    said = []
    merged = adapter_merge(run=trained_run, out_dir=tmp_path / "merged", progress=said.append)
    assert {"model.safetensors", "config.json", "tokenizer.json", "README.md"} <= set(merged.files)
    assert len(said) == 3 and merged.size_bytes > 0

    tokenizer = AutoTokenizer.from_pretrained(merged.out_dir)
    tokens = tokenizer("brush.fill(", return_tensors="pt").input_ids
    loaded = AutoModelForCausalLM.from_pretrained(merged.out_dir).eval()
    base = AutoModelForCausalLM.from_pretrained(trained_run.base_model).eval()
    base_logits, base_parameters = logits(base, tokens), base.num_parameters()  # before PEFT wraps it in place
    with_adapter = PeftModel.from_pretrained(base, str(Path(trained_run.output_dir) / "adapter")).eval()
    assert torch.allclose(logits(loaded, tokens), logits(with_adapter, tokens), atol=1e-4)
    assert not torch.allclose(logits(loaded, tokens), base_logits, atol=1e-3)  # the adapter is in the weights
    assert loaded.num_parameters() == merged.parameters == base_parameters  # no LoRA modules left


@pytest.mark.django_db
def test_the_model_card_names_the_base_recipe_pool_hyper_parameters_reward_curve_and_evaluation(trained_run, tmp_path):
    merged = adapter_merge(run=trained_run, out_dir=tmp_path / "merged", repo_id="ada/painter")
    card = (merged.out_dir / "README.md").read_text()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["library_name"] == "transformers" and "grpo" in meta["tags"] and "base_model" not in meta  # a local base
    assert card.startswith("---") and "# Model Card for ada/painter" in card
    assert f"`{trained_run.base_model}` (a local model; not on the Hub)" in card
    assert "recipe `studio-judge-led`" in card and f"pool `{trained_run.pool.label}`" in card
    assert "| `learning_rate` | `5e-05` |" in card and "| `lora_r` | `16` |" in card
    assert "| first third | middle third | last third |" in card and "best " in card
    assert "Held-out mean reward 0.610 over 4 samples" in card
    assert "launched by" in card and trained_run.created_by.get_username() in card
    assert "AutoModelForCausalLM.from_pretrained(\"ada/painter\")" in card


@pytest.mark.django_db
def test_the_model_cards_snippet_loads_a_vision_language_base_with_its_processor(curator, tmp_path):
    from training.export.model_card import model_card

    base = tmp_path / "qwen3.5"  # a config is all the card reads: the class it names
    base.mkdir()
    (base / "config.json").write_text('{"model_type": "qwen3_5_moe", "architectures": ["Qwen3_5MoeForConditionalGeneration"]}')
    run = make_run(make_pool(curator, name="vl"), steps=2, created_by=curator)
    run.base_model = str(base)
    card = str(model_card(run, repo_id="ada/vl-painter"))
    assert 'AutoModelForImageTextToText.from_pretrained("ada/vl-painter")' in card
    assert 'processor = AutoProcessor.from_pretrained("ada/vl-painter")' in card


@pytest.mark.django_db
def test_a_run_without_an_adapter_or_into_a_folder_in_use_is_refused_with_the_reason(trained_run, curator, tmp_path):
    untrained = make_run(trained_run.pool, steps=1, status="running")
    with pytest.raises(ModelExportError, match=f"run {untrained.id} has no saved adapter yet"):
        adapter_merge(run=untrained, out_dir=tmp_path / "x")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(ModelExportError, match="is not empty"):
        adapter_merge(run=trained_run, out_dir=busy)
    assert (busy / "keep.txt").read_text() == "mine"


@pytest.mark.django_db
def test_pushing_creates_the_repo_private_and_commits_the_merged_model_with_its_card(trained_run, tmp_path):
    from huggingface_hub import HfApi

    merged = adapter_merge(run=trained_run, out_dir=tmp_path / "merged")
    with LocalHub() as hub:
        pushed = model_push(run=trained_run, repo_id="ada/painter", private=True, merged_dir=merged.out_dir,
                            api=HfApi(endpoint=hub.endpoint, token="hf_test_token"))
    assert hub.created["ada/painter"]["visibility"] == "private"
    [commit] = hub.pushes
    assert commit.repo_id == "ada/painter" and commit.revision == "main"
    assert commit.summary == f"Paint with Code Studio run #{trained_run.id}: judge-led merged"
    assert set(commit.files) == set(merged.files)
    assert commit.files["model.safetensors"] == (merged.out_dir / "model.safetensors").read_bytes()
    assert "# Model Card for ada/painter" in commit.files["README.md"].decode()
    assert pushed.commit_url == f"{hub.endpoint}/ada/painter/commit/{commit.oid}" and pushed.repo_url == f"{hub.endpoint}/ada/painter"


@pytest.mark.django_db(transaction=True)
def test_the_export_model_command_merges_then_pushes_through_hf_endpoint(trained_run, tmp_path):
    out = tmp_path / "merged"
    env = {**os.environ, "DATABASE_URL": database_url_for_workers(), "DJANGO_SETTINGS_MODULE": "paintapp.settings",
           "HF_TOKEN": "hf_test_token", "HF_HUB_OFFLINE": "0"}
    with LocalHub() as hub:
        env["HF_ENDPOINT"] = hub.endpoint
        done = subprocess.run(
            [sys.executable, "manage.py", "export_model", str(trained_run.id), "--merge", str(out),
             "--push-to-hub", "ada/painter", "--private"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert f"Merged run {trained_run.id} into {out}" in done.stdout
    assert f"Pushed run {trained_run.id} to {hub.endpoint}/ada/painter (private)" in done.stdout
    assert [c.repo_id for c in hub.pushes] == ["ada/painter"]
    assert hub.pushes[0].files["README.md"] == (out / "README.md").read_bytes()
    refused = subprocess.run([sys.executable, "manage.py", "export_model", str(trained_run.id), "--merge", str(out)],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "is not empty" in refused.stderr


# -- the run page's button -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_run_pages_merge_runs_on_the_train_worker_and_the_page_says_where_it_saved(
        trained_run, start_worker, client, curator):
    from transformers import AutoModelForCausalLM

    from tests.support.runs import wait_for
    from training.export.model import merge_state

    start_worker("train")
    client.force_login(curator)
    page = client.get(reverse("training:run", args=[trained_run.id])).content.decode()
    assert "Merge and save" in page
    response = client.post(reverse("training:merge", args=[trained_run.id]), follow=True)
    assert "Merging the adapter into the base model" in response.content.decode()
    state = wait_for(lambda: (s := merge_state(trained_run)) and s["status"] in ("done", "failed") and s, 240,
                     "the merge to end")
    assert state["status"] == "done", state["message"]
    page = client.get(reverse("training:run", args=[trained_run.id])).content.decode()
    merged = Path(trained_run.output_dir) / "merged"
    assert f"saved in <code>{merged}</code>" in page and "Merge and save" in page  # it can be merged again
    AutoModelForCausalLM.from_pretrained(merged)


@pytest.mark.django_db
def test_the_merge_button_refuses_a_run_still_training_or_without_an_adapter(trained_run, client, curator):
    client.force_login(curator)
    untrained = make_run(trained_run.pool, steps=1, status="stopped")
    page = client.post(reverse("training:merge", args=[untrained.id]), follow=True).content.decode()
    assert f"run {untrained.id} has no saved adapter yet" in page
    trained_run.status = "running"
    trained_run.save()
    page = client.post(reverse("training:merge", args=[trained_run.id]), follow=True).content.decode()
    assert "the run is still training" in page and "Merge and save" not in page


@pytest.mark.django_db
def test_the_model_cards_evaluation_of_a_run_with_turns_gives_each_turns_mean(curator):
    from training.export.model_card import model_card

    run = make_run(make_pool(curator), steps=2, generations=2)
    run.eval_result = {"mean_reward": 0.7, "samples": 4, "none": 0, "per_subject": {"a peach hibiscus": {"mean_reward": 0.7}},
                       "turns": 2, "turn_mean_rewards": [0.55, 0.7]}
    run.save(update_fields=["eval_result"])
    card = str(model_card(run))
    assert "Held-out mean reward 0.700 over 4 samples" in card
    assert "each turn's mean on the same samples: turn 1 0.550 → turn 2 0.700" in card
