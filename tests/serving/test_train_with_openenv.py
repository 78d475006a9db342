"""examples/train_with_openenv.py, TRL's GRPOTrainer with a reward that plays the studio's
OpenEnv environment, trains the tiny painter for 2 steps against `serve_env`; the studio shows
that run, trained elsewhere, with its 2 steps and 2 x G rollouts, on its run page and in its
gallery in a real browser (live curves, no trainer controls)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from training.models import Rollout, Run, Step

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
G = 4


def test_the_example_script_trains_two_steps_against_serve_env_and_the_studio_shows_them_on_the_run_page_and_gallery(
        start_worker, worker_env, serve, token, painter_model, tmp_path, signed_in_page, live_server, screenshot):
    start_worker("render", concurrency=2)
    start_worker("score")
    server = serve()
    out = tmp_path / "out"
    # The script reads its bearer token from PAINTAPP_ENV_TOKEN: here a curator's token, so the
    # studio names the run's feeder after it ("ada's trainer"); the deployment secret's runs are
    # named after the variable (tests/serving/test_remote_environment_run.py).
    trained = subprocess.run(
        [sys.executable, "examples/train_with_openenv.py", "--model_name_or_path", painter_model,
         "--env_url", server.url, "--studio_run", "tiny painter via openenv", "--prompts", "4",
         "--output_dir", str(out), "--num_generations", str(G), "--per_device_train_batch_size", str(G),
         "--gradient_accumulation_steps", "1", "--max_steps", "2", "--max_completion_length", "1024",
         "--learning_rate", "1e-3", "--top_k", "20", "--top_p", "0.95", "--use_peft", "--lora_r", "8", "--lora_target_modules", "all-linear",
         "--use_cpu", "--report_to", "none", "--save_strategy", "no", "--logging_steps", "1"],
        cwd=REPO, env={**worker_env, "PAINTAPP_ENV_TOKEN": token, "OMP_NUM_THREADS": "1"},
        capture_output=True, text=True, timeout=900)
    assert trained.returncode == 0, trained.stderr[-4000:]
    assert (out / "adapter_model.safetensors").exists()

    run = Run.objects.get()
    assert (run.name, run.status, run.fed_by) == ("tiny painter via openenv", "external", "ada's trainer")
    steps = list(Step.objects.filter(run=run).order_by("step"))
    assert [s.step for s in steps] == [1, 2] and len({s.reset_seed for s in steps}) == 2
    rollouts = Rollout.objects.filter(run=run)
    assert rollouts.count() == 2 * G
    assert all(rollouts.filter(step=s.step).count() == G for s in steps)
    painted = rollouts.exclude(png="")
    assert rollouts.filter(passed=True).exists() and painted.exists(), [(r.violations, r.reply[-200:]) for r in rollouts]
    assert all(s.metrics["ours/episodes"] == G for s in steps)

    # The run page: trained elsewhere, its steps drawn, no trainer controls.
    page = signed_in_page
    page.goto(live_server.url + reverse("training:run", args=[run.id]))
    header = page.locator("#run-live").inner_text()
    assert "Trained elsewhere" in header and "2 steps so far" in header
    assert "ada's trainer" in page.inner_text("#run-elsewhere")
    assert page.locator("#run-actions button", has_text="Stop").count() == 0
    assert page.locator("#run-actions button", has_text="Resume").count() == 0
    page.wait_for_selector("#curves[data-last-step='2']")
    assert page.locator("#chart-reward canvas").count() == 1
    screenshot(page, "external-run-page")

    # The gallery: a card for every episode, and each painting loads.
    page.goto(live_server.url + reverse("training:gallery", args=[run.id]))
    page.locator(".rolloutcard").first.wait_for()
    assert page.locator(".rolloutcard").count() == 2 * G
    images = page.locator("img[src*='/rollouts/']")
    assert images.count() == painted.count()
    page.wait_for_function("[...document.querySelectorAll(\"img[src*='/rollouts/']\")].every(i => i.complete && i.naturalWidth > 0)")
    screenshot(page, "external-run-gallery")
