"""Launch refusals for a GPU run, with the arithmetic, from what the train and score workers
report of themselves (system/capabilities.py: their GPUs and each one's memory).

- **vllm-server on the trainer's own GPU.** NCCL refuses two ranks on one device, so TRL's weight
  sync to a `trl vllm-serve` on the GPU the trainer uses fails at the first step. A run whose
  vLLM server URL is this machine's, on a train worker whose every GPU trains, is refused.
- **A budget that cannot fit.** Per training GPU: the policy's weights (their size on disk, bf16
  as published; each process holds a whole copy unless an accelerate config shards it) plus
  POLICY_OVERHEAD for LoRA states, activations and the CUDA context, plus a colocated vLLM's
  share of the GPU, plus HPSv3 (HPSV3_GIB) when a score worker on the same machine has a GPU and
  the recipe scores with it. Over the smallest training GPU's memory, the launch is refused.

A model that is not on this machine (not yet fetched) cannot be weighed. A preset's model
(training/presets.py) then counts its preset's figure for the policy, labelled published,
estimated or measured; any other model is not checked, and the first step shows. Nothing here
runs without a GPU worker.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from huggingface_hub import snapshot_download
from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

from paintenv.reward import Recipe
from training.grpo.config import RunArguments
from training.presets import GIB, POLICY_OVERHEAD, preset_for

# POLICY_OVERHEAD, the share of the weights added for LoRA parameters and Adam states, activations
# and the CUDA context, lives in training/presets.py: its estimated figures are this same rule.
HPSV3_GIB = 17.0  # HPSv3 on Qwen2-VL-7B in bf16, per process that loads it
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class BudgetRefused(ValueError):
    pass


def weights_bytes(base_model: str) -> int | None:
    """The size of the model's weight files on this machine (a folder, or a Hub id already in
    the cache); None when it is not here."""
    folder = Path(base_model)
    if not folder.is_dir():
        try:
            folder = Path(snapshot_download(base_model, local_files_only=True))
        except (LocalEntryNotFoundError, HFValidationError, OSError, ValueError):
            return None
    files = list(folder.glob("*.safetensors")) or list(folder.glob("*.bin"))
    return sum(f.stat().st_size for f in files) or None


def training_gpus(args: RunArguments, gpu_count: int) -> int:
    """How many of the train worker's GPUs the run trains on (num_processes 0: all of them)."""
    return max(1, gpu_count if args.num_processes == 0 else args.num_processes)


def check(args: RunArguments, recipe: Recipe, base_model: str, workers: list[dict]) -> None:
    """Raise BudgetRefused with the arithmetic when the run cannot fit the reporting GPU worker."""
    trainers = [w for w in workers if "train" in w.get("queues", []) and w.get("gpus")]
    if not trainers:
        return  # no GPU train worker: a CPU run, or one the worker check refuses
    problems = [problem for worker in trainers if (problem := _problem(args, recipe, base_model, worker, workers))]
    if len(problems) == len(trainers):
        raise BudgetRefused("; ".join(problems))


def _problem(args: RunArguments, recipe: Recipe, base_model: str, worker: dict, workers: list[dict]) -> str | None:
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
    weights = weights_bytes(base_model)
    preset = preset_for(base_model) if weights is None else None
    if not memory or (weights is None and preset is None) or args.accelerate_config:
        return None
    gpu_gib = min(memory[:using]) / 1024
    if weights is not None:
        parts = [(f"policy {weights / GIB:.1f} GiB of weights + {POLICY_OVERHEAD:.0%}", weights / GIB * (1 + POLICY_OVERHEAD))]
    else:  # not on this machine: the preset's figure, and what it rests on
        parts = [(f"policy {preset.train_memory_gib:.1f} GiB, the {preset.key} preset's {preset.memory_source} figure "
                  f"as its weights are not on this machine: {preset.memory_note}", preset.train_memory_gib)]
    if args.generation == "vllm-colocate":
        share = args.vllm_gpu_memory_utilization
        parts.append((f"colocated vLLM {share:g} × {gpu_gib:.1f} GiB = {share * gpu_gib:.1f} GiB", share * gpu_gib))
    if recipe.quality == "hpsv3" and recipe.w_quality > 0 and any(
            "score" in w.get("queues", []) and w.get("gpus") and (w.get("host") == host) for w in workers):
        parts.append((f"HPSv3 {HPSV3_GIB:g} GiB (a score worker on {host} has a GPU)", HPSV3_GIB))
    total = sum(gib for _, gib in parts)
    if total <= gpu_gib:
        return None
    arithmetic = " + ".join(label for label, _ in parts)
    advice = ("lower vllm_gpu_memory_utilization, shard the policy with an accelerate config, move HPSv3 to another "
              "GPU, or choose a smaller model")
    if preset is not None:  # weighing the weights themselves may say otherwise
        get = preset.build_command if preset.local else f"manage.py fetch_model {preset.key}"
        advice += f" (or put it on this machine, {get}, to weigh its weights instead)"
    return (f"the run needs {total:.1f} GiB on each training GPU ({arithmetic}), and the train worker on {host} has "
            f"{gpu_gib:.1f} GiB ({gpus[0]}): {advice}")


def _is_local(url: str, host: str) -> bool:
    name = urlparse(url).hostname or ""
    return name in LOCAL_HOSTS or name == host
