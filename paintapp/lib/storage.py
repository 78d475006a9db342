"""Content-addressed files in MEDIA_ROOT (or whatever default storage is configured).

Workers on other machines write through the same storage, so MEDIA_ROOT must be shared
(see the README). Writing the same bytes twice is a no-op: tasks stay idempotent.
"""
from __future__ import annotations

import hashlib

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import HttpResponse


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_content_addressed(data: bytes, *, folder: str, suffix: str = ".png") -> str:
    digest = sha256_hex(data)
    name = f"{folder}/{digest[:2]}/{digest}{suffix}"
    if not default_storage.exists(name):
        saved = default_storage.save(name, ContentFile(data))
        if saved != name:  # a concurrent writer won the race; keep one copy
            default_storage.delete(saved)
    return name


def human_size(n: int) -> str:
    """A byte count as people read it in messages: 812.4 KB, 3.1 MB, 1.2 GB."""
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GB"
    if n >= 1024**2:
        return f"{n / 1024**2:.1f} MB"
    return f"{n / 1024:.1f} KB"


def stored_png_response(name: str):
    """A stored, content-addressed PNG as an HTTP response the browser may cache forever."""
    with default_storage.open(name, "rb") as fh:
        response = HttpResponse(fh.read(), content_type="image/png")
    response["Cache-Control"] = "private, max-age=31536000, immutable"  # the name is the content's hash
    return response
