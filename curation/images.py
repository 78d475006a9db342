"""Validate untrusted image bytes and normalise them to one canonical PNG.

References are content-addressed by the sha256 of the normalised PNG, so normalising must
be a fixed point: normalising an already-normalised PNG returns the very same bytes. The
canonical form is 8-bit sRGB RGB, alpha flattened on white, EXIF orientation applied, no
metadata chunks at all, encoded with fixed PNG parameters.

Decoding is the dangerous part (decompression bombs, truncated or hostile files), so sizes
are checked from the header before any pixel is decoded, only a few well-known formats are
opened, and every limit is per call — Pillow's process-wide limits are never changed.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageCms, ImageOps, UnidentifiedImageError

from curation.errors import CurationError

MAX_BYTES = 25 * 1024 * 1024
MAX_PIXELS = 4096 * 4096
MIN_SIDE = 32

# Formats a curator can reasonably have; every other Pillow decoder stays out of reach.
ALLOWED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
# Over the pixel limit *and* this far beyond it, or expanding this much per file byte, an
# image is a bomb rather than merely a large picture (a solid 5000×5000 PNG is ~30 KB).
BOMB_PIXEL_FACTOR = 4
BOMB_EXPANSION = 1000  # decoded RGBA bytes per file byte

WHITE = (255, 255, 255)
_PNG_PARAMS = {"format": "PNG", "compress_level": 6, "optimize": False}
_SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
_SIXTEEN_BIT_MODES = {"I", "I;16", "I;16L", "I;16B", "I;16N"}
_SUPPORTED_MODES = {"1", "L", "LA", "La", "P", "PA", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr"}
_SUPPORTED_MODES |= _SIXTEEN_BIT_MODES


class ImageRejected(CurationError):
    """An image that cannot become a reference. `code` is stable; `message` names the file."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class NormalisedImage:
    png: bytes
    width: int
    height: int
    original_format: str


def normalise_image(
    data: bytes,
    *,
    name: str = "",
    max_bytes: int = MAX_BYTES,
    max_pixels: int = MAX_PIXELS,
    min_side: int = MIN_SIDE,
) -> NormalisedImage:
    """Check `data` is one sane still image and return it as the canonical PNG."""
    label = name or "the file"
    if len(data) > max_bytes:
        raise ImageRejected(
            "too_large", f"{label} is {_megabytes(len(data))}; the limit is {_megabytes(max_bytes)}"
        )
    if not data:
        raise ImageRejected("not_an_image", f"{label} is empty")

    with warnings.catch_warnings():
        # Pillow's own bomb check only warns below 2× its global limit; make it an error,
        # for this call only.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        probe = _open(data, label)
        original_format = probe.format or ""
        _check_dimensions(probe.size, len(data), label=label, max_pixels=max_pixels, min_side=min_side)
        # An MPO (phone camera JPEG) carries previews as extra frames: it is still one photo.
        if getattr(probe, "is_animated", False) and original_format != "MPO":
            raise ImageRejected(
                "animated", f"{label} is an animated {original_format} ({_frames(probe)} frames); "
                "a reference is one still painting"
            )
        try:
            probe.verify()  # structural checks (PNG CRCs, ...) without decoding pixels
        except Exception as exc:  # decoders raise many types on hostile input
            raise _truncated(label, exc) from exc

        image = _open(data, label)  # verify() leaves the image unusable: open again to decode
        try:
            image.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise _bomb(label, str(exc)) from exc
        except Exception as exc:
            raise _truncated(label, exc) from exc
        # A decoder may report its real size only after loading (e.g. JPEG draft, TIFF).
        _check_dimensions(image.size, len(data), label=label, max_pixels=max_pixels, min_side=min_side)

        rgb = _to_srgb(image, label)
    png = _encode(rgb)
    return NormalisedImage(png=png, width=rgb.width, height=rgb.height, original_format=original_format)


def _open(data: bytes, label: str) -> Image.Image:
    try:
        return Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise _bomb(label, str(exc)) from exc
    except UnidentifiedImageError as exc:
        raise ImageRejected(
            "not_an_image", f"{label} is not an image Pillow can read as {', '.join(ALLOWED_FORMATS)}"
        ) from exc
    except Exception as exc:  # a header that parses half-way
        raise _truncated(label, exc) from exc


