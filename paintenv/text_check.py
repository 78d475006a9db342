"""Writing in a painting, in any script and at any angle: the verdict `painted_text`.

The gate refuses `text()`, but letters can be painted with the allowed calls: brush squares
laid out from a bitmap font spell "PICK ME 10/10", 好 or five stars clearly enough for a
person, and for the VLM judge of the published recipes (Qwen3-VL reads Chinese, mirrored and
sideways writing) that is a prompt injection, not a painting. So every painting that passes
the render is looked at for writing before it is scored.

Round two read English words with Tesseract, turned by at most ±20° or ±90°; writing at other
angles, mirrored, in another script, as grade symbols or knocked out of a wash passed it, and
its reading flipped from render to render. A general OCR detector does not solve it either:
PP-OCRv4's text detector (rapidocr-onnxruntime, models inside the wheel) finds rotated and
Chinese writing but also boxes the centre of about half the demo pool's flowers, and its
multilingual recogniser reads those centres as 福 or 囍 at up to 0.76 confidence (measured on
the demo pool at 384 px; docs/sandbox.md). So the studio looks with a detector of its own,
trained on its own renders: a small fully convolutional network (7 convolutions, 3 x 3,
~53k weights, `text_detector.npz` beside this module) that maps a 384 x 384 painting to a
24 x 24 grid of "writing here" probabilities. It was trained by `scripts/train_text_detector.py`
on 300 demo-style paintings of three other seeds with writing composited into them: the studio's
bitmap glyphs (Latin, Chinese, grade symbols) rendered by Chromium in every brush style, and
DejaVu letters, each turned by any angle, mirrored, scaled, dotted, blurred and cut into
chunks. It runs here in numpy (one BLAS thread, ~20 ms of CPU a painting), so a render
worker loads no deep-learning runtime.

A painting has writing when the mean probability over some 2 x 2 cells (32 x 32 px at 384)
reaches THRESHOLD, 0.975: the demo pool's highest painting scores 0.968 (an overfilled iris's
bands of wash), the seed sketches' 0.839. Measured at 384 px (bench/painted_text.py, docs/
performance.md): 0 of 197 demo-pool paintings, 0 of 100 seed sketches and 0 of 15 good and
corpus sketches refused; 115 of 140 cases of the writing cross product caught (Latin 59/66,
Chinese 29/34, grade symbols 27/40; tiny writing 0 of 10 is most of what it misses), round two's
English corpus 91 of 91. A probability is a smooth function of the pixels, and same-seed
renders differ only in a few pixels of their watercolour fills: over two renders of the 140
cases (a fresh and a warm renderer) no verdict flipped and no score moved by more than 0.004.
The detector's weights missing or unreadable is infrastructure: `TextCheckUnavailable`, never
a verdict.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image
from threadpoolctl import threadpool_limits

from paintenv.image import as_array

__all__ = ["INPUT_SIZE", "THRESHOLD", "WEIGHTS", "TextCheck", "TextCheckUnavailable", "TextFinding",
           "get_text_check"]

WEIGHTS = Path(__file__).with_name("text_detector.npz")
INPUT_SIZE = 384  # px: the training render size; any other painting is resized to it first
THRESHOLD = 0.975  # the 2 x 2-cell mean probability from which a painting has writing (see below)
_AREAS = ((0, "top left"), (1, "top"), (2, "top right"), (3, "left"), (4, "centre"), (5, "right"),
          (6, "bottom left"), (7, "bottom"), (8, "bottom right"))


class TextCheckUnavailable(Exception):
    """The detector's weights are missing or unreadable: the painting cannot be looked at (infrastructure)."""


@dataclass(frozen=True)
class TextFinding:
    legible: bool
    where: tuple[str, ...] = ()  # the parts of the painting with writing ("top left", "centre", ...)
    score: float = 0.0  # the largest 2 x 2-cell mean probability: THRESHOLD and above is writing
    elapsed_ms: float = 0.0
    grid: np.ndarray | None = field(default=None, compare=False, repr=False)  # the pooled probabilities

    def to_dict(self) -> dict:
        return {"legible": self.legible, "where": list(self.where), "score": round(self.score, 4),
                "elapsed_ms": round(self.elapsed_ms, 1)}


