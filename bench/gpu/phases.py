"""The GPU bench's phases, each run by bench/gpu/run.py in a process of its own (a hang, a crash or
a compile that never ends costs that phase, and each phase's peak memory is its own):

    python3 bench/gpu/phases.py PHASE '{"...": ...}'   # prints RESULT {...} as its last line

Along the way it prints where it is, seconds from its start (`[  21.3 s] imported ...`, each
step's start and end), so a phase killed at its limit says in its report's tail how far it got.

- preflight: the versions the trainer imports, the GPU, the disk.
- make-model: the preset-shaped policy with random weights (bench/gpu/shapes.py).
- grpo: GRPO steps of the run's own GRPOConfig, LoRA and trainer class (StudioGRPOTrainer) with
  one generation backend: each step's tokens/s and split (generation, update), the first step's
  warm-up, peak GPU memory against training/memory.py's budget for the same run and prompt.
- hpsv3: the HPSv3 scorer on a Qwen2-VL-7B-shaped random base: load seconds, seconds a painting,
  peak memory against the 17 GiB the launch budget assumes.

Django-free: what a lent GPU machine without the web app can import (its own torch, and the
wheels bench/gpu/prepare.py carried).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

GIB = 1024**3
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers", "huggingface_hub",
            "safetensors", "numpy", "pyarrow")


def say(what: str) -> None:
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {what}", flush=True)


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def preflight(spec: dict[str, Any]) -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    import torch
    import transformers  # noqa: F401 - the imports the trainer needs, before any phase relies on them
    import trl  # noqa: F401

    from training.trainer.generation import StudioGRPOTrainer  # noqa: F401

    say("imported torch, transformers, TRL and the trainer")
    result: dict[str, Any] = {"versions": versions, "python": sys.version.split()[0], "cuda": torch.cuda.is_available(),
                              "vllm": importlib.util.find_spec("vllm") is not None,
                              "disk_free_gib": round(shutil.disk_usage(spec.get("work", "/tmp")).free / GIB, 1)}
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        result |= {"gpu": properties.name, "gpu_gib": round(properties.total_memory / GIB, 1),
                   "torch_cuda": torch.version.cuda}
    return result


def make_model(spec: dict[str, Any]) -> dict[str, Any]:
    from bench.gpu.shapes import make_policy

    out = Path(spec["model_dir"])
    if out.exists():
        shutil.rmtree(out)
    where = device()
    say(f"imported torch and transformers; making the {spec['shape']} policy on the {where}")
    result = make_policy(spec["shape"], out, device=where)
    (out / ".made").write_text(spec["shape"])  # whole: a later command in this work folder reuses it
    say(f"made in {result['made_s']} s, saved in {result['saved_s']} s")
    return result


class _Clock:
    """Each step's seconds: to the reward call (generation, as the run page measures it) and in all."""

    def __init__(self) -> None:
        self.started = 0.0
        self.generation: list[float] = []
        self.steps: list[float] = []


