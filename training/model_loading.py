"""Loading a base model, its processing class and a run's adapter, for any model class the
studio trains: a causal LM (Qwen3) or a vision-language model (Qwen3.5-MoE), which the
studio prompts with text only.

The model class is the one the checkpoint's config names, as TRL's GRPOTrainer picks it
(`create_model_from_path`), so a VL checkpoint keeps its vision tower wherever it is loaded.
"""
from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

# The routed experts' fused 3-D weights of the MoE models (Qwen3.5-MoE, Qwen3-MoE), as PEFT's
# `target_parameters` names them: a suffix of `<module>.<parameter>`.
EXPERT_PARAMETERS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")

__all__ = ["EXPERT_PARAMETERS", "architecture", "load_processing_class", "text_tokenizer", "load_adapted_model"]


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


def load_adapted_model(base_model: str | Path, adapter_dir: str | Path):
    """The base model with a saved LoRA adapter on top, for inference: bf16 on a GPU (the
    dtype the trainer trains in there), float32 on CPU, and its processing class."""
    import torch
    from peft import PeftModel

    on_gpu = torch.cuda.is_available()
    model = architecture(base_model).from_pretrained(
        base_model, dtype=torch.bfloat16 if on_gpu else torch.float32,
        device_map="auto" if on_gpu else None,  # straight onto the GPU(s), as TRL loads it for training
    )
    model = PeftModel.from_pretrained(model, str(adapter_dir))
    model.eval()
    return model, load_processing_class(base_model)
