"""Generation backends and batch layouts on this machine: tokens/s and GRPO step time.

Trains the tiny model for a few GRPO steps per configuration with the run's own GRPOConfig,
LoRA and trainer class (training/grpo/trl_config.py, generation.py), rewarded by the static gate alone (in-process, so no
workers are needed and the step is generation + update). Generation time is measured as
the app measures it (from the step's start to the reward call); tokens/s is the step's
completion tokens over that time.

    .venv/bin/python bench/generation.py [--model models/tiny-painter-tests] [--steps 4]
        [--backends generate continuous-batching] [--layouts 1x8 8x1] [--max-completion-length 512]

Prints one line per step and, per configuration, the median over the steps after the first
(the first also compiles and warms caches). The GPU box's bench, with preset-shaped models,
peak memory against the budget and HPSv3, is bench/gpu/.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

import django  # noqa: E402

django.setup()

from paintenv.gate import gate_reply  # noqa: E402
from paintenv.prompts import SUBJECTS, build_messages, make_subject  # noqa: E402
from training.arguments import RunArguments  # noqa: E402
from training.trainer.backends import FOLDING_BACKENDS  # noqa: E402
from training.trainer.lora_reach import lora_config  # noqa: E402
from training.trainer.rewarding import completion_text  # noqa: E402
from training.trainer.trl_config import grpo_config_of  # noqa: E402


class GateReward:
    """1 for a reply whose sketch passes the gate, else 0; records each call's tokens and time."""

    __name__ = "gate"

    def __init__(self):
        self.step_started = time.monotonic()
        self.calls: list[tuple[int, float]] = []  # (completion tokens, generation seconds)

    def __call__(self, prompts, completions, completion_ids, **kwargs):
        self.calls.append((sum(len(ids) for ids in completion_ids), time.monotonic() - self.step_started))
        return [1.0 if gate_reply(completion_text(c))[1].passed else 0.0 for c in completions]


def measure(model: str, generation: str, layout: str, steps: int, max_completion_length: int, threads: int):
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback

    from training.trainer.generation import StudioGRPOTrainer

    per_device, accumulation = (int(n) for n in layout.split("x"))
    args = RunArguments(max_steps=steps, generation=generation, per_device_train_batch_size=per_device,
                        gradient_accumulation_steps=accumulation, max_completion_length=max_completion_length,
                        checkpoint_every=10_000, warmup_steps=0, torch_threads=threads)
    torch.set_num_threads(threads)
    reward = GateReward()
    step_times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *_args, **_kwargs):
            reward.step_started = time.monotonic()

        def on_step_end(self, *_args, **_kwargs):
            step_times.append(time.monotonic() - reward.step_started)

    prompt = build_messages(make_subject(SUBJECTS[0].text))
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = StudioGRPOTrainer(
            model=model, reward_funcs=reward, args=grpo_config_of(args, output_dir=output_dir, seed=0),
            train_dataset=Dataset.from_list([{"prompt": prompt}] * (steps * args.prompts_per_step)),
            peft_config=lora_config(args), callbacks=[Clock()],
            fold_adapter=generation in FOLDING_BACKENDS, compile_decode=generation == "compiled",
        )
        trainer.train()
    rows = []
    for step, ((tokens, generation_s), step_s) in enumerate(zip(reward.calls, step_times), start=1):
        rows.append((tokens / generation_s, generation_s, step_s))
        print(f"  {generation:>19} {layout:>4} step {step}: {tokens} tokens in {generation_s:.1f} s "
              f"({tokens / generation_s:.0f} tokens/s), step {step_s:.1f} s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(REPO / "models" / "tiny-painter-tests"))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--backends", nargs="+", default=["generate", "compiled", "continuous-batching"])
    parser.add_argument("--layouts", nargs="+", default=["1x8", "8x1"], help="per-device batch x accumulation")
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    summary = []
    for generation in options.backends:
        for layout in options.layouts:
            rows = measure(options.model, generation, layout, options.steps, options.max_completion_length,
                           options.threads)
            later = rows[1:] or rows
            summary.append((generation, layout, *(statistics.median(column) for column in zip(*later))))
    print(f"\nmedian of steps 2-{options.steps}, {options.threads} thread(s), G = 8, "
          f"max_completion_length {options.max_completion_length}:")
    print(f"{'generation':>19} {'layout':>6} {'tokens/s':>9} {'generate s':>11} {'step s':>8}")
    for generation, layout, rate, generation_s, step_s in summary:
        print(f"{generation:>19} {layout:>6} {rate:>9.0f} {generation_s:>11.1f} {step_s:>8.1f}")


if __name__ == "__main__":
    main()
