"""Model presets (training/presets.py): each with the memory one GPU needs to LoRA-train it at the
default run, by the launch budget's own arithmetic on the preset's shape, labelled with where the
shape comes from, found by Hub id or folder, offered to the launch form. The launch budget's use of
them is in test_gpu_budget.py, `fetch_model`'s in test_model_cache.py."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from training import presets as presets_module
from training.arguments import RunArguments
from training.memory import GIB, run_budget
from training.presets import H200_MIB, preset_choices, preset_for, preset_named, presets

REPO = Path(__file__).resolve().parents[2]


def test_every_preset_says_what_it_needs_and_where_the_figure_comes_from():
    all_presets = presets()
    assert [p.key for p in all_presets] == ["qwen3.5-35b-a3b", "qwen3-4b", "tiny-painter", "tiny-painter-qwen3_5_moe"]
    assert len({p.model for p in all_presets}) == len(all_presets)
    for preset in all_presets:
        assert preset.train_memory_gib == run_budget(preset.shape, RunArguments()).total_gib > 0
        assert preset.parameters == preset.shape.parameters > 0
        assert preset.memory_note.startswith(preset.shape_source) and "\n" not in preset.memory_note
        assert "weights " in preset.memory_note and "KV cache " in preset.memory_note
        assert preset.memory == f"{preset.train_memory_gib:.1f} GiB on one GPU (arithmetic, default run)"
    assert presets_module.PRESETS == all_presets


def test_the_small_models_figure_is_the_sum_of_its_terms():
    small = preset_named("qwen3-4b")
    assert small.model == "Qwen/Qwen3-4B"
    shape = small.shape
    assert (shape.layers, shape.attention_layers, shape.kv_heads, shape.head_dim) == (36, 36, 8, 128)
    assert shape.kv_bytes_per_token == 36 * 8 * 128 * 2 * 2 == 147_456  # 144 KiB a token
    weights = 4_022_468_096 * 2 / GIB
    lora = 16 * 36 * ((2560 + 4096) + 2 * (2560 + 1024) + (4096 + 2560) + 2 * (2560 + 9728) + (9728 + 2560)) * 16 / GIB
    kv = 147_456 * 8 * (2048 + 8192) / GIB  # G = 8 sequences of a 2,048-token prompt and 8,192-token completion
    prefill = 8 * 2048 * (4 * 2560 + 3 * 9728) * 2 / GIB
    folding = 2560 * 9728 * 4 * 2 / GIB
    assert small.train_memory_gib == pytest.approx(weights + lora + 1.0 + kv + prefill + folding)
    assert small.train_memory_gib == pytest.approx(21.6, abs=0.05)
    assert "KV cache 11.2 GiB (36 attention layers × 8 KV heads × 128 × 2 × 2 bytes = 144 KiB a token × 8 " \
           "sequences × 10,240 tokens" in small.memory_note
    assert "12.3 GiB on one H200" in small.memory_note  # the measurement beside it


def test_the_published_model_counts_only_its_attention_layers_kv_and_fits_the_published_gpu():
    qwen35 = preset_named("qwen3.5-35b-a3b")
    assert qwen35.model == "Qwen/Qwen3.5-35B-A3B" and not qwen35.local and qwen35.parameters == 35_000_000_000
    shape = qwen35.shape
    assert (shape.layers, shape.attention_layers, shape.kv_heads, shape.head_dim) == (40, 10, 2, 256)
    assert shape.kv_bytes_per_token == 10 * 2 * 256 * 2 * 2  # 20 KiB: one layer in four has a KV cache
    assert "weights 65.2 GiB (35.00B parameters × 2 bytes (bf16))" in qwen35.memory_note
    assert "linear-attention state" in qwen35.memory_note
    # Its reference run fit one H200 with vLLM colocated: so does the arithmetic, with vLLM's 0.3 share.
    colocated = run_budget(shape, RunArguments(generation="vllm-colocate"), gpu_gib=H200_MIB / 1024)
    assert colocated.total_gib < H200_MIB / 1024
    assert "trained it on one H200" in qwen35.memory_note


def test_the_experts_lora_counts_only_when_a_run_targets_them():
    shape = preset_named("qwen3.5-35b-a3b").shape
    assert shape.lora_parameters(16, experts=True) - shape.lora_parameters(16) == 16 * 40 * 256 * (
        (2048 + 2 * 512) + (512 + 2048))


def test_the_tiny_models_shapes_are_their_build_specs_and_they_live_under_models_dir(settings, tmp_path):
    from demo.tiny_model import TinyModelSpec
    from demo.tiny_vl_model import TinyVLSpec
    from training.services import default_base_model

    for key, builds, spec in [("tiny-painter", "manage.py build_tiny_model", TinyModelSpec()),
                              ("tiny-painter-qwen3_5_moe", "manage.py build_tiny_model --arch qwen3_5_moe", TinyVLSpec())]:
        tiny = preset_named(key)
        assert tiny.local and tiny.build_command == builds
        for name in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                     "vocab_size"):
            assert tiny.config[name] == getattr(spec, name), (key, name)
        assert tiny.shape.intermediate == spec.intermediate_size
        assert "Measured on CPU (peak RSS of a training step, 2-core box)" in tiny.memory_note
        assert "bench/model_memory.py" in tiny.memory_note
        assert 1.0 < tiny.train_memory_gib < 2.0  # the CUDA context and a model of a few MB
        assert tiny.model == str(Path(settings.MODELS_DIR) / key)
    assert preset_named("tiny-painter-qwen3_5_moe").shape.attention_layers == 1  # one layer in four
    assert preset_named("tiny-painter").model == default_base_model()
    assert preset_named("tiny-painter").parameters < preset_named("tiny-painter-qwen3_5_moe").parameters < 10**7

    settings.MODELS_DIR = tmp_path / "models"  # the path follows the settings
    assert preset_named("tiny-painter").model == str(tmp_path / "models" / "tiny-painter") == default_base_model()


def test_a_built_tiny_model_has_the_presets_sizes(tiny_model):
    """The tests' painter is the demo's shape scaled down; its config is read as the budget reads it."""
    from training.gpu_budget import shape_here

    shape = shape_here(tiny_model)
    config = json.loads((Path(tiny_model) / "config.json").read_text())
    assert (shape.layers, shape.kv_heads, shape.head_dim) == (
        config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"])
    assert shape.source.startswith("its config.json and weights here (counted from the safetensors headers)")


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
    assert shown["Qwen/Qwen3-4B"] == "Qwen3-4B (a 4B-class small model) — 21.6 GiB on one GPU (arithmetic, default run)"
    for label in shown.values():
        assert re.fullmatch(r".+ — \d+\.\d GiB on one GPU \(arithmetic, default run\)", label), label


def test_the_memory_bench_reads_the_kernels_peak_of_its_own_process():
    spec = importlib.util.spec_from_file_location("model_memory", REPO / "bench" / "model_memory.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    before = bench.peak_rss_bytes()
    ballast = bytes(range(256)) * (256 * 1024)  # 64 MiB written: resident
    assert bench.current_rss_bytes() > 32 * 1024 * 1024
    assert bench.peak_rss_bytes() >= max(before, bench.current_rss_bytes())
    del ballast
