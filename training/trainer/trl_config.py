"""TRL's GRPOConfig of a run's arguments: every run argument GRPOConfig also declares, plus what the
studio decides (devices, precision, the generation backend's fields, the batch layout, logging).
Django-free, so the GPU bench builds a run's exact config on a box without the web app;
training/trainer/grpo.py adds the run's folder, seed and tracking.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from training.arguments import RunArguments, batch_layout
from training.trainer.backends import trl_generation_arguments


def grpo_config_of(args: RunArguments, *, output_dir: str, seed: int, processes: int = 1, model_given: bool = False,
                   tracking: dict[str, Any] | None = None):
    """`model_given`: the trainer is handed a loaded model (GRPO from SFT), so TRL loads none itself."""
    import torch
    from trl import GRPOConfig

    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu if args.bf16 is None else args.bf16
    return GRPOConfig(**{
        **args.shared_with(GRPOConfig),
        **trl_generation_arguments(args, processes, on_gpu=on_gpu),
        "output_dir": output_dir,
        "push_to_hub": bool(args.hub_model_id),
        "hub_model_id": args.hub_model_id or None,
        "seed": int(seed),
        "use_cpu": not on_gpu,
        "bf16": bf16,
        "gradient_checkpointing": on_gpu,  # TRL defaults it on; on CPU it only costs time
        # Only for a model TRL loads itself (GRPO from SFT hands it the loaded model).
        "model_init_kwargs": {"dtype": "bfloat16"} if bf16 and not model_given else None,
        **asdict(batch_layout(args, processes)),
        "chat_template_kwargs": {"enable_thinking": False},  # Qwen3 templates think by default
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": args.checkpoint_every,
        "save_total_limit": 3,
        **(tracking or {"report_to": "none"}),
        "shuffle_dataset": False,
        "disable_tqdm": True,
    })
