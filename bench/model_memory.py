"""Memory of LoRA-training the studio's tiny models on CPU: the peak resident set size (RSS) of a
process that loads the model and trains it GRPO steps, as the train worker does. The figures
are the `measured` ones of training/presets.py.

    .venv/bin/python bench/model_memory.py                    # the tiny presets (~6 min on 2 cores; 9 with the builds)
    .venv/bin/python bench/model_memory.py --model models/tiny-painter --completion-tokens 1024

Each model trains in a fresh process (python bench/model_memory.py --measure DIR), so the
peak is that of the training alone: Django set up (a train worker has it), torch, transformers,
TRL and PEFT imported, the model loaded in float32 with the run's LoRA (r 16, α 32, all linear
layers), and `--steps` GRPO steps with the run's defaults: G = 8 completions, per-device batch
1 × 8 accumulation, one torch thread. The studio's reward is computed by the render and score
workers, other processes; a reward function that costs nothing stands in for it here.

A tiny preset not built under MODELS_DIR (a demo build takes 25-30 min: `manage.py
build_tiny_model`) is built here from its spec (the same examples, so the same tokenizer and
vocabulary, layers and widths) with one SFT step instead of the whole warm start, into
bench/out/: memory depends on the shapes and the token counts, not on what the weights learned. Every completion
runs to `--completion-tokens` (min_new_tokens: the end token is held back until then), so the
step is one of full-length replies whatever the weights: by default a length above the preset's
usual sketch (564 tokens for the text model, ~2.4K for the VL model).

The peak is the kernel's high-water mark of the process's resident memory (VmHWM in
/proc/self/status): it counts the shared libraries' pages the process touched, not swap.
getrusage's ru_maxrss is not used: a process started by fork and exec keeps the parent's peak
in it (Linux carries the old address space's high-water mark across exec).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
OUT = REPO / "bench" / "out" / "model-memory"
GIB = 1024**3

# Completion cap per tiny preset: above its usual sketch (docs/performance.md, docs/training.md).
COMPLETION_TOKENS = {"tiny-painter": 1024, "tiny-painter-qwen3_5_moe": 3072}


def _status_bytes(field: str) -> int:
    """A memory line of /proc/self/status (in kB there), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_rss_bytes() -> int:
    return _status_bytes("VmHWM")


def current_rss_bytes() -> int:
    return _status_bytes("VmRSS")


def measure(model_dir: str, completion_tokens: int, steps: int) -> dict:
    """GRPO steps of `model_dir` with LoRA in this process; its memory figures."""
    import django

    django.setup()
    import logging
    import warnings

    import torch
    from datasets import Dataset
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    from paintenv.prompts import build_messages, make_subject
    from training.arguments import RunArguments, batch_layout
    from training.trainer.lora_reach import lora_config
    from training.trainer.model_loading import load_processing_class

    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    logging.getLogger("training").setLevel(logging.ERROR)
    torch.set_num_threads(1)  # as the trainer sets it on CPU (RunArguments.torch_threads)
    imported = current_rss_bytes()

    args = RunArguments.from_dict({"max_steps": steps, "max_completion_length": completion_tokens})
    config = GRPOConfig(**{
        **args.shared_with(GRPOConfig),
        **dataclasses.asdict(batch_layout(args, 1)),
        "output_dir": tempfile.mkdtemp(prefix="model-memory-"),
        "use_cpu": True, "bf16": False, "gradient_checkpointing": False,
        "use_vllm": False, "use_transformers_continuous_batching": False,
        "chat_template_kwargs": {"enable_thinking": False},
        "generation_kwargs": {"min_new_tokens": completion_tokens},  # every reply full length
        "logging_steps": 1, "save_strategy": "no", "report_to": [], "disable_tqdm": True, "seed": 0,
    })
    prompts = Dataset.from_list([{"prompt": build_messages(make_subject("a scarlet hibiscus"))}] * steps)
    trainer = GRPOTrainer(
        model=model_dir, reward_funcs=[lambda completions, **kw: [float(len(str(c)) % 7) for c in completions]],
        args=config, train_dataset=prompts, processing_class=load_processing_class(model_dir),
        peft_config=lora_config(args),
    )
    loaded = current_rss_bytes()
    started = time.perf_counter()
    trainer.train()
    unique = {id(p): p for p in trainer.model.parameters()}.values()  # a tied lm_head counted once
    parameters, trainable = sum(p.numel() for p in unique), sum(p.numel() for p in unique if p.requires_grad)
    lengths = [row["completions/mean_length"] for row in trainer.state.log_history if "completions/mean_length" in row]
    return {
        "model": model_dir,
        "parameters": parameters - trainable, "trainable": trainable,
        "steps": steps, "completion_tokens_cap": completion_tokens,
        "completion_tokens_mean": round(sum(lengths) / len(lengths), 1) if lengths else None,
        "rss_after_imports_bytes": imported, "rss_after_load_bytes": loaded, "peak_rss_bytes": peak_rss_bytes(),
        "train_seconds": round(time.perf_counter() - started, 1),
    }


