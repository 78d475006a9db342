"""The run page in a real browser: launch from the form, then watch steps arrive without a reload
(the end-to-end run keeps its media in object storage and resumes from it)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.support.runs import wait_until_ended
from tests.training.factories import make_run
from training import services
from training.models import Rollout, Run, Step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def lora_b_norm(adapter_dir: Path) -> float:
    from safetensors.numpy import load_file

    tensors = load_file(str(adapter_dir / "adapter_model.safetensors"))
    return float(sum(abs(v).sum() for k, v in tensors.items() if "lora_B" in k))


@pytest.mark.slow
def test_a_run_launched_from_the_form_draws_each_new_step_live_finishes_with_its_paintings_in_the_bucket_and_resumes_from_there(
    signed_in_page, live_server, curator, start_worker, worker_env, painter_model, s3_storage, client
):
    """The studio's end-to-end run: launched as a curator launches one, watched as it trains, read
    back whole (its steps, rollouts, paintings, judge detail and adapter), and resumed on a machine
    that has none of its files. Its studio keeps media in object storage (PAINTAPP_STORAGE=s3, a
    real S3-compatible server), as a studio with workers on other machines does: the workers write
    the paintings and checkpoints to the bucket and the studio reads them back. One run serves all
    three: the finished run's test and the object storage's each trained steps of their own before."""
    worker_env.update(s3_storage.environment(), RENDER_TIMEOUT_S="20")
    # The pool's references go to the bucket as well: this process's storage is the server's.
    pool = make_pool(curator, name="live")
    for queue in ("train", "render", "score"):
        start_worker(queue)
    page = signed_in_page
    page.goto(live_server.url + reverse("training:launch"))
    page.fill("input[name=name]", "browser launch")
    page.select_option("select[name=pool]", str(pool.id))
    page.select_option("select[name=recipe]", "studio-judge-led")
    page.fill("input[name=base_model]", painter_model)  # it paints: each step renders, so steps take seconds
    # The tests' fast run (tests/support/runs.py FAST) as far as the form goes: one group of 4 a step.
    for name, value in {"max_steps": "3", "num_generations": "4", "gradient_accumulation_steps": "4",
                        "max_completion_length": "1024",
                        "warmup_steps": "1", "checkpoint_every": "1"}.items():
        page.fill(f"input[name={name}]", value)
    page.select_option("select[name=render_size]", "128")
    page.click("form.launchform button[type=submit]")
    # The run's own page (`/runs/*/` would match the form's `/runs/new/` at once); a refused
    # launch comes back as the form with its errors, and the assertion says which.
    page.wait_for_function(
        "() => /\\/runs\\/\\d+\\/$/.test(location.pathname) || !!document.querySelector('.launchform [role=alert], .launchform .has-error')"
    )
    errors = page.locator(".launchform [role=alert], .launchform .has-error").all_inner_texts()
    assert re.search(r"/runs/\d+/$", page.url), f"the launch was refused: {errors}"
    run = Run.objects.get(name="browser launch")
    assert page.url.endswith(reverse("training:run", args=[run.id]))
    assert run.hyperparameters["max_steps"] == 3 and run.created_by == curator

    # A marker on the window survives only if the page is never reloaded.
    page.evaluate("window.__notReloaded = true")
    steps_at_load = Step.objects.filter(run=run).count()
    last_step = "Number(document.querySelector('#curves').dataset.lastStep || 0)"
    page.wait_for_function(f"{last_step} >= 1", timeout=240_000)
    page.wait_for_function(f"{last_step} === 3", timeout=240_000)
    assert steps_at_load < 3, "the run ended before the page loaded: no step was seen arriving"
    assert page.evaluate("window.__notReloaded") is True
    # The reward chart holds one point per step, and the live fragment followed the run to its end.
    assert page.evaluate("document.querySelector('#curves').dataset.steps") == "3"
    assert page.locator("#chart-reward canvas").count() == 1
    page.wait_for_selector("#run-live[data-status='finished']", timeout=60_000)
    assert "3 / 3 steps" in page.locator("#run-live .runstatus").inner_text()
    assert page.locator("#steps-table tbody tr").count() == 3

    # The finished run, read back.
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert list(Step.objects.filter(run=run).values_list("step", flat=True)) == [1, 2, 3]
    rollouts = Rollout.objects.filter(run=run)
    assert rollouts.count() == 4 * 3
    step = Step.objects.get(run=run, step=3)
    for key in ("reward", "reward_std", "loss", "ours/gate_pass_rate", "ours/none_count", "ours/late_count",
                "ours/render_s", "ours/update_s", "ours/diversity"):
        assert key in step.metrics, key
    painted = [r for r in rollouts if r.png]
    assert painted, "no rollout was rendered: the painter never passed the gate"
    for r in painted:
        assert r.paint_fraction is not None and r.png.startswith("renders/")
    passed = [r for r in rollouts if r.passed]
    for r in passed:
        assert r.reward is not None and r.parts["judge"] is not None and r.parts["quality"] is not None
        assert len(r.judge_detail["references"]) == 4  # 2 love + 2 okay, both orders each
        assert all(len(ref["orders"]) == 2 for ref in r.judge_detail["references"])
    for r in rollouts.filter(passed=False, failure=""):
        assert r.reward == 0.0
    adapter = Path(run.output_dir) / "adapter"
    assert lora_b_norm(adapter) > 0  # LoRA B starts at zero: any mass means the weights changed
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(painter_model), str(adapter))

    # The paintings and checkpoints are in the bucket, and the studio reads them from there.
    stored = set(s3_storage.keys())
    assert {r.png for r in painted} <= stored  # the render workers wrote them to the bucket
    assert not (Path(worker_env["MEDIA_ROOT"]) / painted[0].png).exists()  # and not to a local folder
    assert {f"checkpoints/run-{run.id}/checkpoint-{n}/complete.json" for n in (1, 2, 3)} <= stored
    client.force_login(curator)
    image = client.get(reverse("training:rollout-image", args=[run.id, painted[0].id]))
    assert image.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"

    # Its GPU box is lost (the reaper marks such a run interrupted) and a new one has none of the
    # run's files; Resume, for one more step, finds the checkpoint in the bucket.
    shutil.rmtree(run.output_dir)
    Run.objects.filter(id=run.id).update(status="interrupted", hyperparameters={**run.hyperparameters, "max_steps": 4})
    run.refresh_from_db()
    services.run_resume(run=run)
    run = wait_until_ended(run)
    assert run.status == "finished", run.error
    assert run.resumed_from.endswith("checkpoint-3") and run.steps_done == 4
    assert f"checkpoints/run-{run.id}/checkpoint-4/complete.json" in s3_storage.keys()


def test_it_overlays_the_runs_chosen_for_comparison(signed_in_page, live_server, curator):
    pool = make_pool(curator, name="overlay")
    base, other = make_run(pool, steps=6, seed=0, name="seed 0"), make_run(pool, steps=4, seed=1, name="seed 1")
    page = signed_in_page
    page.goto(live_server.url + reverse("training:run", args=[base.id]))
    page.wait_for_selector("#curves[data-last-step='6']")
    assert page.get_attribute("#curves", "data-overlaid-runs") == "0"
    page.click("text=Compare with other runs")
    page.check(f"input[name=compare][value='{other.id}']")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(f"**/runs/{base.id}/?compare={other.id}")
    page.wait_for_selector("#curves[data-overlaid-runs='1'][data-last-step='6']")
    legend = page.locator("#chart-reward .u-legend").inner_text()
    assert f"reward #{other.id}" in legend and f"reward #{base.id}" in legend and "(raw)" not in legend
    assert f"#{other.id} seed 1" in page.inner_text("#curves")  # the run's name beside its colour
    # Both runs are in the thirds table too.
    thirds = page.locator("table.thirds").inner_text()
    assert "seed 0" in thirds and "seed 1" in thirds


def test_the_run_header_shows_the_run_finished_and_offers_delete_instead_of_stop_without_a_reload(
    signed_in_page, live_server, curator, screenshot
):
    run = make_run(make_pool(curator, name="header"), steps=12, status="running", name="judge-led, lr 5e-5")
    Run.objects.filter(pk=run.pk).update(hyperparameters={**run.hyperparameters, "max_steps": 14})
    page = signed_in_page
    page.goto(live_server.url + reverse("training:run", args=[run.id]))
    header = page.locator("#run-live .runstatus")
    assert "Running" in header.inner_text() and "12 / 14 steps" in header.inner_text()
    assert "about 40 s left" in page.inner_text("#time-left")  # two steps to go at 20 s each
    assert page.locator("#run-actions button", has_text="Stop").count() == 1
    # The header sits above the charts.
    assert page.evaluate("document.querySelector('#run-live').compareDocumentPosition(document.querySelector('#curves'))") & 4
    page.wait_for_selector("#curves[data-last-step='12']")
    # The factory's steps log no diversity: that chart says so instead of showing an empty grid.
    assert page.locator("#chart-diversity.is-empty").count() == 1 and page.locator("#chart-reward.is-empty").count() == 0
    screenshot(page, "run-page")
    page.evaluate("window.__notReloaded = true")

    Run.objects.filter(pk=run.pk).update(status="finished", steps_done=14)
    page.wait_for_selector("#run-live[data-status='finished']", timeout=10_000)
    assert "Finished" in header.inner_text() and "14 / 14 steps" in header.inner_text()
    assert page.locator("#run-actions button", has_text="Stop").count() == 0
    assert "left" not in page.inner_text("#time-left")
    assert page.locator("#run-actions a", has_text="Delete").count() == 1
    assert page.evaluate("window.__notReloaded") is True


def test_compared_runs_are_drawn_only_over_their_own_steps_and_the_cursor_follows_across_charts(
    signed_in_page, live_server, curator, screenshot
):
    pool = make_pool(curator, name="cursor")
    short, longer = make_run(pool, steps=4, seed=0, name="four steps"), make_run(pool, steps=6, seed=1, name="six steps")
    page = signed_in_page
    page.goto(live_server.url + reverse("training:run", args=[short.id]) + f"?compare={longer.id}")
    page.wait_for_selector("#curves[data-overlaid-runs='1'][data-last-step='4']")
    page.wait_for_function("document.querySelector('#chart-reward').dataset.points")
    # The stacked time split is this run's alone: four points per series, none at steps 5 and 6.
    assert page.get_attribute("#chart-time", "data-points") == "4,4,4,4"
    # Each run's reward line has its own step count; the std band follows this run only.
    points = page.get_attribute("#chart-reward", "data-points").split(",")
    assert "4" in points and "6" in points

    page.hover("#chart-reward .u-over", position={"x": 5, "y": 60})  # the cursor at step 1
    loss = page.locator("#chart-optim .u-legend .u-series").nth(1)
    page.wait_for_function("document.querySelector('#chart-optim .u-legend .u-series:nth-child(2) .u-value').textContent.includes('0.01')")
    assert "loss" in loss.inner_text()
    reward_row = page.locator("#chart-reward .u-legend .u-series:visible", has_text=f"reward #{short.id}").first.inner_text()
    assert "(raw " in reward_row
    assert page.locator("#chart-reward .u-legend .u-series").first.inner_text().strip().endswith("1")  # step 1, an integer
    screenshot(page, "run-page-compare")
