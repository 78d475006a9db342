"""SFT training of one Run, in the shape of TRL's sft.py example script.

    config  = SFTConfig(...)                       # from the run's arguments (those for SFT)
    trainer = SFTTrainer(model, args=config, train_dataset, processing_class, peft_config, callbacks)
    trainer.train(); trainer.save_model()

The dataset is the run's frozen SftDataset (training/sft_dataset.py built it): conversational
prompt/completion rows whose prompt is GRPO's own system prompt and user message, so SFT
teaches the format GRPO samples; the loss is on the completion alone (TRL's
completion_only_loss). The LoRA is the GRPO run's (training/trainer/lora_reach.lora_config), so a
GRPO run can continue it (training/trainer/warm_start.py). The callbacks are the GRPO run's:
a Step row per logged step (loss, token accuracy, learning rate), the stop flag, sealed
checkpoints, tracking. training/trainer/lifecycle.py runs it like a GRPO run.
"""
from __future__ import annotations

import logging
from dataclasses import fields

from training.arguments import SFT, RunArguments, batch_layout
from training.models import Run
from training.sft_examples import CHAT_TEMPLATE_KWARGS, Example
from training.trainer import lora_reach
from training.trainer.lora_reach import lora_config
from training.trainer.model_loading import load_processing_class, text_tokenizer
from training.trainer.tracking import grpo_tracking_arguments

log = logging.getLogger(__name__)


def example_rows(run: Run) -> list[dict]:
    """The run's frozen examples as TRL's conversational prompt/completion rows."""
    return [Example(**example).chat() for example in run.sft_dataset.examples]


def fitting_rows(rows: list[dict], tokenizer, max_length: int) -> tuple[list[dict], int]:
    """The rows whose whole chat fits in `max_length` tokens, and how many did not."""
    kept = []
    for row in rows:
        text = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False, **CHAT_TEMPLATE_KWARGS)
        if len(tokenizer(text, add_special_tokens=False).input_ids) <= max_length:
            kept.append(row)
    return kept, len(rows) - len(kept)


def sft_config(run: Run, args: RunArguments, *, processes: int = 1):
    """TRL's SFTConfig: every SFT run argument SFTConfig also declares, plus what the app decides."""
    import torch
    from trl import SFTConfig

    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu if args.bf16 is None else args.bf16
    theirs = {f.name for f in fields(SFTConfig)}
    tracking = {k: v for k, v in grpo_tracking_arguments(run, args.report_to).items() if k in theirs}
    return SFTConfig(**{
        **args.shared_with(SFTConfig, kind=SFT),
        "output_dir": run.output_dir,
        "max_steps": run.max_steps,  # set at launch from the dataset and the epochs (RunArguments.steps_for)
        "push_to_hub": bool(args.hub_model_id),
        "hub_model_id": args.hub_model_id or None,
        "seed": int(run.seed),
        "data_seed": int(run.seed),
        "use_cpu": not on_gpu,
        "bf16": bf16,
        "activation_checkpointing": on_gpu,  # TRL defaults it on; on CPU it only costs time
        "model_init_kwargs": {"dtype": "bfloat16" if bf16 else "float32"},
        **batch_layout(args, processes).__dict__,
        "max_length": args.sft_max_length,
        "completion_only_loss": True,
        "packing": False,
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": args.checkpoint_every,
        "save_total_limit": 3,
        **tracking,
        "dataloader_num_workers": 0,
        "dataset_num_proc": None,
        "disable_tqdm": True,
    })


def build_sft_trainer(run: Run, args: RunArguments, task_id: str, *, processes: int = 1):
    """The run's SFTTrainer (TRL's, with a cheaper loss on a CPU) on its frozen dataset, with the GRPO
    run's LoRA and callbacks."""
    from datasets import Dataset

    from training.trainer.callbacks import CheckpointCallback, RunCallback, TrackingCallback
    from training.trainer.sft_trainer import StudioSFTTrainer

    tokenizer = text_tokenizer(load_processing_class(run.base_model))
    tokenizer.padding_side = "right"  # TRL's collator pads completions on the right
    rows, too_long = fitting_rows(example_rows(run), tokenizer, args.sft_max_length)
    if too_long:
        log.warning("run %s: %s of %s SFT examples are longer than %s tokens and left out", run.id, too_long,
                    too_long + len(rows), args.sft_max_length)
    if not rows:
        raise ValueError(f"no example of {run.sft_dataset.label} fits in sft_max_length={args.sft_max_length} tokens")
    trainer = StudioSFTTrainer(
        model=run.base_model,
        args=sft_config(run, args, processes=processes),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(args),
        callbacks=[RunCallback(run.id, None, task_id), CheckpointCallback(run.id), TrackingCallback(run, args.report_to)],
    )
    lora_reach.report(trainer.model)
    return trainer
