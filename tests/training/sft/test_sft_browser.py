"""The warm start in a real browser, through real workers: a curator previews and freezes an SFT
dataset, launches an SFT run on it from the form, reads its page (curves, its base model's
figures beside its own), and starts a GRPO run from it that continues its adapter."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from training.export.dataset import export_run
from training.models import Run, SftDataset, Step
from training.trainer.warm_start import adapter_file_digest

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]
RUN_PAGE = "() => /\\/runs\\/\\d+\\/$/.test(location.pathname) || !!document.querySelector('.launchform .has-error, .launchform [role=alert]')"


def fill(page, values: dict[str, str]) -> None:
    for name, value in values.items():
        page.fill(f".launchform input[name={name}]", value)


def launched(page) -> Run:
    page.click("form.launchform button[type=submit]")
    page.wait_for_function(RUN_PAGE)
    errors = page.locator(".launchform [role=alert], .launchform .has-error").all_inner_texts()
    assert re.search(r"/runs/\d+/$", page.url), f"the launch was refused: {errors}"
    return Run.objects.get(id=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def test_a_curator_freezes_a_dataset_trains_sft_on_it_and_continues_it_with_grpo(
    signed_in_page, live_server, pool, start_worker, worker_env, painter_model, screenshot, tmp_path
):
    worker_env["RENDER_TIMEOUT_S"] = "20"
    for queue in ("train", "render", "score"):
        start_worker(queue)
    page = signed_in_page
    page.goto(live_server.url + reverse("training:sft-datasets"))
    page.fill("#sft-builder input[name=name]", "warm")
    page.select_option("#sft-builder select[name=pool]", str(pool.id))
    page.select_option("#sft-builder select[name=tiers]", "love,okay")
    page.click("#sft-builder button[name=preview]")
    page.wait_for_selector("#sft-preview")
    train = pool.members.filter(split="train").count()
    assert page.inner_text("#sft-preview tr[data-source=references]").split() == ["references", *[str(train)] * 2,
                                                                                  "0", "0", "0"]
    assert not SftDataset.objects.exists()  # a preview freezes nothing
    screenshot(page, "sft-dataset-preview")
    page.click("#sft-builder button[name=freeze]")
    page.wait_for_url(re.compile(r"/sft-datasets/\d+/$"))
    dataset = SftDataset.objects.get()
    assert dataset.label == "warm:v1" and len(dataset.examples) == train

    page.click("text=Train SFT on it")
    page.wait_for_selector(".launchform")
    assert page.is_checked(".launchform input[name=kind][value=sft]")
    page.wait_for_selector("input[name=num_generations]", state="hidden")  # a GRPO argument, once launch.js ran
    assert page.locator("input[name=num_train_epochs]").is_visible()
    page.select_option("select[name=recipe]", "studio-hps-only")
    page.fill("input[name=base_model]", painter_model)
    fill(page, {"name": "warm start", "num_train_epochs": "1", "per_device_train_batch_size": "2",
                "gradient_accumulation_steps": "1", "learning_rate": "0.001", "warmup_steps": "0",
                "checkpoint_every": "1", "max_completion_length": "1024"})
    page.select_option("select[name=render_size]", "128")
    sft = launched(page)
    assert (sft.kind, sft.sft_dataset, sft.pool, sft.max_steps) == ("sft", dataset, pool, -(-train // 2))
    page.wait_for_selector("#run-live[data-status='finished']", timeout=300_000)
    sft.refresh_from_db()
    steps = list(Step.objects.filter(run=sft).order_by("step"))
    assert [s.step for s in steps] == list(range(1, sft.max_steps + 1))
    assert all(s.reward_mean is None and s.metrics["loss"] > 0 and 0 <= s.metrics["mean_token_accuracy"] <= 1
               for s in steps)
    for figures in (sft.eval_result, sft.eval_result["base"]):  # the adapter's and its base model's
        assert figures["samples"] == 2 and 0 <= figures["gate_pass_rate"] <= 1 and 0 <= figures["render_rate"] <= 1
    page.reload()
    assert page.locator("#run-ladder tbody tr").count() == 2  # the base model and after SFT
    page.wait_for_selector("#chart-sft-accuracy canvas")  # curves.js draws once the metrics are fetched
    screenshot(page, "sft-run-page")

    page.click("#grpo-from-sft")
    page.wait_for_selector(".launchform")
    assert page.is_checked(".launchform input[name=kind][value=grpo]")
    page.wait_for_selector("input[name=num_train_epochs]", state="hidden")
    assert page.locator("input[name=num_generations]").is_visible()
    assert page.input_value("select[name=init_run]") == str(sft.id)
    assert page.input_value("input[name=base_model]") == painter_model
    fill(page, {"max_steps": "1", "num_generations": "2", "gradient_accumulation_steps": "2", "warmup_steps": "0",
                "max_completion_length": "1024"})
    page.select_option("select[name=render_size]", "128")
    grpo = launched(page)
    assert grpo.init_run == sft and grpo.kind == "grpo"
    page.wait_for_selector("#run-live[data-status='finished']", timeout=300_000)
    grpo.refresh_from_db()
    digest, parameters = adapter_file_digest(Path(sft.output_dir) / "adapter")
    assert grpo.init_check["matches"] and (grpo.init_check["sha256"], grpo.init_check["parameters"]) == (digest, parameters)
    page.reload()
    assert "Step 0 check: the LoRA weights are its adapter's" in page.inner_text("#run-init")

    page.goto(live_server.url + reverse("training:run", args=[sft.id]))
    page.click("#run-continued >> text=overlay the curves")
    page.wait_for_selector("#chart-reward canvas")  # the GRPO run's charts join the SFT run's
    assert page.locator("#run-ladder tbody tr").count() == 3
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top of the picture
    screenshot(page, "sft-run-linked-to-grpo")

    exported = export_run(run=sft, out_dir=tmp_path / "export")  # the run carries its frozen dataset
    document = json.loads((exported.out_dir / "run.json").read_text())
    assert (document["kind"], document["sft_dataset"]["label"]) == ("sft", dataset.label)
    rows = (exported.out_dir / "sft_dataset.jsonl").read_text().splitlines()
    assert [json.loads(row)["origin"] for row in rows] == [e["origin"] for e in dataset.examples]
