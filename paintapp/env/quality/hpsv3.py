"""HPSv3 quality scorer (name "hpsv3"): the published 7B image-preference model, in-process.

An optional extra for a GPU box: `pip install hpsv3` (it brings torch and transformers)
and the checkpoint, named by `PAINTAPP_HPSV3_CHECKPOINT` or the `checkpoint` argument.
Nothing is imported until the scorer is built, so this module loads anywhere; building it
where the package, CUDA or the weights are missing raises `HPSv3Unavailable` saying which.

HPSv3 answers (mu, sigma) per image; like the published reward we keep mu and map it to
[0, 1] with `mu_to_score` = 1 / (1 + exp(−mu / 4)).
"""
from __future__ import annotations

import io
import logging
import math
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_ENV = "PAINTAPP_HPSV3_CHECKPOINT"


class HPSv3Unavailable(RuntimeError):
    """The HPSv3 scorer cannot be built here (package, CUDA or weights missing)."""


def mu_to_score(mu: float) -> float:
    """The published mapping of HPSv3's mu to [0, 1]: 1 / (1 + exp(−mu / 4))."""
    x = -float(mu) / 4.0
    if x > 700:  # exp would overflow; the limit is exactly 0
        return 0.0
    return 1.0 / (1.0 + math.exp(x))


class HPSv3Scorer:
    name = "hpsv3"

    def __init__(
        self,
        checkpoint: str | None = None,
        config_path: str | None = None,
        device: str = "cuda",
        params: dict[str, Any] | None = None,
    ) -> None:
        params = dict(params or {})
        checkpoint = checkpoint or params.get("checkpoint") or os.environ.get(CHECKPOINT_ENV)
        config_path = config_path or params.get("config_path")
        device = params.get("device", device)
        if not checkpoint:
            raise HPSv3Unavailable(
                f"HPSv3 needs its weights: set {CHECKPOINT_ENV} (or pass checkpoint=) to the HPSv3 "
                "checkpoint file (.safetensors or .pth)"
            )
        if not os.path.exists(checkpoint):
            raise HPSv3Unavailable(f"HPSv3 checkpoint not found: {checkpoint} (from {CHECKPOINT_ENV} or checkpoint=)")
        try:  # hpsv3 first: where it is missing, fail fast without loading torch (seconds)
            import torch
            from hpsv3 import HPSv3RewardInferencer
        except ImportError as exc:
            raise HPSv3Unavailable(
                f"the HPSv3 scorer needs the optional 'hpsv3' package (and torch): pip install hpsv3 ({exc})"
            ) from exc
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise HPSv3Unavailable(f"HPSv3 was asked for device {device!r} but CUDA is not available")
        self._torch = torch
        self._inferencer = HPSv3RewardInferencer(config_path=config_path, checkpoint_path=checkpoint, device=device)
        self._lock = threading.Lock()  # one forward pass at a time on the shared model

    def score(self, png: bytes, *, prompt: str) -> float | None:
        """mu_to_score(mu) of the painting under `prompt`; None if decoding or inference fails."""
        try:
            from PIL import Image

            with Image.open(io.BytesIO(png)) as img:
                image = img.convert("RGB")
            with self._lock, self._torch.inference_mode():
                rewards = self._inferencer.reward(image_paths=[image], prompts=[prompt])
            mu = float(rewards[0][0])  # (mu, sigma) per image; the published reward keeps mu
        except Exception:  # noqa: BLE001 - a failed inference is "no answer", never a 0
            log.exception("HPSv3 inference failed")
            return None
        if not math.isfinite(mu):
            return None
        return mu_to_score(mu)
