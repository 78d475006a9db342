"""Reference features are measured once per feature set and kept for every later request."""
from __future__ import annotations

import pytest
from django.core.files.storage import default_storage

from curation import measuring
from curation.models import ReferenceFeatures
from curation.services import reference_create
from paintenv import features as feature_code
from tests.curation.factories import png_bytes

pytestmark = pytest.mark.django_db


def painted(colour: tuple[int, int, int]):
    reference, _ = reference_create(png=png_bytes(colour, size=64), width=64, height=64, provenance="upload")
    return reference


@pytest.fixture
def measured(monkeypatch):
    """The images image_features was given."""
    calls = []
    real = feature_code.image_features

    def counting(image):
        calls.append(image)
        return real(image)

    monkeypatch.setattr(feature_code, "image_features", counting)
    return calls


def test_each_image_is_measured_once_and_read_back_the_same_afterwards(measured):
    red, blue = painted((200, 40, 40)), painted((40, 40, 200))

    first = measuring.reference_features(references=[red, blue])
    again = measuring.reference_features(references=[blue, red])

    assert len(measured) == 2
    assert again == [first[1], first[0]]
    with default_storage.open(red.image, "rb") as fh:  # the stored, normalised image
        assert first[0] == pytest.approx(feature_code.image_features(fh.read()))
    assert set(first[0]) == set(feature_code.TASTE_FEATURE_NAMES)
    assert ReferenceFeatures.objects.filter(measured_as=measuring.feature_set_key()).count() == 2


def test_a_new_measurement_version_measures_again_and_replaces_the_kept_values(measured, monkeypatch):
    reference = painted((30, 160, 60))
    measuring.reference_features(references=[reference])
    old_key = measuring.feature_set_key()

    monkeypatch.setattr(feature_code, "MEASUREMENT_VERSION", feature_code.MEASUREMENT_VERSION + 1)
    measuring.reference_features(references=[reference])

    assert len(measured) == 2
    (kept,) = ReferenceFeatures.objects.all()
    assert kept.measured_as == measuring.feature_set_key() != old_key
