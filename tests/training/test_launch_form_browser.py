"""The launch form in a real browser: its notes follow what the curator types."""
from __future__ import annotations

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import make_measured_run, make_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_it_warns_of_a_warm_up_as_long_as_the_run_and_estimates_the_time_from_the_last_runs(
    signed_in_page, live_server, curator
):
    make_run(make_pool(curator, name="paced"), steps=2, generations=4)  # 20 s a step of 4: 5 s a rollout
    page = signed_in_page
    page.goto(live_server.url + reverse("training:launch"))
    assert page.input_value("select[name=pool]") == ""  # the curator chooses the pool
    page.fill("input[name=num_generations]", "8")
    page.fill("input[name=max_steps]", "3")
    page.fill("input[name=warmup_steps]", "1")
    assert page.locator("#warmup-warning").is_hidden()
    assert "About 2 min for 3 steps of 8 rollouts" in page.inner_text("#time-estimate")  # 3 × 8 × 5 s

    page.fill("input[name=warmup_steps]", "3")
    assert page.locator("#warmup-warning").is_visible()
    assert "warm-up (3 steps) is as long as the run (3 steps)" in page.inner_text("#warmup-warning")
    page.fill("input[name=max_steps]", "30")
    assert page.locator("#warmup-warning").is_hidden()
    assert "About 20 min for 30 steps" in page.inner_text("#time-estimate")


def test_choosing_a_recipe_shows_its_parts_as_the_score_worker_finds_them(
    signed_in_page, live_server, curator, start_worker, screenshot,
):
    worker = start_worker("score")
    pool = make_pool(curator, name="parts")
    page = signed_in_page
    page.goto(live_server.url + reverse("training:launch"))
    assert page.inner_text("form.launchform button[type=submit] >> nth=0") == "Launch"  # what Enter presses
    page.select_option("select[name=pool]", str(pool.id))
    page.select_option("select[name=recipe]", "judge-led")  # the change asks the score worker (htmx)
    shown = "(name) => (document.querySelector('#recipe-parts caption') || {innerText: ''}).innerText.includes('Recipe ' + name)"
    page.wait_for_function(shown, arg="judge-led", timeout=20_000)
    assert f"probed on {worker.hostname}" in page.inner_text("#recipe-parts caption")
    assert "PAINTAPP_VLM_BASE_URL is not set" in page.inner_text("#recipe-parts tr.part-judge")
    screenshot(page, "launch-recipe-parts")
    page.select_option("select[name=recipe]", "studio-judge-led")
    page.wait_for_function(shown, arg="studio-judge-led", timeout=20_000)
    assert "every weighted part answers" in page.inner_text("#recipe-parts caption")
    # Faster than a person: the recipe changes again the moment an answer is swapped in, before htmx
    # has settled what came with it. That change is asked about too, not lost.
    page.evaluate("""() => document.body.addEventListener("htmx:afterSwap", () => {
        const recipe = document.querySelector("select[name=recipe]");
        recipe.value = "judge-led";
        recipe.dispatchEvent(new Event("change", {bubbles: true}));
    }, {once: true})""")
    page.click("#recipe-parts ~ button[name=check]")  # asks again for studio-judge-led
    page.wait_for_function(shown, arg="judge-led", timeout=20_000)
    assert page.input_value("select[name=recipe]") == "judge-led"
    assert page.url.endswith(reverse("training:launch"))  # nothing was launched or reloaded


def test_the_generation_measured_on_each_box_is_shown_with_links_to_its_runs(signed_in_page, live_server, curator,
                                                                            screenshot):
    pool = make_pool(curator, name="speeds")
    slow = make_measured_run(pool, host="gpu-box", base_model="Qwen/Qwen3-4B", generation="generate",
                             rates=[70, 150, 148])
    make_measured_run(pool, host="gpu-box", base_model="Qwen/Qwen3-4B", generation="compiled", rates=[40, 2950, 3050])
    make_measured_run(pool, host="gpu-box-2", base_model="Qwen/Qwen3.5-35B-A3B", generation="vllm-colocate",
                      rates=[20, 900])
    page = signed_in_page
    page.goto(live_server.url + reverse("training:launch"))
    table = page.locator("#generation-speeds table")
    assert table.is_visible()
    rows = [row.split("\t") for row in table.locator("tbody tr").all_inner_texts()]
    assert [row[:4] for row in rows] == [
        ["gpu-box", "Qwen/Qwen3-4B", "compiled", "3,000"], ["gpu-box", "Qwen/Qwen3-4B", "generate", "149"],
        ["gpu-box-2", "Qwen/Qwen3.5-35B-A3B", "vllm-colocate", "900"]]
    screenshot(page, "launch-generation-speeds")
    page.click(f"#generation-speeds a:text('#{slow.id}')")
    page.wait_for_url(live_server.url + reverse("training:run", args=[slow.id]))
    page.wait_for_selector("#chart-speed canvas", timeout=15_000)  # the run page draws its generation speed
