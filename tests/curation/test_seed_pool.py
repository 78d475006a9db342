"""`seed_pool` renders the seed sketches through the painting pipeline into references."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from curation.models import Provenance, Reference

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def test_it_renders_seed_sketches_in_process_into_graded_references_once(settings, tmp_path, capsys):
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("seed_pool", "--count", "3", "--size", "128", "--in-process", "--demo-grades")
    seeded = Reference.objects.filter(provenance=Provenance.SEED_GENERATOR)
    assert seeded.count() == 3
    assert all("function setup" in r.source and r.seed is not None for r in seeded)
    assert all(r.grades.exists() for r in seeded)
    assert "Seeded 3 new references (0 already there, 0 failed)" in capsys.readouterr().out
    call_command("seed_pool", "--count", "3", "--size", "128", "--in-process")
    assert seeded.count() == 3, "the same sketches render to the same paintings: nothing is added twice"


def test_without_a_render_worker_it_refuses_with_exit_3_before_rendering(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    with pytest.raises(CommandError, match="no worker answers on the `render` queue") as raised:
        call_command("seed_pool", "--count", "2", "--size", "128")
    assert raised.value.returncode == 3 and not Reference.objects.exists()
