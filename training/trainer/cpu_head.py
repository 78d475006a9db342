"""The LM head TRL's trainers score tokens through, made plain on a CPU.

TRL 1.16's SFT and GRPO trainers patch the model with a fused LM head (`add_fused_lm_head`) that
never builds the whole logits: `model(..., labels=..., fused_lm_head=True)` returns each next
token's log-probability (and its entropy, and whether it was the top token). Where Triton runs (a
GPU) it scores only the positions that have a label, in kernels. Elsewhere it scores every
position, the prompt's included, in tiles of torch operations: about a dozen passes over
positions x vocabulary each way. On a CPU that made the LM head cost more than the rest of the
model. Measured on the tests' painter (128 wide, a 4,687-token vocabulary, ~245 prompt and
~564 completion tokens, 1 thread, 2026-12-06): an SFT step 0.23 s against 0.16 s with the plain
head, and a GRPO group of 4 through the head and the body, forward and backward, 1.16 s against
0.67 s.

The plain head computes the same fields from the labelled positions' logits alone (autograd takes
the backward), so on a CPU every warm start and GRPO step a curator, the demo or the tests run
costs less, to the same losses. Where it would differ (a GPU, soft-capped or scaled logits,
pre-shifted labels, a mixture-of-experts auxiliary loss), TRL's own head runs.
"""
from __future__ import annotations

import functools
import types
from typing import Any

import torch
from accelerate.utils import is_peft_model
from trl import SFTTrainer
from trl.trainer.utils import FusedCausalLMOutput

__all__ = ["StudioSFTTrainer", "plain_head_on_cpu"]

IGNORED = -100  # the label of a position that is not scored
# Config fields that make TRL's head scale or soft-cap the logits: such models keep TRL's.
LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier",
                    "logits_scaling")


def plain_head_on_cpu(model: Any, *, temperature: float = 1.0) -> bool:
    """Route `model(..., fused_lm_head=True)` through the plain head whenever its labels are on a
    CPU. Call it after the trainer added TRL's head; `model` may be the PEFT model around the one
    TRL patched. False where the model's logits are transformed, so TRL's head stays."""
    model = model.get_base_model() if is_peft_model(model) else model
    text_config = model.config.get_text_config()
    if any(getattr(text_config, name, None) is not None for name in LOGIT_TRANSFORMS):
        return False
    fused = model.forward

    @functools.wraps(type(model).forward)  # `generate` validates its kwargs against the signature
    def forward(self, *args, fused_lm_head=False, labels=None, shift_labels=None, num_items_in_batch=None,
                **kwargs):
        if (not fused_lm_head or labels is None or labels.device.type != "cpu" or shift_labels is not None
                or kwargs.get("output_router_logits") or getattr(text_config, "output_router_logits", False)):
            return fused(*args, fused_lm_head=fused_lm_head, labels=labels, shift_labels=shift_labels,
                         num_items_in_batch=num_items_in_batch, **kwargs)
        kwargs["use_cache"] = False
        hidden = self.base_model(*args, **kwargs).last_hidden_state[:, :-1]
        targets = labels[:, 1:]
        scored = targets != IGNORED
        wanted = targets[scored]
        head = self.get_output_embeddings()
        logits = head(hidden[scored].to(head.weight.dtype)).float() / temperature  # an fp32 head takes fp32
        log_p = logits.log_softmax(-1)
        chosen = log_p.gather(-1, wanted.unsqueeze(-1)).squeeze(-1)

        def per_token(values: torch.Tensor) -> torch.Tensor:  # zero where nothing is scored, as TRL's
            return values.new_zeros(scored.shape).masked_scatter(scored, values)

        log_probs = per_token(chosen)
        count = scored.sum().clamp(min=1) if num_items_in_batch is None else num_items_in_batch
        return FusedCausalLMOutput(
            loss=-log_probs.sum() / count,
            log_probs=log_probs,
            entropy=per_token(-(log_p.exp() * log_p).sum(-1)),
            is_top1=per_token(logits.argmax(-1) == wanted),  # the first maximum, as TRL's
            label_mask=scored,
        )

    model.forward = types.MethodType(forward, model)
    return True


class StudioSFTTrainer(SFTTrainer):
    """TRL's SFTTrainer, its LM head plain on a CPU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        plain_head_on_cpu(self.model)
