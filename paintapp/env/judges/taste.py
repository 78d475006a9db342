"""The taste judge (name "taste"): a preference model learned from one curator's grades.

Model: Bradley–Terry on image features. Each painting gets a utility
u(x) = w · (x − mean) / std over `paintapp.env.features`; the probability that a beats b
is sigmoid(u(a) − u(b)). It is fitted as a logistic regression without intercept on
feature *differences* of ordered pairs from the pool's train split:
love > okay, okay > reject, love > reject (all cross-tier pairs, capped at `max_pairs`).

Why this shape: grades are ordinal and per-curator, so pairs are what the grades really
say; a difference model is symmetric by construction (p(a,b) + p(b,a) = 1), needs no
threshold, and its weights read as "this curator likes more of feature i".
Each pair kind carries the same total weight, so the many love/reject pairs (the easy
ones) do not drown the love/okay distinction that matters most. Fitting is Newton's
method (IRLS) with an L2 penalty: a few iterations, deterministic, plain numpy.

`TasteModel` round-trips through a JSON dict (the Django side stores one per pool version).
`TasteJudge.compare` caches utilities per image bytes (a GRPO group shares its 4
references, and each candidate meets them in both orders) on top of the shared feature
cache, so a call costs microseconds once both images are seen, ~10–30 ms for a new image.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paintapp.env.features import FEATURE_NAMES, cached_image_features, feature_vector

__all__ = ["TIERS", "PAIR_KINDS", "TasteModel", "TasteJudge", "fit_taste_model", "evaluate_taste_model"]

MODEL_VERSION = 1
TIERS: tuple[str, ...] = ("love", "okay", "reject")  # best first
PAIR_KINDS: tuple[tuple[str, str], ...] = (("love", "okay"), ("okay", "reject"), ("love", "reject"))

FeatureDict = Mapping[str, float]


def _sigmoid(z: np.ndarray | float) -> np.ndarray | float:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z)))  # overflow-free logistic


@dataclass
class TasteModel:
    feature_names: list[str]
    mean: list[float]
    std: list[float]
    weights: list[float]  # on standardised features
    version: int = MODEL_VERSION
    l2: float = 0.0
    pair_counts: dict[str, int] = field(default_factory=dict)  # trained pairs per kind, e.g. "love>okay"
    item_counts: dict[str, int] = field(default_factory=dict)  # trained paintings per tier

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (len(self.mean) == len(self.std) == len(self.weights) == n):
            raise ValueError("feature_names, mean, std and weights must have the same length")
        self._mean = np.asarray(self.mean, dtype=np.float64)
        self._std = np.asarray(self.std, dtype=np.float64)
        self._w = np.asarray(self.weights, dtype=np.float64)

    def standardise(self, features: FeatureDict) -> np.ndarray:
        return (feature_vector(features, self.feature_names) - self._mean) / self._std

    def utility(self, features: FeatureDict) -> float:
        """The painting's score on this curator's scale (only differences mean anything)."""
        return float(self.standardise(features) @ self._w)

    def prob(self, a: FeatureDict, b: FeatureDict) -> float:
        """P(a is preferred to b) = sigmoid(u(a) − u(b))."""
        return float(_sigmoid(self.utility(a) - self.utility(b)))

    @property
    def trained_pairs(self) -> int:
        return sum(self.pair_counts.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields, plus "kind" and "trained_pairs" for readers (ignored on load)."""
        d = asdict(self)
        d["kind"] = "bradley-terry-features"
        d["trained_pairs"] = self.trained_pairs
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TasteModel:
        version = int(data.get("version", MODEL_VERSION))
        if version > MODEL_VERSION:
            raise ValueError(f"taste model version {version} is newer than this code ({MODEL_VERSION})")
        return cls(
            feature_names=list(data["feature_names"]),
            mean=[float(x) for x in data["mean"]],
            std=[float(x) for x in data["std"]],
            weights=[float(x) for x in data["weights"]],
            version=version,
            l2=float(data.get("l2", 0.0)),
            pair_counts={str(k): int(v) for k, v in dict(data.get("pair_counts", {})).items()},
            item_counts={str(k): int(v) for k, v in dict(data.get("item_counts", {})).items()},
        )


