"""Run hyper-parameters: the published defaults, validated, stored as JSON on the Run."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class RunArguments:
    """What a run needs beyond its pool and recipe. Defaults are the published ones."""

    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 5
    scale_rewards: str = "none"
    num_generations: int = 8  # G: completions per prompt (one GRPO group)
    prompts_per_step: int = 1  # groups per step
    top_p: float = 0.95
    top_k: int = 20
    temperature: float = 1.0
    max_completion_length: int = 8192
    max_steps: int = 60
    beta: float = 0.0
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    render_size: int = 600
    checkpoint_every: int = 10
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    bf16: bool | None = None  # None: bf16 on GPU, fp32 on CPU
    torch_threads: int = 1  # per process on CPU: contended OpenMP threads collapse throughput
    render_deadline_s: float = 300.0  # whole group's renders
    score_deadline_s: float = 300.0  # whole group's scoring
    length_low_tokens: int = 150
    length_full_tokens: int = 3000
    length_high_tokens: int = 6000
    eval_samples_per_subject: int = 2

    def __post_init__(self) -> None:
        errors = self.problems()
        if errors:
            raise ValueError("; ".join(errors))

    def problems(self) -> list[str]:
        errors = []
        if not 0 < self.learning_rate < 1:
            errors.append("learning rate must be between 0 and 1")
        if self.num_generations < 2:
            errors.append("GRPO needs at least 2 generations per prompt")
        if self.prompts_per_step < 1:
            errors.append("prompts per step must be at least 1")
        if not 0 < self.top_p <= 1:
            errors.append("top_p must be in (0, 1]")
        if self.top_k < 0:
            errors.append("top_k must not be negative")
        if self.max_completion_length < 16:
            errors.append("max completion length must be at least 16 tokens")
        if self.max_steps < 1:
            errors.append("a run needs at least 1 step")
        if self.render_size not in (128, 192, 256, 320, 384, 448, 512, 600):
            errors.append("render size must be one of 128, 192, 256, 320, 384, 448, 512, 600")
        if self.scale_rewards not in ("none", "group", "batch"):
            errors.append("scale_rewards must be none, group or batch")
        if self.lora_r < 1 or self.lora_alpha < 1:
            errors.append("LoRA rank and alpha must be positive")
        if self.checkpoint_every < 1:
            errors.append("checkpoint every must be at least 1 step")
        if not self.length_low_tokens < self.length_full_tokens <= self.length_high_tokens:
            errors.append("length thresholds must satisfy low < full <= high")
        return errors

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunArguments":
        known = {f.name: f for f in fields(cls)}
        values = {}
        for key, value in (data or {}).items():
            if key in known:
                values[key] = value
        return cls(**values)

    @property
    def batch_size(self) -> int:
        return self.num_generations * self.prompts_per_step
