"""The private TRL / transformers methods the trainer calls are checked before a run starts."""
from __future__ import annotations

import pytest
from trl import GRPOTrainer

from training.trainer import private_api
from training.trainer.private_api import PrivateApiMoved, problems


def test_the_installed_trl_matches_what_the_trainer_calls():
    assert problems(GRPOTrainer, "1.16.0") == []
    private_api.check(GRPOTrainer)


def test_a_newer_trl_whose_methods_still_match_passes():
    assert problems(GRPOTrainer, "1.18.2") == []


def test_a_method_gone_or_changed_is_refused_with_the_version_range():
    class Moved(GRPOTrainer):
        _tokenize_prompts = None

        def _generate_single_turn(self, prompts, sampling_params):
            raise AssertionError("never called")

    found = problems(Moved, "1.18.0")
    assert "Moved._tokenize_prompts is gone" in found[0] or "gone" in " ".join(found)
    assert any("_generate_single_turn(prompts, sampling_params) no longer takes" in p for p in found)
    assert found[-1] == "trl 1.18.0 is outside the tested <1.17,>=1.16"


def test_check_raises_naming_the_files_to_update(monkeypatch):
    class Moved(GRPOTrainer):
        def _save_checkpoint(self, model):
            raise AssertionError("never called")

    with pytest.raises(PrivateApiMoved, match=r"_save_checkpoint\(model\) no longer takes \(model, trial\).*pausing.py"):
        private_api.check(Moved)
