"""Whether a base model accepts images, read from its config alone (the tiny text model does
not, the tiny vision-language model does, a Hub model not cached here cannot be told), and the
System page that lists the base models in use with it (here for the model fixtures)."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import make_run
from training.trainer.model_loading import accepts_images

NOT_CACHED = "acme-studio/never-downloaded-7b"


@pytest.mark.slow
def test_the_text_model_does_not_accept_images_the_vl_model_does_and_an_uncached_one_is_unknown(
    tiny_model, tiny_vl_model, tmp_path
):
    assert accepts_images(tiny_model) is False
    assert accepts_images(tiny_vl_model) is True
    assert accepts_images(NOT_CACHED) is None
    assert accepts_images(tmp_path / "nothing-here") is None
    assert accepts_images("not a model name at all") is None


@pytest.mark.slow
@pytest.mark.django_db
def test_the_system_page_says_per_base_model_in_use_whether_it_accepts_images(
    client, curator, settings, tiny_model, tiny_vl_model, tmp_path
):
    settings.MODELS_DIR = tmp_path / "models"
    settings.MODELS_DIR.mkdir()
    (settings.MODELS_DIR / "tiny-painter").symlink_to(tiny_model)  # the launch form's default
    pool = make_pool(curator)
    for name, base_model in (("vl", tiny_vl_model), ("hub", NOT_CACHED), ("vl again", tiny_vl_model)):
        run = make_run(pool, steps=1, generations=2, name=name)
        run.base_model = base_model
        run.save(update_fields=["base_model"])

    client.force_login(curator)
    response = client.get(reverse("system:index"))
    models = response.context["base_models"]
    assert [(m.name, m.is_default, m.runs, m.accepts_images) for m in models] == [
        (str(settings.MODELS_DIR / "tiny-painter"), True, 0, False),
        (tiny_vl_model, False, 2, True),
        (NOT_CACHED, False, 1, None),
    ]
    html = response.content.decode()
    assert re.search(rf'data-base-model="{re.escape(tiny_vl_model)}"\s+data-accepts-images="yes"', html)
    assert re.search(rf'data-base-model="{re.escape(NOT_CACHED)}"\s+data-accepts-images="unknown"', html)
    assert "a vision-language model: it sees its painting with the text feedback" in html
    assert "a text model: it gets the text feedback" in html and "manage.py fetch_model" in html
    # The polled fragment leaves the base models out (their configs are read once a page).
    fragment = client.get(reverse("system:index"), HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "data-base-model" not in fragment.content.decode()