def _pairs_by_kind(tiers: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(winner indices, loser indices) for every cross-tier pair, per kind."""
    idx = {t: np.array([i for i, x in enumerate(tiers) if x == t], dtype=np.int64) for t in TIERS}
    out = {}
    for better, worse in PAIR_KINDS:
        a, b = idx[better], idx[worse]
        if a.size and b.size:
            win, lose = np.meshgrid(a, b, indexing="ij")
            out[f"{better}>{worse}"] = (win.ravel(), lose.ravel())
    return out


def fit_taste_model(
    train: Sequence[tuple[FeatureDict, str]],
    *,
    seed: int = 0,
    l2: float = 0.01,
    feature_names: Sequence[str] = FEATURE_NAMES,
    max_pairs: int = 200_000,
    iterations: int = 50,
) -> TasteModel:
    """Fit the Bradley–Terry weights on ordered pairs of the graded `train` items.

    Loss = Σ_kinds (1/K) · mean over that kind's pairs of log(1 + exp(−w·(x_win − x_lose)))
           + (l2 / 2) · |w|²  on standardised features.
    `seed` picks the pairs when there are more than `max_pairs` (else it changes nothing).
    """
    if not l2 > 0:
        raise ValueError("l2 must be positive (it also keeps the Newton system solvable)")
    names = list(feature_names)
    tiers = [t for _, t in train]
    unknown = sorted(set(tiers) - set(TIERS))
    if unknown:
        raise ValueError(f"unknown tiers {unknown}; expected {TIERS}")
    X = np.array([feature_vector(f, names) for f, _ in train], dtype=np.float64).reshape(len(train), len(names))
    mean = X.mean(axis=0) if len(train) else np.zeros(len(names))
    std = X.std(axis=0) if len(train) else np.ones(len(names))
    std = np.where(std > 1e-9, std, 1.0)  # a constant feature gets weight ~0, not a division by 0
    Z = (X - mean) / std

    kinds = _pairs_by_kind(tiers)
    if not kinds:
        raise ValueError("need graded paintings in at least two different tiers to learn a preference")
    rng = np.random.default_rng(seed)
    total = sum(len(w) for w, _ in kinds.values())
    diffs, weights, counts = [], [], {}
    for kind, (win, lose) in kinds.items():
        if total > max_pairs:  # keep every kind, each in proportion to its size
            keep = max(1, round(len(win) * max_pairs / total))
            pick = rng.choice(len(win), size=min(keep, len(win)), replace=False)
            win, lose = win[pick], lose[pick]
        diffs.append(Z[win] - Z[lose])
        weights.append(np.full(len(win), 1.0 / (len(win) * len(kinds))))
        counts[kind] = int(len(win))
    D = np.concatenate(diffs)
    c = np.concatenate(weights)

    def loss(v: np.ndarray) -> float:
        return float(c @ np.logaddexp(0.0, -(D @ v)) + 0.5 * l2 * (v @ v))

    w = np.zeros(len(names))
    eye = np.eye(len(names))
    current = loss(w)
    for _ in range(iterations):
        p = _sigmoid(D @ w)  # P(winner beats loser)
        grad = -(D.T @ (c * (1.0 - p))) + l2 * w
        hess = (D * (c * p * (1.0 - p))[:, None]).T @ D + l2 * eye
        step = np.linalg.solve(hess, grad)
        # Newton with step halving: nearly separable grades can make a full step overshoot.
        t = 1.0
        while t > 1e-4 and loss(w - t * step) > current:
            t *= 0.5
        w = w - t * step
        current = loss(w)
        if float(np.abs(t * step).max()) < 1e-8:
            break
    return TasteModel(
        feature_names=names,
        mean=mean.tolist(),
        std=std.tolist(),
        weights=w.tolist(),
        l2=float(l2),
        pair_counts=counts,
        item_counts={t: tiers.count(t) for t in TIERS},
    )


def evaluate_taste_model(model: TasteModel, eval_items: Sequence[tuple[FeatureDict, str]]) -> dict[str, Any]:
    """Held-out pairwise accuracy per pair kind: the share of cross-tier pairs the model
    orders like the curator (a tie counts half), with the pair counts.

    Returns {"love_vs_okay": {"accuracy": float | None, "pairs": int}, "okay_vs_reject": …,
    "love_vs_reject": …, "all": …}; accuracy is None where a kind has no pairs.
    """
    tiers = [t for _, t in eval_items]
    u = np.array([model.utility(f) for f, _ in eval_items], dtype=np.float64)
    kinds = _pairs_by_kind(tiers)
    report: dict[str, Any] = {}
    hits_all, n_all = 0.0, 0
    for better, worse in PAIR_KINDS:
        win, lose = kinds.get(f"{better}>{worse}", (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        margin = u[win] - u[lose]
        hits = float((margin > 0).sum() + 0.5 * (margin == 0).sum())
        report[f"{better}_vs_{worse}"] = {"accuracy": hits / len(win) if len(win) else None, "pairs": int(len(win))}
        hits_all += hits
        n_all += len(win)
    report["all"] = {"accuracy": hits_all / n_all if n_all else None, "pairs": n_all}
    return report


class TasteJudge:
    """Pairwise judge from a fitted TasteModel: P(candidate beats reference).

    Built as `TasteJudge(model=TasteModel)` or, through `load_judge("taste", params=…)`,
    from params that are a stored `TasteModel.to_dict()` itself, or {"model": that dict}
    or {"model_path": "<file>.json"}. Optional param: "cache_size" (images whose
    utilities are kept, default 256).
    """

    name = "taste"
    # One call at a time in judge_against_references: the features are numpy under the GIL, and
    # eight threads meeting a new painting each measured it (bench/score.py: 32 -> 52 ms a painting).
    max_concurrency = 1

    def __init__(self, params: dict[str, Any] | None = None, model: TasteModel | None = None) -> None:
        params = dict(params or {})
        if model is None:
            if "weights" in params and "feature_names" in params:  # the stored model dict itself
                model = TasteModel.from_dict(params)
            elif isinstance(params.get("model"), TasteModel):
                model = params["model"]
            elif isinstance(params.get("model"), Mapping):
                model = TasteModel.from_dict(params["model"])
            elif params.get("model_path"):
                model = TasteModel.from_dict(json.loads(Path(params["model_path"]).read_text(encoding="utf-8")))
            else:
                raise ValueError("the taste judge needs a fitted model: pass model= or params "
                                 "{'model': TasteModel.to_dict()} / {'model_path': path}")
        self.model = model
        self._cache: OrderedDict[bytes, float] = OrderedDict()  # sha1(png) -> utility
        self._cache_size = int(params.get("cache_size", 256))
        self._lock = threading.Lock()

    def utility(self, png: bytes) -> float:
        """The painting's utility under the model, cached by the image bytes' hash."""
        key = hashlib.sha1(png).digest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = self.model.utility(cached_image_features(png))  # outside the lock: ~10-30 ms
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value

    def compare(
        self, candidate_png: bytes, reference_png: bytes, *, prompt: str, candidate_first: bool = True
    ) -> float | None:
        """sigmoid(u(candidate) − u(reference)); presentation order does not matter to a
        feature model (accepted for the Judge protocol). None if an image cannot be decoded."""
        try:
            diff = self.utility(candidate_png) - self.utility(reference_png)
        except Exception:  # noqa: BLE001 - an undecodable image is "no answer"
            return None
        if not math.isfinite(diff):
            return None
        return float(_sigmoid(diff))
