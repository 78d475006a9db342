"""Writes for training: renders stored as files (runs, steps and rollouts come later)."""
from __future__ import annotations

from django.conf import settings

from paintapp.env.painting import paint_source
from paintapp.env.renderer import RendererConfig, get_renderer
from paintapp.storage import sha256_hex, store_content_addressed


def renderer_config() -> RendererConfig:
    return RendererConfig(chromium_path=settings.CHROMIUM_PATH, timeout_s=float(settings.RENDER_TIMEOUT_S))


def painting_render(
    *,
    code: str,
    seed: int = 0,
    size: int | None = None,
    strictness: str = "allowlist",
    render_failed_gate: bool = False,
) -> dict:
    """Gate and render one sketch in this process's warm browser; store the PNG.

    Returns the verdict as JSON-able data with `png_path` (a storage name) instead of the
    bytes. Raises RenderUnavailable when Chromium cannot render at all.
    """
    painting = paint_source(
        code,
        renderer=get_renderer(renderer_config()),
        seed=seed,
        size=size or settings.RENDER_SIZE,
        strictness=strictness,
        render_failed_gate=render_failed_gate,
    )
    result = painting.to_dict()
    result["png_path"] = store_content_addressed(painting.png, folder="renders") if painting.png else None
    result["png_sha256"] = sha256_hex(painting.png) if painting.png else None
    return result
