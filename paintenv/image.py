"""Image measurements for rendered paintings (numpy + Pillow only, no Django).

`paint_fraction` follows the published reference system: the background is the most
common colour, and paint is every pixel farther than 32 (Euclidean, RGB 0-255) from it;
a painting with less than `BLANK_THRESHOLD` paint is blank.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

BLANK_THRESHOLD = 0.005
PAINT_DISTANCE = 32.0
# The band of paint fraction the features scorer calls balanced coverage (full composition
# sub-score) and the feedback calls neither near empty nor overfilled. Here, not beside the
# scorer: the feedback is imported by every studio process, and the scorer loads scipy (~0.4 s).
BALANCED_COVERAGE = (0.10, 0.45)
# Colours are binned 16 levels per channel (4096 bins) to find the dominant one: paper
# texture and anti-aliasing spread a flat background over neighbouring values, and one
# exact RGB triple could lose to a large, slightly noisy wash.
BIN_SHIFT = 4


def png_to_array(png: bytes) -> np.ndarray:
    """Decode PNG (or any Pillow-readable) bytes to an RGB uint8 array (H, W, 3).

    Transparent pixels are composited onto white, as a browser shows the canvas on a
    white page: a sketch that never calls background() has a transparent canvas.
    """
    with Image.open(io.BytesIO(png)) as img:
        return _to_rgb_array(img)


def _to_rgb_array(img: Image.Image) -> np.ndarray:
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = np.asarray(img.convert("RGBA"))
        alpha = rgba[..., 3]
        if alpha.min() == 255:  # the usual case (background() was called): no blending
            return np.ascontiguousarray(rgba[..., :3])
        a = alpha[..., None].astype(np.uint16)
        # Straight (non-premultiplied) alpha over white, rounded like a browser would.
        rgb = (rgba[..., :3].astype(np.uint16) * a + 255 * (255 - a) + 127) // 255
        return rgb.astype(np.uint8)
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


def as_array(image: bytes | np.ndarray | Image.Image) -> np.ndarray:
    """PNG bytes, a Pillow image or an array -> RGB uint8 array (H, W, 3)."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return png_to_array(bytes(image))
    if isinstance(image, Image.Image):
        return _to_rgb_array(image)
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"expected an (H, W, 3|4) image array, got shape {arr.shape}")
    if arr.shape[2] == 4:
        return _to_rgb_array(Image.fromarray(arr.astype(np.uint8), "RGBA"))
    return arr.astype(np.uint8, copy=False)


def _bins(flat: np.ndarray) -> np.ndarray:
    q = (flat >> BIN_SHIFT).astype(np.int32)
    return (q[:, 0] << 8) | (q[:, 1] << 4) | q[:, 2]


def _background(flat: np.ndarray) -> np.ndarray:
    bins = _bins(flat)
    top = int(np.bincount(bins, minlength=4096).argmax())
    mask = bins == top
    # A mask-times-pixels product in float64 is exact here and the fastest masked mean
    # numpy offers (float32 BLAS drifts by ~0.1 over 360k pixels).
    return (mask.astype(np.float64) @ flat.astype(np.float64)) / float(np.count_nonzero(mask))


def background_colour(image: bytes | np.ndarray | Image.Image) -> tuple[float, float, float]:
    """The dominant colour: the mean colour of the pixels in the most common bin."""
    flat = as_array(image).reshape(-1, 3)
    if flat.shape[0] == 0:
        return (255.0, 255.0, 255.0)
    r, g, b = _background(flat)
    return (float(r), float(g), float(b))


def paint_fraction(image: bytes | np.ndarray | Image.Image) -> float:
    """Share of pixels farther than 32 RGB (Euclidean) from the dominant background colour."""
    flat = as_array(image).reshape(-1, 3)
    if flat.shape[0] == 0:
        return 0.0
    bg = _background(flat).astype(np.float32)
    f = flat.astype(np.float32)
    dist2 = (f[:, 0] - bg[0]) ** 2 + (f[:, 1] - bg[1]) ** 2 + (f[:, 2] - bg[2]) ** 2
    return float(np.count_nonzero(dist2 > PAINT_DISTANCE * PAINT_DISTANCE)) / flat.shape[0]


def is_blank(image: bytes | np.ndarray | Image.Image) -> bool:
    return paint_fraction(image) < BLANK_THRESHOLD


def image_diff_fraction(
    a: bytes | np.ndarray | Image.Image, b: bytes | np.ndarray | Image.Image, tol: int = 0
) -> float:
    """Share of pixels whose largest channel difference exceeds `tol` (0-255).

    For comparing renders of the same (code, seed): p5.brush's watercolour fills are not
    bit-exact across runs, so compare with a tolerance, never with a hash.
    """
    x, y = as_array(a), as_array(b)
    if x.shape != y.shape:
        raise ValueError(f"images differ in size: {x.shape} vs {y.shape}")
    if x.size == 0:
        return 0.0
    delta = np.abs(x.astype(np.int16) - y.astype(np.int16)).max(axis=-1)
    return float(np.count_nonzero(delta > tol)) / delta.size


def image_max_diff(a: bytes | np.ndarray | Image.Image, b: bytes | np.ndarray | Image.Image) -> int:
    """The largest per-channel difference between two same-sized images (0-255)."""
    x, y = as_array(a), as_array(b)
    if x.shape != y.shape:
        raise ValueError(f"images differ in size: {x.shape} vs {y.shape}")
    if x.size == 0:
        return 0
    return int(np.abs(x.astype(np.int16) - y.astype(np.int16)).max())
