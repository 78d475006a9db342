"""Launch refusals for a GPU run, with the arithmetic, from what the train and score workers
report of themselves (system/capabilities.py: their GPUs and each one's memory).

- **vllm-server on the trainer's own GPU.** NCCL refuses two ranks on one device, so TRL's weight
  sync to a `trl vllm-serve` on the GPU the trainer uses fails at the first step. A run whose
  vLLM server URL is this machine's, on a train worker whose every GPU trains, is refused.
- **A budget that cannot fit.** Per training GPU, training/memory.py's arithmetic: the policy's
  weights, the LoRA and its optimizer state, the CUDA context, then the larger of the generation
  phase (KV cache for the run's sequences and lengths, or a colocated vLLM's share of the GPU)
  and the training phase (checkpointed activations, the fused LM head's tiles), plus HPSv3 when a
  score worker on the same machine has a GPU and the recipe scores with it. Each process holds a
  whole copy unless an accelerate config shards it. Over the smallest training GPU's memory, the
  launch is refused, and the message lists every term with its sum.

The model's shape is read from its config.json and weight files on this machine (a folder, or a
Hub model already in the cache); a preset's model not here yet (training/presets.py) counts its
preset's shape; any other model is not checked, and the first step shows. Nothing here runs
without a GPU worker.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

from huggingface_hub import snapshot_download
from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

from paintenv.reward import Recipe
from training.arguments import GRPO, RunArguments
from training.memory import GIB, ModelShape, parameters_on_disk, run_budget, weight_files
from training.presets import preset_for

__all__ = ["GIB", "BudgetRefused", "check", "model_folder", "shape_here", "training_gpus", "weights_bytes"]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class BudgetRefused(ValueError):
    pass


def model_folder(base_model: str) -> Path | None:
    """The model's folder on this machine (a folder, or a Hub id's snapshot in the cache); None when not here."""
    folder = Path(base_model)
    if folder.is_dir():
        return folder
    try:
        return Path(snapshot_download(base_model, local_files_only=True))
    except (LocalEntryNotFoundError, HFValidationError, OSError, ValueError):
        return None


def weights_bytes(base_model: str) -> int | None:
    """The size of the model's weight files on this machine; None when it is not here."""
    folder = model_folder(base_model)
    files = weight_files(folder) if folder else []
    return sum(f.stat().st_size for f in files) or None


def shape_here(base_model: str) -> ModelShape | None:
    """The model's shape from its config.json and weight files on this machine; None when it is
    not here. A config without the sizes gives a shape of the weights alone (the budget says so)."""
    folder = model_folder(base_model)
    if folder is None:
        return None
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    text = config.get("text_config") or config if isinstance(config, dict) else {}
    counted = parameters_on_disk(folder, text.get("dtype") or text.get("torch_dtype") or config.get("torch_dtype"))
    if counted is None:
        return None
    parameters, how = counted
    try:
        return ModelShape.from_config(config, parameters=parameters, source=f"its config.json and weights here ({how})")
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return ModelShape.weights_only(parameters, source=f"its weights here ({how}); its config.json gives no sizes")


def training_gpus(args: RunArguments, gpu_count: int) -> int:
    """How many of the train worker's GPUs the run trains on (num_processes 0: all of them)."""
    return max(1, gpu_count if args.num_processes == 0 else args.num_processes)


def check(args: RunArguments, recipe: Recipe, base_model: str, workers: list[dict], *, kind: str = GRPO) -> None:
    """Raise BudgetRefused with the arithmetic when the run cannot fit the reporting GPU worker."""
    trainers = [w for w in workers if "train" in w.get("queues", []) and w.get("gpus")]
    if not trainers:
        return  # no GPU train worker: a CPU run, or one the worker check refuses
    problems = [problem for worker in trainers
                if (problem := _problem(args, recipe, base_model, worker, workers, kind=kind))]
    if len(problems) == len(trainers):
        raise BudgetRefused("; ".join(problems))


def _problem(args: RunArguments, recipe: Recipe, base_model: str, worker: dict, workers: list[dict], *,
             kind: str) -> str | None:
    host = worker.get("host") or worker.get("hostname", "?").split("@")[-1]
    gpus = worker["gpus"]
    using = training_gpus(args, len(gpus))
    if args.generation == "vllm-server" and _is_local(args.vllm_server_base_url, host) and using >= len(gpus):
        return (f"the vLLM server at {args.vllm_server_base_url} is on the train worker's machine ({host}), whose "
                f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} the run trains on all ({using}): NCCL refuses two "
                "ranks on one device, so the first weight sync would fail. Serve vLLM on a GPU the run does not use "
                "(make trl-vllm-server VLLM_GPUS=1 on a 2-GPU box, with num_processes 1), on another machine, or "
                "generate with vllm-colocate")
    memory = worker.get("gpu_memory_mib") or []
    if not memory or args.accelerate_config:
        return None
    shape, preset = shape_here(base_model), None
    if shape is None and (preset := preset_for(base_model)) is not None:
        shape = preset.shape
    if shape is None:
        return None
    gpu_gib = min(memory[:using]) / 1024
    hpsv3 = recipe.quality == "hpsv3" and recipe.w_quality > 0 and any(
        "score" in w.get("queues", []) and w.get("gpus") and (w.get("host") == host) for w in workers)
    budget = run_budget(shape, args, kind=kind, processes=using, gpu_gib=gpu_gib, hpsv3=hpsv3)
    if budget.total_gib <= gpu_gib:
        return None
    advice = ("lower vllm_gpu_memory_utilization or the completion length, shard the policy with an accelerate "
              "config, move HPSv3 to another GPU, or choose a smaller model")
    shaped = f"{base_model} as {shape.source}"
    if preset is not None:  # weighing the model itself may say otherwise
        get = preset.build_command if preset.local else f"manage.py fetch_model {preset.key}"
        shaped = f"{base_model} by its preset ({shape.source}), as it is not on this machine"
        advice += f" (or put it on this machine, {get}, to weigh it instead)"
    return (f"the run needs {budget.total_gib:.1f} GiB on each training GPU ({shaped}: {budget.explain()}), and the "
            f"train worker on {host} has {gpu_gib:.1f} GiB ({gpus[0]}): {advice}")


def _is_local(url: str, host: str) -> bool:
    name = urlparse(url).hostname or ""
    return name in LOCAL_HOSTS or name == host
