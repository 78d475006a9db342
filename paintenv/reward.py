"""Reward recipes and the combination rule, with None semantics.

reward = 0                                  if the gate failed
       = None                               if a weighted part is unavailable (infrastructure)
       = w_gate + w_length·length + w_judge·judge + w_quality·quality   otherwise

None is never turned into 0: TRL then leaves the rollout out of the group baseline instead
of training on a phantom zero (the published system lost 1.5–5.2% of rollouts that way).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from paintenv.length import score_tokens

DEFAULT_CRITERIA = (
    "Judge which painting is the better loose watercolour. Better: soft bleeding edges, "
    "layered translucent washes, edges that dissolve into the paper, a deliberate composition "
    "with breathing room. Worse: muddy or opaque blobs, uniform scribbles, hard flat edges, "
    "near-empty or overfilled canvases. Ignore what the subject is; judge only the craft."
)
# The length score's token thresholds: the recipe fields a launch may set per run.
LENGTH_THRESHOLDS = ("length_low_tokens", "length_full_tokens", "length_high_tokens")


@dataclass(frozen=True)
class Recipe:
    name: str
    w_gate: float = 0.05
    w_length: float = 0.05
    w_judge: float = 0.0
    w_quality: float = 0.90
    judge: str = "taste"  # short name or dotted path of a pairwise judge backend
    quality: str = "features"  # short name or dotted path of a quality scorer backend
    references_per_group: int = 4  # half love, half okay
    criteria: str = DEFAULT_CRITERIA
    length_low_tokens: int = 150
    length_full_tokens: int = 3000
    length_high_tokens: int = 6000

    def __post_init__(self) -> None:
        weights = (self.w_gate, self.w_length, self.w_judge, self.w_quality)
        if any(w < 0 for w in weights):
            raise ValueError("recipe weights must not be negative")
        if self.references_per_group < 0 or self.references_per_group % 2:
            raise ValueError("references_per_group must be an even number (half love, half okay)")
        if self.w_judge > 0 and self.references_per_group == 0:
            raise ValueError("a recipe that weights the judge needs references_per_group > 0")
        thresholds = [getattr(self, name) for name in LENGTH_THRESHOLDS]
        if any(isinstance(t, bool) or not isinstance(t, int) for t in thresholds):
            raise ValueError("length thresholds must be whole numbers of tokens")
        low, full, high = thresholds
        if not 0 <= low < full <= high:
            raise ValueError("length thresholds must satisfy 0 <= low < full <= high")

    @property
    def max_reward(self) -> float:
        return self.w_gate + self.w_length + self.w_judge + self.w_quality

    def length_part(self, tokens: int | None) -> float | None:
        """The length part of a sketch of `tokens` tokens of painting code (length.py) under
        this recipe's thresholds; None when they are unknown (the render's coverage is missing)."""
        if tokens is None:
            return None
        return score_tokens(tokens, low_tokens=self.length_low_tokens, full_tokens=self.length_full_tokens,
                            high_tokens=self.length_high_tokens)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recipe:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_(self, **changes: Any) -> Recipe:
        return replace(self, **changes)


# The published presets, exactly: the VLM judge (any OpenAI-compatible endpoint,
# PAINTAPP_VLM_*) and HPSv3 (a GPU box). The studio-* presets weigh the same parts with
# the embedded backends (the taste judge, the features scorer), which need no server.
PUBLISHED_JUDGE, PUBLISHED_QUALITY = "vlm", "hpsv3"
STUDIO_JUDGE, STUDIO_QUALITY = "taste", "features"
_MIXES = {"hps-only": (0.0, 0.90), "judge-led": (0.60, 0.30), "hps-led": (0.30, 0.60)}
STUDIO_PREFIX = "studio-"
PRESETS: dict[str, Recipe] = {
    **{name: Recipe(name, w_gate=0.05, w_length=0.05, w_judge=judge, w_quality=quality,
                    judge=PUBLISHED_JUDGE, quality=PUBLISHED_QUALITY)
       for name, (judge, quality) in _MIXES.items()},
    **{STUDIO_PREFIX + name: Recipe(STUDIO_PREFIX + name, w_gate=0.05, w_length=0.05, w_judge=judge,
                                    w_quality=quality, judge=STUDIO_JUDGE, quality=STUDIO_QUALITY)
       for name, (judge, quality) in _MIXES.items()},
}
# The default recipe: the published judge-led where its parts are configured, else its studio twin.
DEFAULT_PRESET = "judge-led"
DEFAULT_STUDIO_PRESET = STUDIO_PREFIX + DEFAULT_PRESET


@dataclass
class RewardBreakdown:
    """Everything that went into one rollout's reward (stored with the rollout)."""

    reward: float | None
    gate: float  # 1 if the gate (and render) passed, else 0
    length: float | None
    judge: float | None
    quality: float | None
    unavailable: list[str] = field(default_factory=list)  # parts lost to infrastructure, with reasons

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def combine(
    recipe: Recipe,
    passed: bool,
    length: float | None,
    judge: float | None,
    quality: float | None,
    *,
    reasons: dict[str, str] | None = None,
) -> RewardBreakdown:
    """One reward from the parts. `passed` is the whole verdict: static gate AND render.

    A part is None when its backend failed (endpoint down, scorer crashed, timeout); if
    that part has weight > 0 the reward is None — never a made-up 0 — and the reason is kept.
    """
    reasons = reasons or {}
    if not passed:
        return RewardBreakdown(reward=0.0, gate=0.0, length=length, judge=judge, quality=quality)
    parts = {"length": (recipe.w_length, length), "judge": (recipe.w_judge, judge), "quality": (recipe.w_quality, quality)}
    missing = [
        f"{name}: {reasons.get(name, 'unavailable')}" for name, (weight, value) in parts.items()
        if weight > 0 and value is None
    ]
    if missing:
        return RewardBreakdown(reward=None, gate=1.0, length=length, judge=judge, quality=quality, unavailable=missing)
    total = recipe.w_gate + sum(weight * value for weight, value in parts.values() if weight > 0)
    return RewardBreakdown(reward=round(total, 6), gate=1.0, length=length, judge=judge, quality=quality)
