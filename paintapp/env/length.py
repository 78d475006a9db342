"""The length part of the reward: estimated tokens, scored against three thresholds."""

from __future__ import annotations

__all__ = ["estimate_tokens", "length_score"]


def estimate_tokens(code: str) -> int:
    """Tokens ≈ characters / 4 (floor), the published system's estimate."""
    if not isinstance(code, str):
        return 0
    return len(code) // 4


def length_score(
    code: str,
    *,
    low_tokens: int = 150,
    full_tokens: int = 3000,
    high_tokens: int = 6000,
) -> float:
    """0 below `low_tokens` or above `high_tokens`, 1 from `full_tokens` to `high_tokens`
    inclusive, linear in between. Raises ValueError for thresholds out of order."""
    if not 0 <= low_tokens <= full_tokens <= high_tokens:
        raise ValueError(
            f"need 0 <= low_tokens <= full_tokens <= high_tokens, got "
            f"{low_tokens}, {full_tokens}, {high_tokens}"
        )
    tokens = estimate_tokens(code)
    if tokens < low_tokens or tokens > high_tokens:
        return 0.0
    if tokens >= full_tokens:
        return 1.0
    return (tokens - low_tokens) / (full_tokens - low_tokens)
