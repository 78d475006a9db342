"""The SFT pages without a browser: the dataset builder's preview and freeze, a dataset's page
and download, the launch form for SFT and for GRPO from SFT, and the run pages that link them."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.training.test_runs import launch_form_data
from training import services
from training.models import Run, SftDataset, Step
from training.sft_dataset import SftSources

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("launch_without_workers")]


@pytest.fixture
def signed_in(client, curator):
    client.force_login(curator)
    return client


def test_the_builder_previews_each_source_then_freezes_versions(signed_in, pool):
    page = signed_in.get(reverse("training:sft-datasets"))
    assert page.status_code == 200 and "None yet" in page.content.decode()
    data = {"name": "warm", "pool": pool.id, "tiers": "love,okay", "references": "on", "revisions": "on",
            "reward_quantile": "0.75"}
    preview = signed_in.post(reverse("training:sft-datasets"), data | {"preview": "1"}, headers={"HX-Request": "true"})
    html = preview.content.decode()
    kept = pool.members.filter(split="train").count()
    assert 'id="sft-builder"' in html and "<html" not in html  # the fragment
    assert f"Preview: {kept} examples" in html and not SftDataset.objects.exists()
    frozen = signed_in.post(reverse("training:sft-datasets"), data | {"freeze": "1"})
    dataset = SftDataset.objects.get()
    assert frozen.status_code == 302 and frozen["Location"] == reverse("training:sft-dataset", args=[dataset.id])
    assert dataset.label == "warm:v1" and len(dataset.examples) == kept and not dataset.sources["promoted"]
    again = signed_in.post(reverse("training:sft-datasets"), data | {"freeze": "1"}, headers={"HX-Request": "true"})
    assert again["HX-Redirect"] == reverse("training:sft-dataset", args=[SftDataset.objects.get(version=2).id])
    nameless = signed_in.post(reverse("training:sft-datasets"), data | {"name": "", "freeze": "1"})
    assert nameless.status_code == 400 and "give the SFT dataset a name" in nameless.content.decode()
    assert SftDataset.objects.count() == 2


def test_a_datasets_page_counts_its_sources_and_downloads_trl_rows(signed_in, pool, curator):
    dataset = services.sft_dataset_freeze(name="warm", sources=SftSources(pool_id=pool.id), created_by=curator)
    html = signed_in.get(reverse("training:sft-dataset", args=[dataset.id])).content.decode()
    assert "warm:v1" in html and f"{len(dataset.examples)} examples" in html
    assert f"{reverse('training:launch')}?sft_dataset={dataset.id}" in html
    download = signed_in.get(reverse("training:sft-dataset-download", args=[dataset.id]))
    rows = [json.loads(line) for line in b"".join(download.streaming_content).decode().splitlines()]
    assert len(rows) == len(dataset.examples)
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert rows[0]["completion"][0]["content"].startswith("```js\n") and rows[0]["source"] == "references"


def test_the_launch_form_launches_sft_on_a_dataset_then_grpo_from_it(signed_in, pool, curator, model_dir):
    dataset = services.sft_dataset_freeze(name="warm", sources=SftSources(pool_id=pool.id), created_by=curator)
    launch_page = signed_in.get(reverse("training:launch") + f"?sft_dataset={dataset.id}")
    assert 'list="model-presets"' in launch_page.content.decode()  # the presets, each with its memory figure
    assert "Qwen3-4B (a 4B-class small model) — 21.6 GiB on one GPU (arithmetic, default run)" in \
        launch_page.content.decode()
    form = launch_page.context["form"]
    assert (form.initial["kind"], form.initial["sft_dataset"]) == ("sft", dataset.id)
    data = launch_form_data(signed_in, kind="sft", sft_dataset=dataset.id, pool="", base_model=model_dir,
                            recipe="studio-hps-only", num_train_epochs=2, per_device_train_batch_size=2,
                            gradient_accumulation_steps=1)  # no whole GRPO group: read as SFT everywhere
    response = signed_in.post(reverse("training:launch"), data)
    sft = Run.objects.get()
    assert response.status_code == 302, response.content.decode()[:2000]
    assert (sft.kind, sft.sft_dataset, sft.pool, sft.arguments.num_train_epochs) == ("sft", dataset, pool, 2.0)
    missing = signed_in.post(reverse("training:launch"), data | {"sft_dataset": ""})
    assert missing.status_code == 400 and "choose one" in missing.content.decode()

    Run.objects.filter(id=sft.id).update(status="finished", steps_done=sft.max_steps, eval_result={
        "mean_reward": 0.41, "gate_pass_rate": 0.5, "render_rate": 0.5, "samples": 2,
        "base": {"mean_reward": 0.12, "gate_pass_rate": 0.0, "render_rate": 0.0, "samples": 2}})
    Step.objects.create(run=sft, step=1, metrics={"loss": 1.5, "mean_token_accuracy": 0.62, "learning_rate": 1e-3,
                                                  "ours/step_s": 0.4})  # timed, as the trainer writes it
    page = signed_in.get(reverse("training:run", args=[sft.id])).content.decode()
    assert f"{reverse('training:launch')}?init_run={sft.id}" in page and "Train with GRPO from this run" in page
    assert "0.620" in page and "chart-sft-accuracy" in page and "chart-reward" not in page
    assert reverse("training:gallery", args=[sft.id]) not in page  # an SFT run has no rollouts
    form = signed_in.get(reverse("training:launch") + f"?init_run={sft.id}").context["form"]
    assert (form.initial["kind"], form.initial["init_run"], form.initial["base_model"]) == ("grpo", sft.id, model_dir)
    grpo_data = launch_form_data(signed_in, kind="grpo", init_run=sft.id, pool=pool.id, base_model=model_dir,
                                 recipe="studio-hps-only")
    assert signed_in.post(reverse("training:launch"), grpo_data).status_code == 302
    grpo = Run.objects.exclude(id=sft.id).get()
    assert grpo.init_run == sft and grpo.kind == "grpo"
    Run.objects.filter(id=grpo.id).update(init_check={"matches": True, "sha256": "ab" * 32, "parameters": 4096,
                                                      "adapter_sha256": "ab" * 32})
    grpo_page = signed_in.get(reverse("training:run", args=[grpo.id]) + f"?compare={sft.id}").content.decode()
    assert "Starts from the LoRA of SFT run" in grpo_page and "the LoRA weights are its adapter" in grpo_page
    assert "chart-sft-accuracy" in grpo_page and "chart-reward" in grpo_page  # both kinds overlaid
    sft_page = signed_in.get(reverse("training:run", args=[sft.id])).content.decode()
    assert f"#{grpo.id} {grpo.name}" in sft_page and f"compare={grpo.id}" in sft_page
    assert "Base model" in sft_page and "0.120" in sft_page and "0.410" in sft_page  # the warm start's figures
