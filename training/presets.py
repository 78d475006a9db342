"""Model presets: the models the launch form offers by name and `manage.py fetch_model` knows by
a short key, each with the memory one GPU needs to LoRA-train it and where that figure comes
from (`memory_source`):

- **published**: a figure from the reference write-up.
- **estimated**: arithmetic from a published parameter count, by the launch budget's own rule:
  the bf16 weights plus POLICY_OVERHEAD (defined here, applied by training/gpu_budget.py).
- **measured**: measured here, by `bench/model_memory.py`.

The launch budget weighs a model by its weights on this machine; for a preset not fetched (or
built) here yet it takes the preset's figure instead (gpu_budget.check).

A Hub model's `model` is its Hub id. The tiny models are built here (`manage.py
build_tiny_model`), not fetched: their `model` is their folder under settings.MODELS_DIR, read
when the presets are asked for (`presets()`, or `PRESETS`), so it follows the settings.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MemorySource = Literal["published", "measured", "estimated"]
GIB = 1024**3
BF16_BYTES = 2
# Of the weights: LoRA parameters and Adam states, activations, the CUDA context. The launch
# budget's rule for a model it weighs (training/gpu_budget.py imports it from here) and the
# estimated presets'.
POLICY_OVERHEAD = 0.2

# One H200 as nvidia-smi reports it (memory.total): 143,771 MiB. NVIDIA sells it as 141 GB.
H200_MIB = 143_771

# The tiny models, measured by bench/model_memory.py (`.venv/bin/python bench/model_memory.py`,
# its `peak` lines): the peak resident memory (VmHWM) of a process with Django, torch,
# transformers, TRL and PEFT loaded (~550 MiB before the model), the model in float32 with the
# run's LoRA (r 16, all linear layers) and two GRPO steps of 8 completions run to full length
# (1,024 tokens for the text model, 3,072 for the VL model), one torch thread, on a 2-core, 24 GB
# box (torch 2.13 CPU, transformers 5.24, TRL 1.16, PEFT 0.21). The models were built from the
# demo specs with one SFT step (the bench says why that weighs the same). Two runs each gave
# 1,137 and 1,176 MiB (text), 1,593 and 1,622 MiB (VL): the higher is kept.
TINY_PAINTER_PARAMETERS = 1_481_728
TINY_PAINTER_PEAK_RSS_MIB = 1_176
TINY_VL_PAINTER_PARAMETERS = 2_956_024
TINY_VL_PAINTER_PEAK_RSS_MIB = 1_622


@dataclass(frozen=True)
class ModelPreset:
    key: str  # what `fetch_model` takes as NAME
    label: str
    model: str  # a Hub id, or the path of a model the studio builds (under settings.MODELS_DIR)
    parameters: int
    train_memory_gib: float  # one GPU, LoRA training: weights + LoRA and Adam states + activations
    memory_source: MemorySource
    memory_note: str  # one line: where the figure comes from, or its arithmetic
    build_command: str = ""  # a model the studio builds: the command that builds it ("" for a Hub model)

    @property
    def local(self) -> bool:
        """Built here by `build_command`, not fetched from the Hub."""
        return bool(self.build_command)

    @property
    def memory(self) -> str:
        """The figure with its source, as the form and `fetch_model --list` show it."""
        where = " on CPU" if self.local else ""  # the tiny models were measured where they train
        return f"{self.train_memory_gib:.1f} GiB on one GPU ({self.memory_source}{where})"


def _bf16_gib(parameters: float) -> float:
    return parameters * BF16_BYTES / GIB


def _estimated(parameters: float) -> float:
    """The launch budget's rule (gpu_budget): bf16 weights + POLICY_OVERHEAD."""
    return _bf16_gib(parameters) * (1 + POLICY_OVERHEAD)


QWEN35_PARAMETERS = 35_000_000_000  # "35B in total, 3B activated" (the model card)
QWEN3_4B_PARAMETERS = 4_020_000_000  # the card's 4.0B (3.6B without the embedding); 4.02B counted from its config

_HUB_PRESETS = (
    ModelPreset(
        key="qwen3.5-35b-a3b",
        label="Qwen3.5-35B-A3B (the published runs' model)",
        model="Qwen/Qwen3.5-35B-A3B",
        parameters=QWEN35_PARAMETERS,
        train_memory_gib=H200_MIB / 1024,
        memory_source="published",
        memory_note=(
            f"trained on one H200 (141 GB) in the reference write-up, LoRA r 16: that GPU's {H200_MIB:,} MiB "
            f"= {H200_MIB / 1024:.1f} GiB, a size the run is known to fit, not a measured need, of which its bf16 weights "
            f"alone are 35B × 2 bytes = {_bf16_gib(QWEN35_PARAMETERS):.1f} GiB (arithmetic from the published "
            "parameter count)"
        ),
    ),
    ModelPreset(
        key="qwen3-4b",
        label="Qwen3-4B (a 4B-class small model)",
        model="Qwen/Qwen3-4B",
        parameters=QWEN3_4B_PARAMETERS,
        train_memory_gib=_estimated(QWEN3_4B_PARAMETERS),
        memory_source="estimated",
        memory_note=(
            f"4.02B parameters (published) × 2 bytes (bf16) = {_bf16_gib(QWEN3_4B_PARAMETERS):.1f} GiB of weights "
            f"+ {POLICY_OVERHEAD:.0%} for LoRA and Adam states, activations and the CUDA context (the launch "
            f"budget's rule) = {_estimated(QWEN3_4B_PARAMETERS):.1f} GiB, not measured"
        ),
    ),
)


def _tiny(key: str, label: str, parameters: int, peak_mib: int, completion: int, build_command: str) -> ModelPreset:
    from django.conf import settings

    return ModelPreset(
        key=key, label=label, model=str(Path(settings.MODELS_DIR) / key), parameters=parameters,
        train_memory_gib=peak_mib / 1024, memory_source="measured",
        memory_note=(
            f"measured on CPU (peak RSS of a training step, 2-core box): {peak_mib:,} MiB, two LoRA GRPO steps "
            f"of 8 {completion:,}-token completions in float32 (bench/model_memory.py), not measured on a GPU"
        ),
        build_command=build_command,
    )


def presets() -> tuple[ModelPreset, ...]:
    """Every preset, the tiny models' paths under the current settings.MODELS_DIR."""
    return (
        *_HUB_PRESETS,
        _tiny("tiny-painter", "Tiny painter (the studio's text model, trains on CPU)", TINY_PAINTER_PARAMETERS,
              TINY_PAINTER_PEAK_RSS_MIB, 1024, "manage.py build_tiny_model"),
        _tiny("tiny-painter-qwen3_5_moe", "Tiny VL painter (the studio's Qwen3.5-MoE class, trains on CPU)",
              TINY_VL_PAINTER_PARAMETERS, TINY_VL_PAINTER_PEAK_RSS_MIB, 3072,
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
