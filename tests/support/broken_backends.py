"""Backends that fail the way real ones do, for fault tests (loaded by dotted path in workers)."""
from __future__ import annotations


class ExplodingQualityScorer:
    """A quality scorer whose model crashes on every call (e.g. CUDA error, corrupt weights)."""

    name = "exploding"

    def score(self, png: bytes, *, prompt: str) -> float | None:
        raise RuntimeError("quality model crashed")
