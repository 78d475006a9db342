"""Model presets (training/presets.py): each with the memory one GPU needs to LoRA-train it,
labelled published, estimated or measured, found by Hub id or folder, offered to the launch form.
The launch budget's use of them is in test_gpu_budget.py, `fetch_model`'s in test_model_cache.py."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from training import presets as presets_module
from training.gpu_budget import GIB, POLICY_OVERHEAD  # the budget's rule, the estimates'
from training.presets import H200_MIB, preset_choices, preset_for, preset_named, presets

REPO = Path(__file__).resolve().parents[2]


def test_every_preset_says_what_it_needs_and_where_the_figure_comes_from():
    all_presets = presets()
    assert [p.key for p in all_presets] == ["qwen3.5-35b-a3b", "qwen3-4b", "tiny-painter", "tiny-painter-qwen3_5_moe"]
    assert len({p.model for p in all_presets}) == len(all_presets)
    for preset in all_presets:
        assert preset.memory_source in ("published", "estimated", "measured")
        assert preset.train_memory_gib > 0 and preset.parameters > 0
        assert preset.memory_note and "\n" not in preset.memory_note and ";" not in preset.memory_note
        where = " on CPU" if preset.local else ""
        assert preset.memory == f"{preset.train_memory_gib:.1f} GiB on one GPU ({preset.memory_source}{where})"
    assert presets_module.PRESETS == all_presets


def test_the_published_model_carries_the_published_gpu_and_the_weights_arithmetic_apart():
    qwen35 = preset_named("qwen3.5-35b-a3b")
    assert qwen35.model == "Qwen/Qwen3.5-35B-A3B" and not qwen35.local
    assert qwen35.memory_source == "published"
    assert qwen35.train_memory_gib == pytest.approx(140.4, abs=0.05) == H200_MIB / 1024
    assert qwen35.memory_note.startswith("trained on one H200 (141 GB) in the reference write-up")
    # The weights are arithmetic on the published parameter count, and say so.
    assert qwen35.parameters == 35_000_000_000
    assert "35B × 2 bytes = 65.2 GiB (arithmetic from the published parameter count)" in qwen35.memory_note


def test_the_small_model_is_estimated_by_the_budgets_own_rule():
    small = preset_named("qwen3-4b")
    assert small.model == "Qwen/Qwen3-4B" and small.memory_source == "estimated"
    weights_gib = 4.02e9 * 2 / GIB
    assert weights_gib == pytest.approx(7.49, abs=0.01)
    assert small.train_memory_gib == pytest.approx(weights_gib * (1 + POLICY_OVERHEAD)) == pytest.approx(8.99, abs=0.01)
    assert "4.02B parameters (published) × 2 bytes (bf16) = 7.5 GiB of weights + 20%" in small.memory_note
    assert "= 9.0 GiB" in small.memory_note and "not measured" in small.memory_note


def test_the_tiny_models_are_measured_on_cpu_and_live_under_models_dir(settings, tmp_path):
    from training.services import default_base_model

    for key, builds in [("tiny-painter", "manage.py build_tiny_model"),
                        ("tiny-painter-qwen3_5_moe", "manage.py build_tiny_model --arch qwen3_5_moe")]:
        tiny = preset_named(key)
        assert tiny.local and tiny.build_command == builds
        assert tiny.memory_source == "measured"
        assert tiny.memory_note.startswith("measured on CPU (peak RSS of a training step, 2-core box)")
        assert "bench/model_memory.py" in tiny.memory_note
        assert 0.3 < tiny.train_memory_gib < 8  # a process with torch and TRL, a model of a few MB
        assert tiny.model == str(Path(settings.MODELS_DIR) / key)
    assert preset_named("tiny-painter").model == default_base_model()
    assert preset_named("tiny-painter").parameters < preset_named("tiny-painter-qwen3_5_moe").parameters < 10**7

    settings.MODELS_DIR = tmp_path / "models"  # the path follows the settings
    assert preset_named("tiny-painter").model == str(tmp_path / "models" / "tiny-painter") == default_base_model()


def test_a_base_model_finds_its_preset_by_hub_id_or_by_folder(settings, tmp_path, monkeypatch):
    settings.MODELS_DIR = tmp_path / "models"
    assert preset_for("Qwen/Qwen3.5-35B-A3B").key == "qwen3.5-35b-a3b"
    assert preset_for(" qwen/qwen3-4b ").key == "qwen3-4b"  # the Hub resolves names case aside
    assert preset_for(str(tmp_path / "models" / "tiny-painter")).key == "tiny-painter"
    assert preset_for(f"{tmp_path}/models/../models/tiny-painter/").key == "tiny-painter"
    monkeypatch.chdir(tmp_path)
    assert preset_for("models/tiny-painter-qwen3_5_moe").key == "tiny-painter-qwen3_5_moe"  # relative, from here

    for other in ["Qwen/Qwen3-0.6B", "Qwen/Qwen3-4B-Instruct-2507", "tiny-painter", str(tmp_path / "tiny-painter"),
                  "qwen3-4b", ""]:
        assert preset_for(other) is None, other


def test_a_preset_key_is_what_fetch_model_takes():
    assert preset_named("QWEN3-4B").model == "Qwen/Qwen3-4B"
    assert preset_named("Qwen/Qwen3-4B") is None


def test_the_launch_forms_choices_show_each_figure_with_its_source():
    choices = preset_choices()
    assert [model for model, _ in choices] == [p.model for p in presets()]
    shown = dict(choices)
    assert shown["Qwen/Qwen3.5-35B-A3B"] == "Qwen3.5-35B-A3B (the published runs' model) — 140.4 GiB on one GPU (published)"
    assert shown["Qwen/Qwen3-4B"] == "Qwen3-4B (a 4B-class small model) — 9.0 GiB on one GPU (estimated)"
    for label in shown.values():
        assert re.fullmatch(r".+ — \d+\.\d GiB on one GPU \((published|estimated|measured on CPU)\)", label), label
    assert shown[preset_named("tiny-painter").model].endswith(" GiB on one GPU (measured on CPU)")


def test_the_memory_bench_reads_the_kernels_peak_of_its_own_process():
    spec = importlib.util.spec_from_file_location("model_memory", REPO / "bench" / "model_memory.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    before = bench.peak_rss_bytes()
    ballast = bytes(range(256)) * (256 * 1024)  # 64 MiB written: resident
    assert bench.current_rss_bytes() > 32 * 1024 * 1024
    assert bench.peak_rss_bytes() >= max(before, bench.current_rss_bytes())
    del ballast