def grpo(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback

    from bench.gpu.shapes import studio_prompt
    from training import metrics as keys
    from training.arguments import RunArguments
    from training.memory import PROMPT_TOKENS, ModelShape, run_budget
    from training.trainer.backends import PREALLOCATED_CACHE
    from training.trainer.generation import StudioGRPOTrainer
    from training.trainer.lora_reach import lora_config
    from training.trainer.trl_config import grpo_config_of

    backend = spec["backend"]
    fold = backend != "generate-unfolded"
    generation = "generate" if backend == "generate-unfolded" else backend
    args = RunArguments(max_steps=spec["steps"], generation=generation, max_completion_length=spec["completion"],
                        warmup_steps=0, learning_rate=1e-5, checkpoint_every=100_000, torch_threads=1)
    clock = _Clock()

    class Clock(TrainerCallback):
        def on_step_begin(self, *_args, **_kwargs):
            say(f"step {len(clock.steps) + 1} of {spec['steps']} begins")
            clock.started = time.perf_counter()

        def on_step_end(self, *_args, **_kwargs):
            clock.steps.append(time.perf_counter() - clock.started)
            generation_s = clock.generation[-1] if len(clock.generation) == len(clock.steps) else float("nan")
            say(f"step {len(clock.steps)} of {spec['steps']}: {clock.steps[-1]:.1f} s "
                f"(generation {generation_s:.1f} s)")

    def varied_reward(prompts, completions, completion_ids, **kwargs):
        clock.generation.append(time.perf_counter() - clock.started)
        return [float(sum(ids) % 7) for ids in completion_ids]  # a spread in every group: a real gradient

    varied_reward.__name__ = "varied"
    say(f"imported torch, transformers and TRL; {backend}, {spec['steps']} steps of 8 x {spec['completion']} tokens")
    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    output = tempfile.mkdtemp(prefix="gpu-bench-run-")
    trainer = StudioGRPOTrainer(
        model=spec["model_dir"], reward_funcs=varied_reward, args=grpo_config_of(args, output_dir=output, seed=0),
        train_dataset=Dataset.from_list([{"prompt": studio_prompt()}] * spec["steps"]),
        peft_config=lora_config(args), callbacks=[Clock()], fold_adapter=fold, compile_decode=backend == "compiled",
    )
    say("trainer built: the model loaded, the LoRA on")
    trainer.train()
    say("trained")
    shutil.rmtree(output, ignore_errors=True)
    logged = [e for e in trainer.state.log_history if keys.TOKENS_PER_S in e]
    steps = []
    for entry, generation_s, step_s in zip(logged, clock.generation, clock.steps):
        steps.append({"tokens": int(entry[keys.COMPLETION_TOKENS]), "tokens_per_s": round(entry[keys.TOKENS_PER_S], 1),
                      "fold_s": round(entry[keys.FOLD_S], 3), "generation_s": round(generation_s, 2),
                      "update_s": round(step_s - generation_s, 2), "step_s": round(step_s, 2)})
    later = steps[1:] or steps
    config = json.loads((Path(spec["model_dir"]) / "config.json").read_text())
    shape = ModelShape.from_config(config, parameters=sum(p.numel() for p in trainer.model.get_base_model().parameters()
                                                          if p.requires_grad is False), source="the bench's model")
    prompt = trainer.processing_class.apply_chat_template(studio_prompt(), add_generation_prompt=True, tokenize=True,
                                                          **(trainer.chat_template_kwargs or {}))
    prompt_tokens = len(prompt["input_ids"] if isinstance(prompt, dict) or hasattr(prompt, "input_ids") else prompt)
    # A static or paged cache holds its whole length from the start: the budget's prompt allowance.
    budget = run_budget(shape, args, prompt_tokens=PROMPT_TOKENS if generation in PREALLOCATED_CACHE else prompt_tokens)
    result = {
        "backend": backend, "completion": spec["completion"], "steps": steps, "compile_failed": trainer.compile_failed,
        "tokens_per_s": round(statistics.median(s["tokens_per_s"] for s in later), 1),
        "generation_s": round(statistics.median(s["generation_s"] for s in later), 2),
        "update_s": round(statistics.median(s["update_s"] for s in later), 2),
        "step_s": round(statistics.median(s["step_s"] for s in later), 2),
        "warmup_s": round(steps[0]["step_s"] - statistics.median(s["step_s"] for s in later), 1) if len(steps) > 1 else None,
        "prompt_tokens": prompt_tokens, "budget_gib": round(budget.total_gib, 2), "budget": budget.explain(),
    }
    if on_gpu:
        result |= {"torch_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 2),
                   "torch_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 2)}
    return result


def hpsv3(spec: dict[str, Any]) -> dict[str, Any]:
    import io
    import random

    import torch
    from PIL import Image, ImageDraw

    from bench.gpu.shapes import QWEN2_VL_7B_VOCABULARY, make_hpsv3
    from paintenv.quality.hpsv3 import HPSv3Scorer
    from training.memory import HPSV3_GIB

    where = device()
    say(f"imported torch; building the {spec['shape']}-shaped base on the {where}")
    work = Path(tempfile.mkdtemp(prefix="gpu-bench-hpsv3-", dir=spec.get("work")))
    started = time.perf_counter()
    base, checkpoint = make_hpsv3(spec["shape"], work, device=where)
    built_s = time.perf_counter() - started
    say(f"built in {built_s:.1f} s; loading the scorer")
    if where == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    scorer = HPSv3Scorer(checkpoint=str(checkpoint), base_model=str(base), device=where)
    load_s = time.perf_counter() - started
    say(f"loaded in {load_s:.1f} s; scoring {spec['paintings']} paintings")
    rng = random.Random(0)
    seconds = []
    for _ in range(spec["paintings"]):
        image = Image.new("RGB", (600, 600), (250, 248, 242))
        draw = ImageDraw.Draw(image, "RGBA")
        for _ in range(40):
            x, y, r = rng.randint(0, 600), rng.randint(0, 600), rng.randint(20, 160)
            draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randint(0, 255) for _ in range(3)) + (90,))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        started = time.perf_counter()
        scorer.reward(buffer.getvalue(), prompt="Paint a peach hibiscus in loose watercolour.")
        if where == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
    embedding_rows = scorer.model.model.get_input_embeddings().weight.shape
    missing_gib = (QWEN2_VL_7B_VOCABULARY - embedding_rows[0]) * embedding_rows[1] * 2 / GIB
    result = {"built_s": round(built_s, 1), "load_s": round(load_s, 1), "first_s": round(seconds[0], 3),
              "per_painting_s": round(statistics.median(seconds[1:] or seconds), 3), "paintings": len(seconds),
              "parameters": sum(p.numel() for p in scorer.model.parameters()), "budget_gib": HPSV3_GIB,
              "embedding_rows_missing_gib": round(missing_gib, 2) if spec["shape"] == "qwen2-vl-7b" else 0.0}
    if where == "cuda":
        result |= {"torch_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 2),
                   "torch_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 2)}
    shutil.rmtree(work, ignore_errors=True)
    return result


PHASES = {"preflight": preflight, "make-model": make_model, "grpo": grpo, "hpsv3": hpsv3}


def main() -> None:
    phase, spec = sys.argv[1], json.loads(sys.argv[2])
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = PHASES[phase](spec)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
