"""Loading a base model, its processing class and a run's adapter, for any model class the
studio trains: a causal LM (Qwen3) or a vision-language model (Qwen3.5-MoE), which the
studio prompts with text only.

The model class is the one the checkpoint's config names, as TRL's GRPOTrainer picks it
(`create_model_from_path`), so a VL checkpoint keeps its vision tower wherever it is loaded.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

# The routed experts' fused 3-D weights of the MoE models (Qwen3.5-MoE, Qwen3-MoE), as PEFT's
# `target_parameters` names them: a suffix of `<module>.<parameter>`.
EXPERT_PARAMETERS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")

__all__ = ["EXPERT_PARAMETERS", "accepts_images", "architecture", "load_processing_class", "text_tokenizer",
           "load_adapted_model"]


def architecture(model_dir: str | Path):
    """The transformers class the checkpoint's config names (AutoModelForCausalLM if none)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    names = AutoConfig.from_pretrained(model_dir).architectures or []
    named = getattr(transformers, names[0], None) if names else None
    return named or AutoModelForCausalLM


def load_processing_class(model_dir: str | Path):
    """What GRPOTrainer would load itself (AutoProcessor, prompts padded and cut on the left):
    a processor for a VL checkpoint, a tokenizer for a text one.

    A Qwen3.5 processor includes a video processor, which needs torchvision; where torchvision
    is missing (the CPU machines) the checkpoint's tokenizer is used instead, which is all a
    text-only prompt needs."""
    from transformers import AutoProcessor, AutoTokenizer
    from transformers.utils import is_torchvision_available

    try:
        return AutoProcessor.from_pretrained(model_dir, padding_side="left", truncation_side="left")
    except (ValueError, ImportError, TypeError, AttributeError) as exc:
        if is_torchvision_available():
            raise
        log.warning("the processor of %s cannot be built without torchvision (%s); using its tokenizer", model_dir, exc)
        return AutoTokenizer.from_pretrained(model_dir, padding_side="left", truncation_side="left")


def text_tokenizer(processing_class):
    """The tokenizer inside a processor, or the tokenizer itself."""
    return getattr(processing_class, "tokenizer", None) or processing_class


def load_adapted_model(base_model: str | Path, adapter_dir: str | Path | None):
    """The base model with a saved LoRA adapter on top (none: the base model alone), for
    inference: bf16 on a GPU (the dtype the trainer trains in there), float32 on CPU, and its
    processing class."""
    import torch
    from peft import PeftModel

    on_gpu = torch.cuda.is_available()
    model = architecture(base_model).from_pretrained(
        base_model, dtype=torch.bfloat16 if on_gpu else torch.float32,
        device_map="auto" if on_gpu else None,  # straight onto the GPU(s), as TRL loads it for training
    )
    if adapter_dir is not None:
        model = PeftModel.from_pretrained(model, str(adapter_dir))
    model.eval()
    return model, load_processing_class(base_model)


# Keys of a config (or of its text/vision sub-configs' parent) that only a model reading
# images has: a vision tower's config, or the token its processor puts where an image goes.
_IMAGE_KEYS = ("vision_config", "image_token_id", "image_token_index", "vision_start_token_id")


def _local_file(name_or_path: str | Path, filename: str) -> Path | None:
    """`filename` of a local model folder, or of a Hub model's cached snapshot; None where it
    is not here (nothing is downloaded)."""
    folder = Path(name_or_path)
    if folder.is_dir():
        return folder / filename if (folder / filename).is_file() else None
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        found = try_to_load_from_cache(str(name_or_path), filename)
    except HFValidationError:  # neither a folder nor a Hub name
        return None
    return Path(found) if isinstance(found, str) else None


def accepts_images(name_or_path: str | Path) -> bool | None:
    """Whether a model reads images (a vision-language model), from its config.json and
    processor files alone (no weights are loaded, nothing is downloaded): True with a vision
    config or an image token, or an image processor beside it; False when its config has
    none; None when its config is not here to read (a Hub model not in the cache)."""
    config_file = _local_file(name_or_path, "config.json")
    if config_file is None:
        return None
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError):
        return None
    if any(key in config for key in _IMAGE_KEYS):
        return True
    processor = _local_file(name_or_path, "preprocessor_config.json")
    try:
        return bool(processor and "image_processor_type" in json.loads(processor.read_text()))
    except (OSError, ValueError):
        return False
