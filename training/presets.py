"""Model presets: the models the launch form offers by name and `manage.py fetch_model` knows by
a short key, each with the memory one GPU needs to LoRA-train it at the default run (G = 8,
8,192-token completions), from the launch budget's own arithmetic (training/memory.py) on the
model's shape: its config's sizes and its parameter count, each labelled with where they come
from. The budget weighs a model on this machine by its own config and weight files; for a
preset not fetched (or built) here yet it takes the preset's shape instead (gpu_budget.check).

A Hub model's `model` is its Hub id. The tiny models are built here (`manage.py
build_tiny_model`), not fetched: their `model` is their folder under settings.MODELS_DIR, read
when the presets are asked for (`presets()`, or `PRESETS`), so it follows the settings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.arguments import RunArguments
from training.memory import GIB, ModelShape, run_budget

__all__ = ["GIB", "H200_MIB", "ModelPreset", "preset_choices", "preset_for", "preset_named", "presets"]

# One H200 as nvidia-smi reports it (memory.total): 143,771 MiB. NVIDIA sells it as 141 GB.
H200_MIB = 143_771

# The tiny models' peak resident memory measured on CPU by bench/model_memory.py
# (`.venv/bin/python bench/model_memory.py`, its `peak` lines): a process with Django, torch,
# transformers, TRL and PEFT loaded (~550 MiB before the model), the model in float32 with the
# run's LoRA (r 16, all linear layers) and two GRPO steps of 8 completions run to full length
# (1,024 tokens for the text model, 3,072 for the VL model), one torch thread, on a 2-core, 24 GB
# box (torch 2.13 CPU, transformers 5.24, TRL 1.16, PEFT 0.21). Two runs each gave 1,137 and
# 1,176 MiB (text), 1,593 and 1,622 MiB (VL): the higher is kept. Shown beside their GPU arithmetic.
TINY_PAINTER_PARAMETERS = 1_481_728
TINY_PAINTER_PEAK_RSS_MIB = 1_176
TINY_VL_PAINTER_PARAMETERS = 2_956_024
TINY_VL_PAINTER_PEAK_RSS_MIB = 1_622

# The language model's sizes, as each model's config.json states them.
QWEN3_4B_CONFIG = {  # Qwen/Qwen3-4B's config.json (tied embeddings)
    "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151_936,
}
QWEN35_35B_CONFIG = {  # Qwen/Qwen3.5-35B-A3B's text_config (transformers' Qwen3_5MoeTextConfig defaults)
    "hidden_size": 2048, "num_hidden_layers": 40, "full_attention_interval": 4, "num_attention_heads": 16,
    "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248_320, "shared_expert_intermediate_size": 512,
    "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
}
# The tiny models' build specs (demo/tiny_model.py TinyModelSpec and demo/tiny_vl_model.py
# TinyVLSpec defaults; the vocabulary is the BPE's upper bound): tests hold them to the specs.
TINY_PAINTER_CONFIG = {
    "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 8192,
}
TINY_VL_PAINTER_CONFIG = {
    "hidden_size": 128, "num_hidden_layers": 4, "full_attention_interval": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 8192, "shared_expert_intermediate_size": 256,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32, "linear_conv_kernel_dim": 4,
}
QWEN35_PARAMETERS = 35_000_000_000  # "35B in total, 3B activated" (the model card)
QWEN3_4B_PARAMETERS = 4_022_468_096  # the card's 4.0B, counted from its config (3.6B without the embedding)


@dataclass(frozen=True)
class ModelPreset:
    key: str  # what `fetch_model` takes as NAME
    label: str
    model: str  # a Hub id, or the path of a model the studio builds (under settings.MODELS_DIR)
    parameters: int
    config: dict[str, Any] = field(repr=False, hash=False)  # the language model's sizes (ModelShape.from_config reads them)
    shape_source: str  # where `config` and `parameters` come from
    measured_note: str = ""  # a measurement beside the arithmetic, where there is one
    build_command: str = ""  # a model the studio builds: the command that builds it ("" for a Hub model)

    @property
    def local(self) -> bool:
        """Built here by `build_command`, not fetched from the Hub."""
        return bool(self.build_command)

    @property
    def shape(self) -> ModelShape:
        return ModelShape.from_config(self.config, parameters=self.parameters, source=self.shape_source)

    @property
    def train_memory_gib(self) -> float:
        """One GPU at the default run, by the launch budget's arithmetic."""
        return run_budget(self.shape, RunArguments()).total_gib

    @property
    def memory_note(self) -> str:
        """One line: where the shape comes from, the arithmetic's terms, and any measurement."""
        note = f"{self.shape_source}: {run_budget(self.shape, RunArguments()).explain()}"
        return f"{note}. {self.measured_note}" if self.measured_note else note

    @property
    def memory(self) -> str:
        """The figure with its source, as the form and `fetch_model --list` show it."""
        return f"{self.train_memory_gib:.1f} GiB on one GPU (arithmetic, default run)"


