"""TRL's SFTTrainer, with the loss on a CPU taken from the logits of the positions it trains on.

TRL 1.16 computes the SFT loss through a fused LM head that never builds the whole logits. Where
Triton runs (a GPU) it scores only the positions that have a label, in kernels. Elsewhere it
scores every position, the prompt's included, in tiles of torch operations: about a dozen
passes over positions x vocabulary each way, for the log-probability, the entropy and the
top-1 flag. On a CPU that made the LM head cost more than the rest of the model: a step of the
tests' painter (128 wide, a 4,687-token vocabulary, ~245 prompt and ~564 completion tokens)
took 0.23 s, and 0.16 s with the plain head below, to the same losses (2026-12-06, 1 thread).
Every warm start a curator or the demo builds on a CPU trains through this.

The plain path is the same loss: the mean negative log-likelihood of the labelled tokens over
`num_items_in_batch`, from the model's own logits (its own scaling and soft-capping applied), and
the same metrics (entropy and top-1 accuracy over the labelled tokens, tokens seen). Where it
would differ (a GPU, DFT, label smoothing, a custom loss function, a mixture-of-experts
auxiliary loss, padding-free batches), TRL's own compute_loss runs.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from trl import SFTTrainer

__all__ = ["StudioSFTTrainer"]

IGNORED = -100  # the label of a position that is not trained on


class StudioSFTTrainer(SFTTrainer):
    """SFTTrainer whose loss, on a CPU, comes from the trained positions' logits alone."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if return_outputs or not self._plain_head_applies(inputs):
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)
        mode = "train" if self.model.training else "eval"
        labels = inputs["labels"]
        forward = {name: value for name, value in inputs.items() if name not in ("labels", "use_cache")}
        logits = model(**forward, use_cache=False).logits[:, :-1]
        targets = labels[:, 1:]
        trained = targets != IGNORED
        picked, wanted = logits[trained].float(), targets[trained]
        count = trained.sum() if num_items_in_batch is None else num_items_in_batch
        loss = F.cross_entropy(picked, wanted, reduction="sum") / torch.as_tensor(count).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())  # as TRL: DDP averages
        self._record_metrics(mode, inputs, picked.detach(), wanted, trained.sum())
        return loss

    def _plain_head_applies(self, inputs: dict[str, Any]) -> bool:
        labels = inputs.get("labels")
        return (labels is not None and labels.device.type == "cpu" and "attention_mask" in inputs
                and self.args.loss_type in ("nll", "chunked_nll") and self.compute_loss_func is None
                and self.label_smoother is None and not self.aux_loss_enabled)

    def _record_metrics(self, mode: str, inputs: dict[str, Any], logits: torch.Tensor, targets: torch.Tensor,
                        valid: torch.Tensor) -> None:
        """TRL's entropy, mean_token_accuracy and num_tokens, over the same tokens."""
        gather = self.accelerator.gather_for_metrics
        with torch.no_grad():
            log_p = logits.log_softmax(-1)
            entropy = -(log_p.exp() * log_p).sum()
            correct = (logits.argmax(-1) == targets).sum()  # the first maximum, as TRL's top-1 flag
        valid, entropy, correct = gather(valid).sum(), gather(entropy).sum(), gather(correct).sum()
        self._metrics[mode]["entropy"].append((entropy / valid).item() if valid > 0 else 0.0)
        self._metrics[mode]["mean_token_accuracy"].append((correct / valid).item() if valid > 0 else 0.0)
        if mode == "train":
            seen = gather(inputs["attention_mask"].sum()).sum().item()
            self._total_train_tokens += seen // self._tp_size
        self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
