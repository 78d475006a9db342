"""Legible writing in a painting: the verdict `painted_text`.

The gate refuses `text()`, but letters can be painted with the allowed calls: small brush
squares laid out from a bitmap font spell "PICK ME 10/10" clearly enough for a person, and
for the VLM judge of the published recipes that is a prompt injection, not a painting. So
every painting that passes the render is read by real OCR (Tesseract 5, LSTM, English,
through the `tesserocr` binding, with Debian's `tesseract-ocr-eng` data) before it is
scored, and a painting with a legible word or number fails like any other verdict.

Watercolour brush marks are dotted and faint, and OCR of a raw painting reads little of
them, so the painting is turned into black-on-white masks first, at 600 px (a smaller render
at twice its size):
  * all paint: every pixel farther than INK_DISTANCE from the paper colour, blurred a
    little so dotted marks join into strokes;
  * each of the paint's main colours (k-means, 3 clusters) alone: writing in one colour
    over a wash of another stands out only there.
Each mask is read with sparse-text page segmentation, and the all-paint mask also turned by
each of TURNS (tilted and vertical writing). A painting has legible writing when some word
has at least 4 letters or digits at confidence >= 70, or 3 at >= 88.

Measured (bench/painted_text.py): on the 200 demo-pool paintings and the seed sketches no
word reaches those bars (the best 4-character reading of a petal scored 54, the best
3-character one 79), while the hostile corpus (tests/paintenv/adversarial/painted_text.py) is
caught in 75 of 77 paintings; each painting costs about 0.2-0.3 s of one core.
Tesseract missing is infrastructure: `TextCheckUnavailable`, never a verdict.
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter
from threadpoolctl import threadpool_limits

from paintenv.image import as_array, background_colour

try:  # imported with the module, so a render worker pays for it at start, not at its first render
    import tesserocr
except ImportError:  # pragma: no cover - requirements.txt installs it; the check then says so
    tesserocr = None

__all__ = ["TextCheck", "TextCheckUnavailable", "TextFinding", "get_text_check", "tessdata_dir"]

# px: the sketch's own canvas size. A smaller render is read at twice its size, at most this:
# its letters are then as many pixels tall as Tesseract likes (20-40), and more would add
# pixels to read, not legibility.
WORK_SIZE = 600
INK_DISTANCE = 16.0  # RGB distance from the paper that counts as paint in a mask
BLUR_RADIUS = 1.5  # px at WORK_SIZE: joins a dotted brush mark into a stroke
COLOUR_CLUSTERS = 3
MIN_CLUSTER_PIXELS = 200
# Tesseract reads words tilted up to about 5 degrees; the all-paint mask is also read turned
# by these (degrees), so writing tilted up to ~25 degrees, or running up or down the page, is read.
TURNS = (10, -10, 20, -20, 90, -90)
# A word is legible with >= LONG_WORD letters/digits at LONG_CONFIDENCE, or SHORT_WORD at
# SHORT_CONFIDENCE (Tesseract's word confidence, 0-100).
LONG_WORD, LONG_CONFIDENCE = 4, 70.0
SHORT_WORD, SHORT_CONFIDENCE = 3, 88.0
# Debian's tesseract-ocr-eng puts eng.traineddata here; TESSDATA_PREFIX or
# PAINTAPP_TESSDATA name another folder.
_TESSDATA_CANDIDATES = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                        "/usr/share/tessdata", "/usr/local/share/tessdata")
_ALNUM = re.compile(r"[A-Za-z0-9]")


class TextCheckUnavailable(Exception):
    """Tesseract or its English data is missing: the painting cannot be read (infrastructure)."""


@dataclass(frozen=True)
class TextFinding:
    legible: bool
    words: tuple[str, ...] = ()  # the legible words, as read
    elapsed_ms: float = 0.0
    readings: list[tuple[str, float]] = field(default_factory=list, compare=False)  # every word read

    def to_dict(self) -> dict:
        return {"legible": self.legible, "words": list(self.words), "elapsed_ms": round(self.elapsed_ms, 1)}


def tessdata_dir() -> str | None:
    """The folder that holds eng.traineddata, or None."""
    named = [os.environ.get("PAINTAPP_TESSDATA"), os.environ.get("TESSDATA_PREFIX")]
    for folder in [*(n for n in named if n), *_TESSDATA_CANDIDATES]:
        if (Path(folder) / "eng.traineddata").is_file():
            return str(folder)
    return None


def _legible(word: str, confidence: float) -> bool:
    n = len(_ALNUM.findall(word))
    return (n >= LONG_WORD and confidence >= LONG_CONFIDENCE) or (n >= SHORT_WORD and confidence >= SHORT_CONFIDENCE)


def _mask(selected: np.ndarray, blur: float) -> Image.Image:
    """Black strokes on white: the selected pixels, blurred so dotted marks join."""
    img = Image.fromarray(selected.astype(np.uint8) * 255).filter(ImageFilter.GaussianBlur(blur))
    return Image.fromarray(np.where(np.asarray(img) > 64, 0, 255).astype(np.uint8))


def _clusters(pixels: np.ndarray, k: int, rounds: int = 8) -> np.ndarray:
    """k colour centres of `pixels` (k-means from a fixed start: the same painting, the same masks)."""
    sample = pixels[:: max(1, len(pixels) // 4000)]
    centres = sample[np.linspace(0, len(sample) - 1, k).astype(int)].copy()
    for _ in range(rounds):
        labels = ((sample[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
        for j in range(k):
            members = sample[labels == j]
            if len(members):
                centres[j] = members.mean(0)
    return centres


def masks(png: bytes) -> list[Image.Image]:
    """The black-on-white images the check reads: all paint, then each main paint colour."""
    image = Image.fromarray(as_array(png))
    width = min(WORK_SIZE, 2 * image.width)
    if image.width != width:
        image = image.resize((width, width * image.height // max(image.width, 1)), Image.BILINEAR)
    rgb = np.asarray(image, dtype=np.float32)
    paper = np.array(background_colour(np.asarray(image)), dtype=np.float32)
    paint = np.sqrt(((rgb - paper) ** 2).sum(-1)) > INK_DISTANCE
    scale = width / WORK_SIZE
    blur, least = BLUR_RADIUS * scale, MIN_CLUSTER_PIXELS * scale * scale
    out = [_mask(paint, blur)]
    where = np.flatnonzero(paint)
    if len(where) >= COLOUR_CLUSTERS * least:
        pixels = rgb.reshape(-1, 3)[where]
        centres = _clusters(pixels, COLOUR_CLUSTERS)
        labels = ((pixels[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
        for j in range(len(centres)):
            members = where[labels == j]
            if len(members) >= least:
                selected = np.zeros(paint.size, dtype=bool)
                selected[members] = True
                out.append(_mask(selected.reshape(paint.shape), blur))
    return out


class TextCheck:
    """Reads paintings for writing. One Tesseract instance per thread (it is not thread-safe),
    loaded on first use."""

    def __init__(self, tessdata: str | None = None) -> None:
        self.tessdata = tessdata or tessdata_dir()
        self._local = threading.local()

    def _api(self):
        api = getattr(self._local, "api", None)
        if api is not None:
            return api
        if tesserocr is None:  # pragma: no cover - requirements.txt installs it
            raise TextCheckUnavailable("the tesserocr package is not installed")
        if self.tessdata is None or not (Path(self.tessdata) / "eng.traineddata").is_file():
            raise TextCheckUnavailable(
                f"Tesseract's English data (eng.traineddata) is not in {self.tessdata or 'any known folder'}: "
                "install Debian's tesseract-ocr-eng (make setup does) or set PAINTAPP_TESSDATA")
        try:
            api = tesserocr.PyTessBaseAPI(path=self.tessdata, lang="eng", psm=tesserocr.PSM.SPARSE_TEXT)
        except RuntimeError as exc:
            raise TextCheckUnavailable(f"Tesseract could not start with {self.tessdata}: {exc}") from exc
        self._local.api = api
        return api

    def read(self, image: Image.Image) -> list[tuple[str, float]]:
        """Every word Tesseract reads in one mask, with its confidence."""
        api = self._api()
        api.SetImage(image)
        api.Recognize()
        iterator = api.GetIterator()
        words: list[tuple[str, float]] = []
        if iterator is None:
            return words
        for word in tesserocr.iterate_level(iterator, tesserocr.RIL.WORD):
            try:
                text = word.GetUTF8Text(tesserocr.RIL.WORD)
            except RuntimeError:  # an empty word
                continue
            words.append((text, float(word.Confidence(tesserocr.RIL.WORD))))
        return words

    def find(self, png: bytes) -> TextFinding:
        """Whether the painting has legible writing, and which words."""
        started = time.perf_counter()
        readings: list[tuple[str, float]] = []
        # numpy's OpenBLAS would spread the masks' arithmetic over every core and then spin:
        # 300 ms of CPU a painting against 187 on one thread, in the same wall time, taken
        # from the Chromium renders beside it
        with threadpool_limits(limits=1, user_api="blas"):
            images = masks(png)
            for mask in images:
                readings += self.read(mask)
            for degrees in TURNS:
                readings += self.read(images[0].rotate(degrees, resample=Image.BILINEAR, fillcolor=255))
        legible = tuple(dict.fromkeys(w for w, c in readings if _legible(w, c)))
        return TextFinding(bool(legible), legible, (time.perf_counter() - started) * 1000, readings)


_shared: TextCheck | None = None
_shared_lock = threading.Lock()


def get_text_check() -> TextCheck:
    """This process's text check (Tesseract loads once per thread, on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TextCheck()
        return _shared