def _check_dimensions(
    size: tuple[int, int], file_bytes: int, *, label: str, max_pixels: int, min_side: int
) -> None:
    width, height = size
    pixels = width * height
    if pixels > max_pixels:
        expansion = pixels * 4 / max(file_bytes, 1)
        if pixels > BOMB_PIXEL_FACTOR * max_pixels or expansion > BOMB_EXPANSION:
            claim = f"{width}×{height} pixels ({pixels / 1e6:.1f} MP)"
            raise _bomb(label, f"it claims {claim} from {_megabytes(file_bytes)}")
        raise ImageRejected(
            "too_large",
            f"{label} is {width}×{height} ({pixels / 1e6:.1f} MP); the limit is {max_pixels / 1e6:.1f} MP",
        )
    if min(width, height) < min_side:
        raise ImageRejected(
            "too_small", f"{label} is {width}×{height}; both sides must be at least {min_side} px"
        )


def _to_srgb(image: Image.Image, label: str) -> Image.Image:
    """Any supported mode → 8-bit sRGB RGB, oriented, alpha flattened on white, no metadata."""
    if image.mode not in _SUPPORTED_MODES:
        raise ImageRejected(
            "unsupported_mode", f"{label} uses pixel mode {image.mode}, which has no defined colours"
        )
    icc_profile = image.info.get("icc_profile")
    image = ImageOps.exif_transpose(image) or image

    if image.mode in _SIXTEEN_BIT_MODES:
        image = _sixteen_bit_to_l(image)
    elif image.mode == "1":
        image = image.convert("L")
    elif image.mode in ("P", "PA"):
        has_alpha = image.mode == "PA" or "transparency" in image.info
        image = image.convert("RGBA" if has_alpha else "RGB")
    elif image.mode == "La":
        image = image.convert("LA")
    elif image.mode == "RGBa":
        image = image.convert("RGBA")
    elif image.mode in ("RGBX", "YCbCr"):
        image = image.convert("RGB")

    alpha = None
    if image.mode in ("LA", "RGBA"):
        alpha = image.getchannel("A")
        image = image.convert("L" if image.mode == "LA" else "RGB")

    if icc_profile:
        image = _apply_icc_profile(image, icc_profile)
    image = image.convert("RGB")

    if alpha is not None and alpha.getextrema() != (255, 255):
        background = Image.new("RGB", image.size, WHITE)
        background.paste(image, mask=alpha)
        image = background
    return image


def _sixteen_bit_to_l(image: Image.Image) -> Image.Image:
    # Pillow's I;16 → L conversion clips at 255 instead of scaling; scale 0–65535 to 0–255.
    values = np.asarray(image, dtype=np.float64)
    eight_bit = np.clip(np.rint(values / 257.0), 0, 255).astype(np.uint8)
    return Image.fromarray(eight_bit, mode="L")


def _apply_icc_profile(image: Image.Image, icc_profile: bytes) -> Image.Image:
    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc_profile))
        transform = ImageCms.buildTransform(
            source, _SRGB, image.mode, "RGB", renderingIntent=ImageCms.Intent.PERCEPTUAL
        )
        return ImageCms.applyTransform(image, transform)
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        # A broken profile, or one for another colour space than the pixels: ignore it, as
        # browsers do, rather than refuse an otherwise good image.
        return image


def _encode(image: Image.Image) -> bytes:
    # A fresh image carries no `info`, so nothing (ICC, EXIF, text, dpi) leaks into the PNG.
    clean = Image.frombytes("RGB", image.size, image.tobytes())
    out = io.BytesIO()
    clean.save(out, **_PNG_PARAMS)
    return out.getvalue()


def _bomb(label: str, detail: str) -> ImageRejected:
    return ImageRejected(
        "decompression_bomb", f"{label} looks like a decompression bomb and was not decoded: {detail}"
    )


def _truncated(label: str, exc: Exception) -> ImageRejected:
    return ImageRejected("truncated", f"{label} is truncated or corrupt ({exc or type(exc).__name__})")


def _frames(image: Image.Image) -> str:
    try:
        return str(image.n_frames)
    except Exception:  # noqa: BLE001 - a broken animation still gets a message
        return "several"


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.1f} KB"