_HUB_PRESETS = (
    ModelPreset(
        key="qwen3.5-35b-a3b",
        label="Qwen3.5-35B-A3B (the published runs' model)",
        model="Qwen/Qwen3.5-35B-A3B",
        parameters=QWEN35_PARAMETERS,
        config=QWEN35_35B_CONFIG,
        shape_source="35B parameters (the model card) and its published config",
        measured_note=(f"The reference write-up trained it on one H200 ({H200_MIB:,} MiB = {H200_MIB / 1024:.1f} GiB) "
                       "with vLLM colocated"),
    ),
    ModelPreset(
        key="qwen3-4b",
        label="Qwen3-4B (a 4B-class small model)",
        model="Qwen/Qwen3-4B",
        parameters=QWEN3_4B_PARAMETERS,
        config=QWEN3_4B_CONFIG,
        shape_source="4.02B parameters and the sizes of its published config",
        measured_note=("A 4B-shaped GRPO step of 8 × 1,024-token completions peaked at 12.3 GiB on one H200 "
                       "(nvidia-smi, FIELD-NOTES 2026-12-04)"),
    ),
)


def _tiny(key: str, label: str, parameters: int, config: dict[str, Any], peak_mib: int, completion: int,
          build_command: str) -> ModelPreset:
    from django.conf import settings

    return ModelPreset(
        key=key, label=label, model=str(Path(settings.MODELS_DIR) / key), parameters=parameters, config=config,
        shape_source="the studio's build spec (demo/), parameters counted when built",
        measured_note=(f"Measured on CPU (peak RSS of a training step, 2-core box): {peak_mib:,} MiB, two LoRA GRPO "
                       f"steps of 8 {completion:,}-token completions in float32 (bench/model_memory.py)"),
        build_command=build_command,
    )


def presets() -> tuple[ModelPreset, ...]:
    """Every preset, the tiny models' paths under the current settings.MODELS_DIR."""
    return (
        *_HUB_PRESETS,
        _tiny("tiny-painter", "Tiny painter (the studio's text model, trains on CPU)", TINY_PAINTER_PARAMETERS,
              TINY_PAINTER_CONFIG, TINY_PAINTER_PEAK_RSS_MIB, 1024, "manage.py build_tiny_model"),
        _tiny("tiny-painter-qwen3_5_moe", "Tiny VL painter (the studio's Qwen3.5-MoE class, trains on CPU)",
              TINY_VL_PAINTER_PARAMETERS, TINY_VL_PAINTER_CONFIG, TINY_VL_PAINTER_PEAK_RSS_MIB, 3072,
              "manage.py build_tiny_model --arch qwen3_5_moe"),
    )


def __getattr__(name: str):
    if name == "PRESETS":  # PEP 562: read when asked for, so the tiny models follow MODELS_DIR
        return presets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def preset_named(key: str) -> ModelPreset | None:
    """The preset whose key is `key` (as `fetch_model` takes it)."""
    return next((p for p in presets() if p.key == key.strip().lower()), None)


def preset_for(model: str) -> ModelPreset | None:
    """The preset of a base model, by its Hub id (case aside) or its folder (the same path,
    however written); None for any other model."""
    model = str(model).strip()
    if not model:
        return None
    for preset in presets():
        if preset.local:
            if _same_path(model, preset.model):
                return preset
        elif model.casefold() == preset.model.casefold():
            return preset
    return None


def preset_choices() -> list[tuple[str, str]]:
    """(base model, what the launch form shows) for each preset: the options of a <datalist>."""
    return [(p.model, f"{p.label} — {p.memory}") for p in presets()]


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False
