"""Small builders for curation tests: real PNGs, real rows."""
from __future__ import annotations

import io
import itertools

from PIL import Image

from curation.models import Reference
from curation.services import grade_set, pool_freeze, reference_create

_counter = itertools.count(1)


def png_bytes(color: tuple[int, int, int] | None = None, size: int = 32) -> bytes:
    n = next(_counter)
    color = color or ((n * 37) % 256, (n * 91) % 256, (n * 53) % 256)
    image = Image.new("RGB", (size, size), (250, 247, 240))
    for x in range(size // 4, size // 2):
        for y in range(size // 4, size // 2 + n % 5):
            image.putpixel((x, y), color)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def make_reference(subject: str = "a peach hibiscus", provenance: str = "upload", source: str = "", **kw) -> Reference:
    reference, _ = reference_create(
        png=png_bytes(), width=32, height=32, provenance=provenance, subject=subject, source=source, **kw
    )
    return reference


def make_graded_pool(curator, name: str = "roses", count: int = 6):
    """A frozen pool of `count` references graded love and okay in turn (distinct subjects)."""
    for i in range(count):
        tier = ("love", "okay")[i % 2]
        grade_set(reference=make_reference(subject=f"a rose {i}"), curator=curator, tier=tier)
    return pool_freeze(name=name, curator=curator)
