"""Thumbnails for the grid: made on first request, cached next to the image by sha256."""
from __future__ import annotations

import io

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

THUMB_SIZES = (160, 256, 384)


def thumbnail_name(sha256: str, size: int) -> str:
    return f"thumbs/{sha256[:2]}/{sha256}-{size}.webp"


def thumbnail(image_name: str, sha256: str, size: int) -> bytes:
    """WebP thumbnail (about a tenth of the PNG's bytes), generated once then served from storage."""
    if size not in THUMB_SIZES:
        raise ValueError(f"thumbnail size must be one of {THUMB_SIZES}")
    name = thumbnail_name(sha256, size)
    if default_storage.exists(name):
        with default_storage.open(name, "rb") as fh:
            return fh.read()
    with default_storage.open(image_name, "rb") as fh:
        image = Image.open(fh)
        image.load()
    image = image.convert("RGB")
    image.thumbnail((size, size), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, format="WEBP", quality=82, method=4)
    data = out.getvalue()
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(data))
    return data
