"""Render many sketches at once for the corpus tests: one renderer per thread.

A render is mostly single-threaded work in Chromium (a fresh context, the library parse,
the sketch), so two renderers side by side nearly double the throughput of small
canvases on two cores. Each renderer is used by one thread only.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from paintenv.render_config import RendererConfig
from paintenv.render_result import Render
from paintenv.renderer import Renderer


def render_many(codes: list[str], *, timeout_s: float, size: int, workers: int = 2,
                seeds: list[int] | None = None) -> list[Render]:
    """Render every sketch (with its seed; 0 by default) and return the verdicts in order;
    never raises for a sketch, as render() never does."""
    seeds = seeds or [0] * len(codes)
    results: list[Render | None] = [None] * len(codes)

    def run(offset: int) -> None:
        with Renderer(RendererConfig(timeout_s=timeout_s)) as renderer:
            for i in range(offset, len(codes), workers):
                results[i] = renderer.render(codes[i], seed=seeds[i], size=size)

    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(run, k) for k in range(workers)]:
            future.result()
    return [r for r in results if r is not None]
