"""A run's sealed checkpoints copied to object storage (a real S3-compatible server) and brought
back on a machine that lacks them; a copy whose seal never arrived is never resumed from."""
from __future__ import annotations

from pathlib import Path

import pytest

from training.trainer import checkpoint_store
from training.trainer.checkpoints import SEAL, is_complete, seal


def checkpoint(output_dir: Path, step: int) -> Path:
    folder = output_dir / f"checkpoint-{step}"
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_model.safetensors").write_bytes(bytes(range(256)) * (step + 1))
    (folder / "optimizer.pt").write_bytes(b"adam" * 1000 * step)
    (folder / "trainer_state.json").write_text(f'{{"global_step": {step}}}')
    seal(folder, step)
    return folder


def test_a_sealed_checkpoint_goes_to_the_bucket_and_comes_back_complete_on_a_new_machine(s3_storage, tmp_path):
    trained_on = tmp_path / "gpu-box-1"
    for step in (1, 2):
        checkpoint_store.upload(7, checkpoint(trained_on, step))
    assert s3_storage.keys("checkpoints/run-7/checkpoint-2/") == [
        "checkpoints/run-7/checkpoint-2/adapter/adapter_model.safetensors", f"checkpoints/run-7/checkpoint-2/{SEAL}",
        "checkpoints/run-7/checkpoint-2/optimizer.pt", "checkpoints/run-7/checkpoint-2/trainer_state.json"]
    new_box = tmp_path / "gpu-box-2"
    restored = checkpoint_store.restore(7, new_box)
    assert restored == new_box / "checkpoint-2" and is_complete(restored)
    for name in ("adapter/adapter_model.safetensors", "optimizer.pt", "trainer_state.json"):
        assert (restored / name).read_bytes() == (trained_on / "checkpoint-2" / name).read_bytes()


def test_a_stored_checkpoint_without_its_seal_is_skipped_for_the_one_before(s3_storage, tmp_path):
    for step in (1, 2):
        checkpoint_store.upload(8, checkpoint(tmp_path / "box", step))
    s3_storage.client().delete_object(Bucket="studio-media", Key=f"checkpoints/run-8/checkpoint-2/{SEAL}")
    assert checkpoint_store.restore(8, tmp_path / "new").name == "checkpoint-1"


def test_only_the_newest_three_are_kept_and_a_local_checkpoint_wins(s3_storage, tmp_path):
    for step in (1, 2, 3, 4, 5):
        checkpoint_store.upload(9, checkpoint(tmp_path / "box", step))
    assert checkpoint_store.stored_steps(9) == [3, 4, 5]
    assert checkpoint_store.restore(9, tmp_path / "box").name == "checkpoint-5"  # already here: nothing fetched


def test_with_local_storage_nothing_is_copied(settings, tmp_path):
    settings.STORAGE = "local"
    settings.MEDIA_ROOT = tmp_path / "media"
    checkpoint_store.upload(10, checkpoint(tmp_path / "box", 1))
    assert not (tmp_path / "media" / "checkpoints").exists()
    assert checkpoint_store.restore(10, tmp_path / "elsewhere") is None


@pytest.mark.django_db
def test_paintings_are_stored_in_and_read_from_the_bucket(s3_storage):
    from django.core.files.storage import default_storage

    from paintapp.lib.storage import store_content_addressed
    from tests.curation.factories import png_bytes

    png = png_bytes()
    name = store_content_addressed(png, folder="renders")
    assert s3_storage.keys("renders/") == [name]
    with default_storage.open(name, "rb") as fh:
        assert fh.read() == png
