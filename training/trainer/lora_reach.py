"""The LoRA a run trains (GRPO and SFT alike: `lora_config`), and what it reaches, printed when a run starts: each parameter family it reaches
(the module it wraps: q_proj, down_proj, the experts...) with its trainable parameters, and
their share of the model. The published script caught an adapter reaching 0.024% of a model
this way; a share under LOW_SHARE is logged as a warning."""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from training.arguments import RunArguments
from training.trainer.model_loading import EXPERT_PARAMETERS

log = logging.getLogger(__name__)
LOW_SHARE = 0.0005  # 0.05% of the model
ADAPTER_PARTS = {"lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B", "lora_magnitude_vector"}
WRAPPERS = {"base_layer", "default"}


@dataclass(frozen=True)
class LoraReach:
    families: dict[str, int]  # family -> trainable parameters, largest first
    trainable: int
    total: int

    @property
    def share(self) -> float:
        return self.trainable / self.total if self.total else 0.0

    def describe(self) -> str:
        parts = ", ".join(f"{family} {count:,}" for family, count in self.families.items())
        return (f"LoRA trains {self.trainable:,} of {self.total:,} parameters ({self.share:.4%}) in "
                f"{len(self.families)} famil{'y' if len(self.families) == 1 else 'ies'}: {parts or 'none'}")


def family(name: str) -> str:
    """The module a trainable parameter's name says it adapts: the segment before its adapter part."""
    segments = name.split(".")
    for i, segment in enumerate(segments):
        if segment in ADAPTER_PARTS:
            before = [s for s in segments[:i] if s not in WRAPPERS]
            return before[-1] if before else segment
    return segments[-2] if len(segments) > 1 else name


def lora_reach(model) -> LoraReach:
    counts: Counter[str] = Counter()
    total = 0
    for name, parameter in model.named_parameters():
        total += parameter.numel()
        if parameter.requires_grad:
            counts[family(name)] += parameter.numel()
    return LoraReach(families=dict(counts.most_common()), trainable=sum(counts.values()), total=total)


def report(model) -> LoraReach:
    reach = lora_reach(model)
    (log.warning if reach.share < LOW_SHARE else log.info)("%s", reach.describe())
    return reach


def lora_config(args: RunArguments):
    """PEFT's LoraConfig from the run's arguments."""
    from peft import LoraConfig

    return LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules="all-linear",
        exclude_modules=r".*visual.*",  # Qwen3.5 checkpoints carry a vision tower: text-only GRPO
        # The routed experts are 3-D parameters, not nn.Linear: "all-linear" leaves them out.
        target_parameters=list(EXPERT_PARAMETERS) if args.lora_target_experts else None,
        task_type="CAUSAL_LM",
    )
