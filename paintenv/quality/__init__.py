"""Single-image quality scorers: score(png, *, prompt) -> float in [0, 1] | None.

`features` (embedded, CPU): a fixed watercolour-craft score from image features.
`hpsv3` (GPU box: the published weights and Qwen2-VL-7B base): the HPSv3 preference model,
mapped by 1/(1+exp(-mu/4)).
None means the scorer could not answer (infrastructure).
"""
from __future__ import annotations

from typing import Any, Protocol

from paintenv.judges import load_backend

BACKENDS = {
    "features": "paintenv.quality.features.FeatureQualityScorer",
    "hpsv3": "paintenv.quality.hpsv3.HPSv3Scorer",
}


class QualityScorer(Protocol):
    name: str

    def score(self, png: bytes, *, prompt: str) -> float | None: ...


def load_quality(name: str, **config: Any) -> QualityScorer:
    return load_backend(name, BACKENDS, **config)
