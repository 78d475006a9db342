"""A vision-language model sees its own painting in a revision turn (issue #16).

The feedback message of a vision-language base model holds the painting as an image part
before the text (`paintenv.feedback.revision_messages(painting_png=)`). The chat template
writes that part as one image placeholder (Qwen: `<|vision_start|><|image_pad|><|vision_end|>`);
a processor then widens the placeholder to one token per merged patch and gives the pixel
values and the patch grid. This module does the same two things with the model's own image
processor, because the rollout builds prompts as token ids (the tokens trained on are the
tokens generated) and because a Qwen3.5 processor cannot be built where torchvision is
missing (the CPU machines: its video processor needs it), while its image processor can.

Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 style only: an image processor that returns
`image_grid_thw` and a `merge_size`, and a placeholder widened to grid.prod() / merge_size²
copies, as their processors' `replace_image_token` does. A vision-language model of another
family gets the text feedback alone (`painting_encoder` returns None and says why).

The same encoded paintings go to generation (turn k > 1) and, through the `feedback_images`
column of the rollout function's output, to the loss's forward pass
(training/trainer/revision_trainer.py), so the model is trained on exactly the pixels it was shown.
"""
from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FEEDBACK_IMAGES = "feedback_images"  # the rollout function's column: per rollout, the paintings it was shown
IMAGE_KEYS = ("pixel_values", "image_grid_thw", "num_images")


@dataclass
class EncodedPainting:
    """One painting as the model reads it: its image processor's pixel values and patch grid,
    and how many placeholder tokens stand for it in the prompt."""

    png: bytes
    image: Any  # PIL.Image, RGB
    pixel_values: Any  # torch.Tensor (patches, features)
    image_grid_thw: Any  # torch.Tensor (1, 3): temporal, height, width patches
    tokens: int


class PaintingEncoder:
    """Turns a painting's PNG into what a Qwen-style vision-language model reads, and widens
    the chat template's image placeholders to match."""

    def __init__(self, image_processor, *, image_token: str, image_token_id: int):
        self.image_processor = image_processor
        self.image_token = image_token
        self.image_token_id = image_token_id

    def encode(self, png: bytes) -> EncodedPainting:
        from PIL import Image

        with Image.open(io.BytesIO(png)) as img:
            image = img.convert("RGB")
        return self.encode_image(image, png=png)

    def encode_image(self, image, *, png: bytes = b"") -> EncodedPainting:
        """A painting already opened (a chat's image part holds a PIL image, RGB)."""
        out = self.image_processor(images=[image], return_tensors="pt")
        grid = out["image_grid_thw"]
        return EncodedPainting(png=png, image=image, pixel_values=out["pixel_values"], image_grid_thw=grid,
                               tokens=int(grid[0].prod()) // self.image_processor.merge_size ** 2)

    def expand(self, text: str, paintings: Sequence[EncodedPainting]) -> str:
        """`text` with its i-th image placeholder widened to the i-th painting's token count."""
        pieces = text.split(self.image_token)
        if len(pieces) - 1 != len(paintings):
            raise ValueError(f"{len(pieces) - 1} image placeholders in the feedback for {len(paintings)} paintings")
        out = pieces[0]
        for painting, piece in zip(paintings, pieces[1:], strict=True):
            out += self.image_token * painting.tokens + piece
        return out

    def token_types(self, ids: Sequence[int]) -> list[int]:
        """The model's `mm_token_type_ids` for `ids`: 1 on image tokens (Qwen's multimodal RoPE reads them)."""
        return [1 if t == self.image_token_id else 0 for t in ids]


def painting_encoder(model_dir: str | Path, processing_class) -> PaintingEncoder | None:
    """The encoder for a Qwen-style vision-language base model; None for a text model, or for
    a vision-language model this studio cannot show a painting to (logged)."""
    from training.trainer.model_loading import accepts_images, text_tokenizer

    if not accepts_images(model_dir):
        return None
    image_processor = getattr(processing_class, "image_processor", None)
    if image_processor is None:
        from transformers import AutoImageProcessor

        image_processor = AutoImageProcessor.from_pretrained(model_dir)
    tokenizer = text_tokenizer(processing_class)
    image_token = getattr(processing_class, "image_token", None) or "<|image_pad|>"
    image_token_id = tokenizer.convert_tokens_to_ids(image_token)
    if getattr(image_processor, "merge_size", None) is None or image_token_id in (None, tokenizer.unk_token_id):
        log.warning("%s reads images, but not as Qwen-VL models do (merge_size, %s): revision turns give it text "
                    "feedback only", model_dir, image_token)
        return None
    return PaintingEncoder(image_processor, image_token=image_token, image_token_id=image_token_id)


def stacked(paintings: Sequence[Sequence[EncodedPainting]], device=None) -> dict[str, Any] | None:
    """The image inputs of a batch whose row i was shown `paintings[i]` (in order), as TRL
    passes them to a Qwen-style model: pixel_values and image_grid_thw concatenated over the
    batch's images, num_images per row. None when the batch holds no painting."""
    import torch

    flat = [p for row in paintings for p in row]
    if not flat:
        return None
    pixel_values = torch.cat([p.pixel_values for p in flat])
    image_grid_thw = torch.cat([p.image_grid_thw for p in flat])
    if device is not None:
        pixel_values, image_grid_thw = pixel_values.to(device), image_grid_thw.to(device)
    return {"pixel_values": pixel_values, "image_grid_thw": image_grid_thw, "num_images": [len(row) for row in paintings]}
