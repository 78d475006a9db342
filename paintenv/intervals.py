"""Confidence intervals of the studio's shares (a judge's held-out accuracy, its agreement with
a curator): plain math, so any layer can use it without loading numpy or scipy."""
from __future__ import annotations

import math

__all__ = ["FEW_PAIRS", "wilson_interval"]

# Below this many pairs a share is flagged, wherever it is shown (the taste judge's held-out
# accuracy, the judge audit, per curator): at 30 pairs a 95% interval around 0.5 is still
# ±0.18 wide.
FEW_PAIRS = 30


def wilson_interval(hits: float, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion hits/n (95% at z = 1.96); None for n = 0.
    Unlike p ± z·sqrt(p(1−p)/n) it stays within [0, 1] and is not 0 wide at 0 or n hits, so it
    stays sound near 0 and 1 and on few pairs. `hits` may be fractional (a tie counts half)."""
    if n <= 0:
        return None
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
