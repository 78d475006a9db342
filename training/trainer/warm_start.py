"""GRPO from SFT: a GRPO run whose LoRA starts as an SFT run's adapter.

The method is to continue the same LoRA, not to merge it into the base: the GRPO trainer gets
the base model with the SFT adapter loaded trainable (PEFT's `is_trainable=True`) and no new
LoRA config. Why:
- GRPO then trains exactly what SFT learned, at the same rank, and its step-0 policy is the SFT
  model, which the start check below shows;
- the base model stays the shared one on disk: a merge writes a second full copy (~70 GB in
  bf16 for the published 35B model) before GRPO could start, and vLLM would load that copy;
- the GRPO run's adapter stays one adapter on the published base, which the editor, the
  evaluation, the export and "Merge" read like any run's.
The cost: the GRPO run's LoRA rank and α are the SFT run's (the launch copies them).

The start check: at step 0 the trainer's LoRA weights are hashed and compared with the SFT
adapter's saved file (Run.init_check), so the run page shows that GRPO began from them.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from transformers import TrainerCallback

from paintapp.lib.db import outlasting_restarts
from training.models import Run

log = logging.getLogger(__name__)
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def weights_digest(tensors: dict) -> tuple[str, int]:
    """sha256 over the tensors' names and float32 values in name order, and their parameter count."""
    import torch

    digest = hashlib.sha256()
    count = 0
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu", torch.float32).contiguous()
        digest.update(name.encode())
        digest.update(tensor.numpy().tobytes())
        count += tensor.numel()
    return digest.hexdigest(), count


def adapter_file_digest(adapter_dir: str | Path) -> tuple[str, int]:
    from safetensors.torch import load_file

    return weights_digest(load_file(str(Path(adapter_dir) / ADAPTER_WEIGHTS)))


def continued_model(init_run: Run, *, bf16: bool):
    """The base model with `init_run`'s adapter loaded trainable: what the GRPO trainer trains."""
    import torch
    from peft import PeftModel

    from training.trainer.model_loading import architecture

    model = architecture(init_run.base_model).from_pretrained(
        init_run.base_model, dtype=torch.bfloat16 if bf16 else torch.float32)
    return PeftModel.from_pretrained(model, str(init_run.adapter_dir), is_trainable=True)


class StartCheckCallback(TrainerCallback):
    """At step 0 of a GRPO run from SFT, compare the trainer's LoRA weights with the SFT
    adapter's file and record it on the run (a resumed run starts from its checkpoint instead)."""

    def __init__(self, run: Run):
        self.run_id = run.id
        self.init_run_id = run.init_run_id
        self.adapter_dir = run.init_run.adapter_dir

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if not state.is_world_process_zero or state.global_step != 0 or model is None:
            return
        from peft import get_peft_model_state_dict

        trained, count = weights_digest(get_peft_model_state_dict(model))
        saved, saved_count = adapter_file_digest(self.adapter_dir)
        check = {"init_run": self.init_run_id, "adapter": str(self.adapter_dir), "step": 0,
                 "sha256": trained, "parameters": count, "adapter_sha256": saved,
                 "adapter_parameters": saved_count, "matches": trained == saved}
        if not check["matches"]:
            log.warning("run %s: the LoRA at step 0 is not run %s's adapter (%s vs %s)", self.run_id,
                        self.init_run_id, trained[:12], saved[:12])
        outlasting_restarts(lambda: Run.objects.filter(id=self.run_id).update(init_check=check),
                            what="recording the start check")
