"""TRL's GRPOTrainer for runs with revision turns: the paintings a vision-language model was
shown in its feedback reach the loss's forward pass.

Why a subclass: under a `rollout_func`, TRL 1.16 builds image inputs for the forward pass only
from the dataset's images or from tool responses' images (`_generate_and_score_completions`:
`images = None` after the rollout function, and `self.tools and tool_images` for the rest); a
rollout function's other output columns go to the reward functions only. So the rollout
function (training/trainer/turns.py) returns the paintings it showed in a `feedback_images` column,
and this class takes that column out before the rewards see it and hands the paintings to
every forward pass over the batch: the old and reference log-probabilities (when TRL computes
them) and the loss, with `num_images` so TRL splits them with their rows when it shuffles and
cuts the batch. Without that column (a text model) it is StudioGRPOTrainer unchanged
(training/trainer/generation.py).
"""
from __future__ import annotations

from typing import Any

import torch

from training.trainer.feedback_images import FEEDBACK_IMAGES, IMAGE_KEYS, stacked
from training.trainer.generation import StudioGRPOTrainer


class RevisionGRPOTrainer(StudioGRPOTrainer):
    _shown: dict[str, Any] | None = None  # the generation batch's paintings, while it is scored

    def _generate(self, prompts: list):
        generated = super()._generate(prompts)
        extra_fields = generated[5]  # (prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, ...)
        shown = extra_fields.pop(FEEDBACK_IMAGES, None)
        self._shown = stacked(shown, device=self.accelerator.device) if shown else None
        return generated

    def _generate_and_score_completions(self, inputs):
        try:
            output = super()._generate_and_score_completions(inputs)
            if self._shown is not None:
                output.update(self._shown)  # _compute_loss passes them to the forward pass
            return output
        finally:
            self._shown = None

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **kwargs):
        """TRL's, with the batch's paintings: given by the caller (the loss: they travel with
        the batch) or, inside `_generate_and_score_completions`, the ones just generated with.

        It runs chunk by chunk itself so that a chunk whose rows hold no painting gets no
        image inputs: TRL's own chunking would give it an empty pixel tensor, which Qwen's
        vision tower refuses."""
        images = {k: kwargs.get(k) for k in IMAGE_KEYS}
        if images["pixel_values"] is None and self._shown is not None:
            images = self._shown
        if images["image_grid_thw"] is None or images["num_images"] is None:
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **kwargs)
        rest = {k: v for k, v in kwargs.items() if k not in IMAGE_KEYS}
        token_types = rest.pop("mm_token_type_ids", None)
        if token_types is None:  # Qwen's multimodal RoPE places the image by its tokens
            token_types = (input_ids == self.model.config.image_token_id).long()
        num_images = list(images["num_images"])
        first_image = [0, *torch.tensor(num_images).cumsum(0).tolist()]
        patches = images["image_grid_thw"].prod(-1)
        first_patch = [0, *patches.cumsum(0).tolist()]
        logps, entropies, aux = [], [], []
        size = batch_size or input_ids.size(0)
        for start in range(0, input_ids.size(0), size):
            end = min(start + size, input_ids.size(0))
            a, b = first_image[start], first_image[end]
            chunk = dict(rest)
            if b > a:
                chunk.update(pixel_values=images["pixel_values"][first_patch[a]:first_patch[b]],
                             image_grid_thw=images["image_grid_thw"][a:b], num_images=num_images[start:end],
                             mm_token_type_ids=token_types[start:end])
            lp, ent, al = super()._get_per_token_logps_and_entropies(
                model, input_ids[start:end], attention_mask[start:end], logits_to_keep,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **chunk)
            logps.append(lp)
            entropies.append(ent)
            aux.append(al)
        return (torch.cat(logps), torch.cat(entropies) if compute_entropy else None,
                torch.stack(aux).mean() if compute_aux_loss else None)
