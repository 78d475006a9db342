"""Only sealed, intact checkpoints are resumed from (training/trainer/checkpoints.py; no database, no training)."""
from __future__ import annotations

import json

from tests.training.factories import CHECKPOINT_FILES as FILES
from tests.training.factories import write_checkpoint
from training.trainer.checkpoints import SEAL, discard_incomplete, is_complete, last_checkpoint


def test_a_sealed_checkpoint_lists_every_file_with_its_size(tmp_path):
    folder = write_checkpoint(tmp_path, 3)
    manifest = json.loads((folder / SEAL).read_text())
    assert manifest == {"step": 3, "files": {name: len(content) for name, content in sorted(FILES.items())}}
    assert is_complete(folder)
    assert not list(folder.glob("*.tmp"))


def test_the_newest_complete_checkpoint_is_picked_and_unsealed_or_truncated_ones_are_not(tmp_path):
    write_checkpoint(tmp_path, 1)
    two = write_checkpoint(tmp_path, 2)
    write_checkpoint(tmp_path, 10, sealed=False)  # killed before the seal: numerically the newest
    assert last_checkpoint(tmp_path) == two
    with open(two / "optimizer.pt", "r+b") as optimizer:  # a file cut short after the seal
        optimizer.truncate(40)
    assert last_checkpoint(tmp_path) == tmp_path / "checkpoint-1"


def test_a_checkpoint_without_its_trainer_state_or_with_a_seal_of_another_step_is_incomplete(tmp_path):
    no_state = write_checkpoint(tmp_path, 1, files={k: v for k, v in FILES.items() if k != "trainer_state.json"})
    moved = write_checkpoint(tmp_path, 2)
    moved.rename(tmp_path / "checkpoint-3")
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / SEAL).write_text("{not json")
    assert not is_complete(no_state) and not is_complete(tmp_path / "checkpoint-3")
    assert last_checkpoint(tmp_path) is None
    assert last_checkpoint(tmp_path / "never-trained") is None


def test_incomplete_checkpoints_are_removed_and_complete_ones_kept(tmp_path):
    write_checkpoint(tmp_path, 1)
    write_checkpoint(tmp_path, 2, sealed=False)
    (tmp_path / "adapter").mkdir()  # not a checkpoint: never touched
    removed = discard_incomplete(tmp_path)
    assert removed == [tmp_path / "checkpoint-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "checkpoint-1"]
