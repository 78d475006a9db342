"""Small builders for curation tests: real PNGs, real rows."""
from __future__ import annotations

import io
import itertools
import zipfile

from django.test import Client
from django.urls import reverse
from PIL import Image

from curation.models import Pool, Reference
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


# The colour of painting_png's square. png_bytes cycles its colours through the test process's
# counter, and 17 of its 256 (all of them blues and cyans) make a hard-edged square that the
# painted-text detector reads as writing (0.99 against its 0.975): a test that needs a painting
# that passes must not depend on how many images earlier tests made.
ROSE = (192, 84, 106)


def painting_png(size: int = 64) -> bytes:
    """A painting given as a PNG that passes the painted-text check (0.13-0.16 at every height)."""
    return png_bytes(color=ROSE, size=size)


def zip_of(files: dict[str, bytes | str]) -> bytes:
    """A zip holding these {name: content} entries."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(zipfile.ZipInfo(name), content)
    return out.getvalue()


def make_reference(
    subject: str = "a peach hibiscus", provenance: str = "upload", source: str = "", size: int = 32, **kw
) -> Reference:
    reference, _ = reference_create(
        png=png_bytes(size=size), width=size, height=size, provenance=provenance, subject=subject, source=source, **kw
    )
    return reference


def make_pool(curator, *, name: str = "gallery", love: int = 4, okay: int = 4, reject: int = 2,
              tiers: tuple[str, ...] = ("love", "okay"), eval_share: float = 0.25, seed: int = 0,
              subject: str = "a peach hibiscus") -> Pool:
    """The one pool factory: new references graded love / okay / reject by `curator`, frozen.
    A `subject` with `{i}` gives each reference its own (e.g. "a rose {i}")."""
    tiers_in_order = ["love"] * love + ["okay"] * okay + ["reject"] * reject
    for i, tier in enumerate(tiers_in_order):
        grade_set(reference=make_reference(subject=subject.format(i=i)), curator=curator, tier=tier)
    return pool_freeze(name=name, curator=curator, tiers=tiers, eval_share=eval_share, seed=seed)


PASSWORD = "wet-on-wet-2026"


def grade_as(django_user_model, username: str, grades: dict) -> Client:
    """A curator with their own account signs in and grades through the grade endpoint; a
    curator who already has an account signs in again."""
    if not django_user_model.objects.filter(username=username).exists():
        django_user_model.objects.create_user(username=username, password=PASSWORD)
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    for reference, tier in grades.items():
        response = client.post(reverse("curation:grade", args=[reference.id]), {"tier": tier},
                               headers={"Accept": "application/json"})
        assert response.json() == {"id": reference.id, "tier": tier, "saved": True}
    return client
