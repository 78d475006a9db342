"""A launch probes its recipe's parts on a score worker and is refused, with the reason, when a
weighted part cannot answer there: the service, the form (and its parts table, an htmx
fragment or the whole page) and `manage.py train`."""
from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.test_runs import launch_form_data
from training import services
from training.models import Run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NO_VLM = "the judge part (vlm, weight 0.6) cannot answer: PAINTAPP_VLM_BASE_URL is not set"
NO_HPSV3 = "the quality part (hpsv3, weight 0.3) cannot answer: PAINTAPP_HPSV3_CHECKPOINT is not set"


@pytest.fixture
def workers(settings, start_worker, monkeypatch):
    settings.LAUNCH_CHECKS_WORKERS = True
    monkeypatch.delenv("PAINTAPP_VLM_BASE_URL", raising=False)
    return start_worker("render", "score")


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="taste", love=5, okay=5, reject=0, eval_share=0.2)


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return str(tmp_path / "model")


def test_a_recipe_whose_weighted_part_cannot_answer_on_the_score_worker_is_refused_with_the_reason(
    workers, pool, model_dir, no_worker,  # the run it launches is never trained: its message is emptied after
):
    with pytest.raises(services.UnreachableParts) as refused:
        services.run_launch(pool=pool, recipe_name="judge-led", base_model=model_dir)
    message = str(refused.value)
    assert message.startswith(f"recipe 'judge-led': {NO_VLM}") and NO_HPSV3 in message
    assert message.endswith(f"(probed on {workers.hostname})") and not Run.objects.exists()
    with pytest.raises(CommandError, match=re.escape(NO_VLM)) as command:
        call_command("train", pool="taste", recipe="judge-led", base_model=model_dir)
    assert command.value.returncode == 3 and not Run.objects.exists()
    assert services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=model_dir).status == "queued"


def test_the_launch_form_shows_the_chosen_recipes_parts_and_refuses_an_unreachable_one(client, curator, workers, pool, model_dir):
    client.force_login(curator)
    data = launch_form_data(client, pool=pool.id, base_model=model_dir, recipe="judge-led")
    refused = client.post(reverse("training:launch"), data)
    page = refused.content.decode()
    assert refused.status_code == 400 and NO_VLM in page and not Run.objects.exists()
    assert 'id="recipe-parts"' in page and "a weighted part cannot answer; a launch is refused" in page

    fragment = client.post(reverse("training:launch"), data | {"recipe": "studio-judge-led", "check": "1"},
                           headers={"HX-Request": "true"})
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in html and html.lstrip().startswith('<table class="orders recipe-parts"')
    assert 'id="recipe-parts"' not in html and "<button" not in html  # what goes into it; the button stays
    assert f"probed on {workers.hostname}" in html and "every weighted part answers" in html
    assert "pool taste:v1 has a taste model" in html

    without_js = client.post(reverse("training:launch"), data | {"check": "1"})  # the button, no htmx
    assert without_js.status_code == 200 and "<html" in without_js.content.decode()
    assert NO_HPSV3.split(": ", 1)[1] in without_js.content.decode() and not Run.objects.exists()