def built(path: Path) -> bool:
    return (path / "config.json").is_file()


def stand_in(folder: str) -> Path:
    """The tiny preset `folder` with its shapes and a few SFT steps (see the module's docstring)."""
    from demo.tiny_model import TinyModelSpec, build_tiny_model
    from demo.tiny_vl_model import TinyVLSpec, build_tiny_vl_model

    out = OUT / folder
    if built(out):
        return out
    spec, build = ((TinyVLSpec(), build_tiny_vl_model) if folder.endswith("qwen3_5_moe")
                   else (TinyModelSpec(), build_tiny_model))
    # The demo spec as it is, so its examples and their tokenizer (the vocabulary sets the logits'
    # size; the text model's revision drafts are judged in Chromium, 2-3 min), but one SFT step.
    examples = spec.sft_sketches + spec.sft_revisions + spec.sft_keeps
    spec = dataclasses.replace(spec, sft_batch_size=4, sft_epochs=4 / examples)
    print(f"building a stand-in of {folder} (its spec, one SFT step) into {out}", flush=True)
    build(out, spec)
    return out


def run_measure(model_dir: Path, completion_tokens: int, steps: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", str(model_dir), "--completion-tokens", str(completion_tokens),
         "--steps", str(steps)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"measuring {model_dir} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(name: str, source: str, figures: dict) -> None:
    gib = {k: figures[k] / GIB for k in ("rss_after_imports_bytes", "rss_after_load_bytes", "peak_rss_bytes")}
    print(f"{name} ({source}): {figures['parameters']:,} parameters, {figures['trainable']:,} LoRA; "
          f"{figures['steps']} GRPO steps of 8 completions, mean {figures['completion_tokens_mean']} tokens "
          f"(cap {figures['completion_tokens_cap']}), {figures['train_seconds']:.0f} s")
    print(f"  RSS after imports {gib['rss_after_imports_bytes']:.2f} GiB, with the model {gib['rss_after_load_bytes']:.2f} GiB, "
          f"peak {gib['peak_rss_bytes']:.2f} GiB ({figures['peak_rss_bytes'] / 2**20:,.0f} MiB)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="a model folder (default: the tiny presets)")
    parser.add_argument("--completion-tokens", type=int, default=None, help="longest completion (default: per preset)")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (the first also warms up)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        print(json.dumps(measure(options.measure, options.completion_tokens or 1024, options.steps)))
        return

    import django

    django.setup()
    from django.conf import settings

    if options.model:
        targets = [(Path(m).name, Path(m), "as given") for m in options.model]
    else:
        targets = []
        for folder in COMPLETION_TOKENS:
            path = Path(settings.MODELS_DIR) / folder
            targets.append((folder, path, "built") if built(path) else (folder, stand_in(folder), "stand-in"))
    print(f"{os.cpu_count()} CPUs; torch threads 1", flush=True)
    for name, path, source in targets:
        tokens = options.completion_tokens or COMPLETION_TOKENS.get(name, 1024)
        report(name, source, run_measure(path, tokens, options.steps))


if __name__ == "__main__":
    main()
