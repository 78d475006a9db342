"""GRPO training of one Run, in the shape of TRL's example scripts (an SFT run's trainer is
training/trainer/sft.py; training/trainer/steps.py's `train_steps` trains either).

    config  = GRPOConfig(...)                      # from the run's hyper-parameters
    trainer = GRPOTrainer(model, reward_funcs, args=config, train_dataset, peft_config, callbacks)
    trainer.train(); trainer.save_model()

Everything app-specific lives in the reward function (training/trainer/rewarding.py) and the
callback (training/trainer/callbacks.py); with revision turns, in the rollout function
(training/trainer/turns.py), and the trainer is RevisionGRPOTrainer (training/trainer/revision_trainer.py):
GRPOTrainer plus the paintings a vision-language model was shown, in the loss's forward pass.

Around it, training/trainer/lifecycle.py decides which delivery of the run's task trains, from which
checkpoint and in how many processes, and writes how the run ended.
"""
from __future__ import annotations

import random

from paintenv.prompts import build_messages, make_subject
from training.arguments import RunArguments
from training.models import Run
from training.trainer import lora_reach, private_api
from training.trainer.auto_generation import resolved_generation
from training.trainer.backends import FOLDING_BACKENDS
from training.trainer.feedback_images import painting_encoder
from training.trainer.lora_reach import lora_config
from training.trainer.model_loading import load_processing_class
from training.trainer.tracking import grpo_tracking_arguments
from training.trainer.trl_config import grpo_config_of
from training.trainer.turns import RevisionRollout


def training_dataset(run: Run, args: RunArguments):
    """One row per GRPO group: the subjects in a seeded order, as chat messages."""
    from datasets import Dataset

    rng = random.Random(run.seed)
    subjects = list(run.subjects)
    rows = []
    for _ in range(args.max_steps * args.prompts_per_step):
        text = subjects[len(rows) % len(subjects)] if len(subjects) > 1 else subjects[0]
        rows.append({"prompt": build_messages(make_subject(text)), "subject": text})
    if len(subjects) > 1:
        rng.shuffle(rows)
    return Dataset.from_list(rows)


def grpo_config(run: Run, args: RunArguments, *, processes: int = 1, model_given: bool = False):
    """TRL's GRPOConfig of the run (training/trainer/trl_config.py), in its folder, with its seed and tracking."""
    return grpo_config_of(args, output_dir=run.output_dir, seed=run.seed, processes=processes, model_given=model_given,
                          tracking=grpo_tracking_arguments(run, args.report_to))


def build_trainer(run: Run, args: RunArguments, task_id: str, *, processes: int = 1, executor=None):
    """The run's GRPOTrainer; `executor`: where renders and scores run (painting.pipeline; the workers unless given)."""
    # transformers and torch load here, not with this module: `manage.py train_process` imports
    # it before its process starts watching the train task (launching.watch_parent), and their
    # ~5 s, far more on a busy box, would be a window in which the trainer's death goes unseen.
    from training.trainer.callbacks import CheckpointCallback, RunCallback, TrackingCallback
    from training.trainer.generation import StudioGRPOTrainer
    from training.trainer.rewarding import PaintingReward
    from training.trainer.warm_start import StartCheckCallback, continued_model

    args = resolved_generation(run, args)
    reward = PaintingReward(run, executor=executor)
    processing_class = load_processing_class(run.base_model)
    rollout, trainer_class = None, StudioGRPOTrainer
    if args.turns > 1:
        from training.trainer.revision_trainer import RevisionGRPOTrainer

        # Revision turns: the rollout function shows the model each painting (as an image too, to a
        # vision-language model) and asks again (training/trainer/turns.py); the trainer trains on what it saw.
        rollout = RevisionRollout(reward, turns=args.turns, subjects=run.subjects,
                                  paintings=painting_encoder(run.base_model, processing_class))
        trainer_class = RevisionGRPOTrainer
    private_api.check(trainer_class)
    callbacks = [RunCallback(run.id, reward, task_id), CheckpointCallback(run.id), TrackingCallback(run, args.report_to)]
    model, peft_config = run.base_model, lora_config(args)
    if run.init_run_id:  # GRPO from SFT: continue the SFT run's LoRA (training/trainer/warm_start.py says why)
        import torch

        bf16 = torch.cuda.is_available() if args.bf16 is None else args.bf16
        model, peft_config = continued_model(run.init_run, bf16=bf16), None
        callbacks.append(StartCheckCallback(run))
    trainer = trainer_class(
        model=model,
        processing_class=processing_class,
        reward_funcs=reward,
        rollout_func=rollout,
        args=grpo_config(run, args, processes=processes, model_given=run.init_run_id is not None),
        train_dataset=training_dataset(run, args),
        peft_config=peft_config,
        callbacks=callbacks,
        fold_adapter=args.generation in FOLDING_BACKENDS,
        compile_decode=args.generation == "compiled",
    )
    lora_reach.report(trainer.model)
    return trainer