def _conv_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, relu: bool = True) -> np.ndarray:
    """A 3 x 3 (or 1 x 1) convolution with zero padding, as one matrix product (x: H x W x C;
    w: out x in x k x k, PyTorch's layout)."""
    k = w.shape[-1]
    if k > 1:
        x = np.pad(x, ((k // 2, k // 2), (k // 2, k // 2), (0, 0)))
        windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(0, 1))[::stride, ::stride]
        h, wd = windows.shape[:2]
        cols = windows.reshape(h * wd, -1)  # (C, k, k) per window, PyTorch's (in, kh, kw) order
    else:
        x = x[::stride, ::stride]
        h, wd = x.shape[:2]
        cols = x.reshape(h * wd, -1)
    out = cols @ w.reshape(w.shape[0], -1).T + b
    if relu:
        np.maximum(out, 0, out=out)
    return out.reshape(h, wd, -1)


class TextCheck:
    """Looks at paintings for writing. Loads its weights on first use; thread-safe (numpy only)."""

    def __init__(self, weights: Path | str | None = None) -> None:
        self.weights = Path(weights) if weights is not None else WEIGHTS
        self._layers: list[tuple[np.ndarray, np.ndarray, int]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> list[tuple[np.ndarray, np.ndarray, int]]:
        with self._lock:
            if self._layers is None:
                try:
                    with np.load(self.weights) as data:
                        strides = [int(s) for s in data["strides"]]
                        self._layers = [(data[f"w{i}"].astype(np.float32), data[f"b{i}"].astype(np.float32), s)
                                        for i, s in enumerate(strides)]
                except (OSError, KeyError, ValueError) as exc:
                    raise TextCheckUnavailable(f"the writing detector's weights cannot be read from "
                                               f"{self.weights}: {exc}") from exc
            return self._layers

    def probabilities(self, png: bytes) -> np.ndarray:
        """The painting's 24 x 24 grid of writing probabilities (each cell 16 x 16 px at 384)."""
        layers = self._load()
        image = Image.fromarray(as_array(png)).convert("RGB")
        if image.size != (INPUT_SIZE, INPUT_SIZE):
            image = image.resize((INPUT_SIZE, INPUT_SIZE), Image.BILINEAR)
        x = np.asarray(image, dtype=np.float32) / 127.5 - 1.0
        for i, (w, b, stride) in enumerate(layers):
            x = _conv_relu(x, w, b, stride, relu=i < len(layers) - 1)
        return 1.0 / (1.0 + np.exp(-x[..., 0]))

    def find(self, png: bytes) -> TextFinding:
        """Whether the painting has writing, and where."""
        started = time.perf_counter()
        # numpy's OpenBLAS would spread the products over every core and spin, taking CPU from
        # the Chromium renders beside it
        with threadpool_limits(limits=1, user_api="blas"):
            grid = self.probabilities(png)
        pooled = (grid[:-1, :-1] + grid[1:, :-1] + grid[:-1, 1:] + grid[1:, 1:]) / 4
        score = float(pooled.max())
        legible = score >= THRESHOLD
        where: tuple[str, ...] = ()
        if legible:
            rows, cols = np.nonzero(pooled >= THRESHOLD)
            n = pooled.shape[0]
            areas = {(3 * r) // n * 3 + (3 * c) // n for r, c in zip(rows, cols)}
            where = tuple(name for index, name in _AREAS if index in areas)
        return TextFinding(legible, where, score, (time.perf_counter() - started) * 1000, pooled)


_shared: TextCheck | None = None
_shared_lock = threading.Lock()


def get_text_check() -> TextCheck:
    """This process's text check."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TextCheck()
        return _shared
