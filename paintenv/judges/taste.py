"""The taste judge (name "taste"): a preference model learned from one curator's grades.

Model: Bradley–Terry on image features. Each painting gets a utility
u(x) = w · (x − mean) / std over `paintenv.features`; the probability that a beats b
is sigmoid(u(a) − u(b)). It is fitted as a logistic regression without intercept on
feature *differences* of ordered pairs from the pool's train split:
love > okay, okay > reject, love > reject (all cross-tier pairs, capped at `max_pairs`).

Why this shape: grades are ordinal and per-curator, so pairs are what the grades really
say; a difference model is symmetric by construction (p(a,b) + p(b,a) = 1), needs no
threshold, and its weights read as "this curator likes more of feature i".
Each pair kind carries the same total weight, so the many love/reject pairs (the easy
ones) do not drown the love/okay distinction that matters most. Fitting is Newton's
method (IRLS) with an L2 penalty: a few iterations, deterministic, plain numpy.

Calibration: nearly separable grades give large weights, so sigmoid(u(a) − u(b)) sits at
0 or 1 for most pairs and a GRPO group's rewards cannot be told apart. Given held-out
graded paintings (a pool's eval split), the utilities are divided by the temperature
T >= 1 that minimises the log-loss of the held-out pairs (kinds weighted as in the fit; T
only flattens, see _SCALE_BOUNDS). That log-loss before/after is in-sample for this one
number, so the record also holds a check T never saw: the train split cut into folds (by
painting, every tier in each), each fold's pairs scored by a model fitted without it.
On the demo pool a few confidently misordered eval paintings set T; the train pairs out
of fold are easier, and their log-loss says what the flattening costs there.

Why temperature and not Platt scaling: Platt fits sigmoid(a·margin + b), but a pair has no
natural first member, so b must be 0 (p(a,b) + p(b,a) = 1) and a is 1/T: Platt on pairs is
this temperature. Held-out figures come with the reliability of those probabilities
(`reliability_bins`: each pair counted in both orders, predicted P vs observed share).

Held-out accuracy (`evaluate_taste_model`) carries a 95% Wilson interval per pair kind and
a `small_sample` flag under SMALL_SAMPLE_PAIRS pairs; `accuracy_against` scores one model
against another curator's grades of the same paintings.

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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from paintenv.features import FEATURE_NAMES, TASTE_FEATURE_NAMES, cached_image_features, feature_vector
from paintenv.intervals import FEW_PAIRS, wilson_interval

__all__ = ["TIERS", "PAIR_KINDS", "TasteModel", "TasteJudge", "fit_taste_model", "fit_temperature",
           "evaluate_taste_model", "wilson_interval", "reliability_bins"]

# 2: temperature and calibration (a version 1 model reads as temperature 1); 3: may use the
# TASTE_EXTRA_NAMES features (older code could not measure them). A model keeps its own
# feature_names, so versions 1 and 2 still score with the 30 features they were fitted on.
MODEL_VERSION = 3
TIERS: tuple[str, ...] = ("love", "okay", "reject")  # best first
PAIR_KINDS: tuple[tuple[str, str], ...] = (("love", "okay"), ("okay", "reject"), ("love", "reject"))

FeatureDict = Mapping[str, float]

CALIBRATION_FOLDS = 5
# Under this many held-out pairs an accuracy is flagged small_sample (the studio's one
# threshold, also the pool page's and the audit's): at 30 pairs the 95% Wilson interval around
# 0.8 is ±0.14 wide, wider than the gaps between feature sets we measure, and pairs share
# paintings, so the real uncertainty is larger still.
SMALL_SAMPLE_PAIRS = FEW_PAIRS
RELIABILITY_BINS = 10
# Fewer held-out pairs than this leave the temperature at 1: one pair would set it.
MIN_CALIBRATION_PAIRS = 10
# 1/T is searched within these bounds: flattening at most 1000x, never sharpening. Held-out
# pairs that the fit orders perfectly (few, or easy grades) would drive T towards 0, which
# is the saturation calibration is there to undo; the L2 penalty already set the sharpness.
_SCALE_BOUNDS = (1e-3, 1.0)


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
    temperature: float = 1.0  # utilities are divided by it, >= 1 when fitted (see Calibration above)
    # How T was found: {"method", "pairs", "log_loss_before", "log_loss_after"} on the held-out
    # pairs, with "out_of_fold": the same figures on train pairs out of fold (see Calibration);
    # {"pairs", "skipped": why} when it stayed 1; {} when fitted with no held-out items.
    calibration: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (len(self.mean) == len(self.std) == len(self.weights) == n):
            raise ValueError("feature_names, mean, std and weights must have the same length")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError("temperature must be a positive number")
        self._mean = np.asarray(self.mean, dtype=np.float64)
        self._std = np.asarray(self.std, dtype=np.float64)
        self._w = np.asarray(self.weights, dtype=np.float64)

    def standardise(self, features: FeatureDict) -> np.ndarray:
        return (feature_vector(features, self.feature_names) - self._mean) / self._std

    def utility(self, features: FeatureDict) -> float:
        """The painting's score on this curator's calibrated scale (only differences mean
        anything): weights · standardised features / temperature."""
        return float(self.standardise(features) @ self._w) / self.temperature

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
            temperature=float(data.get("temperature", 1.0)),
            calibration=dict(data.get("calibration", {})),
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


def _kind_balanced_pairs(
    tiers: Sequence[str], rng: np.random.Generator, max_pairs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """(winner indices, loser indices, pair weights, pairs per kind): every cross-tier pair,
    sampled down to `max_pairs` in proportion when there are more; each kind weighs 1/K."""
    kinds = _pairs_by_kind(tiers)
    total = sum(len(w) for w, _ in kinds.values())
    wins, loses, weights, counts = [], [], [], {}
    for kind, (win, lose) in kinds.items():
        if total > max_pairs:  # keep every kind, each in proportion to its size
            keep = max(1, round(len(win) * max_pairs / total))
            pick = rng.choice(len(win), size=min(keep, len(win)), replace=False)
            win, lose = win[pick], lose[pick]
        wins.append(win)
        loses.append(lose)
        weights.append(np.full(len(win), 1.0 / (len(win) * len(kinds))))
        counts[kind] = int(len(win))
    if not kinds:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), counts
    return np.concatenate(wins), np.concatenate(loses), np.concatenate(weights), counts


def _standardisation(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0) if len(X) else np.zeros(X.shape[1])
    std = X.std(axis=0) if len(X) else np.ones(X.shape[1])
    return mean, np.where(std > 1e-9, std, 1.0)  # a constant feature gets weight ~0, not a division by 0


def _fit_weights(D: np.ndarray, c: np.ndarray, l2: float, iterations: int) -> np.ndarray:
    """Newton's method on Σ c · log(1 + exp(−D·w)) + (l2 / 2) · |w|²."""

    def loss(v: np.ndarray) -> float:
        return float(c @ np.logaddexp(0.0, -(D @ v)) + 0.5 * l2 * (v @ v))

    w = np.zeros(D.shape[1])
    eye = np.eye(D.shape[1])
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
    return w


def _weighted_log_loss(margins: np.ndarray, weights: np.ndarray) -> float:
    """Mean −log P(winner beats loser) = log(1 + exp(−margin)), weighted."""
    return float(weights @ np.logaddexp(0.0, -margins) / weights.sum())


def fit_temperature(margins: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The T >= 1 that minimises the weighted log-loss of sigmoid(margin / T) over pairs whose
    `margins` are winner minus loser utility. Convex in 1/T: Newton's method on it, kept
    within _SCALE_BOUNDS."""
    m = np.asarray(margins, dtype=np.float64)
    c = np.ones(len(m)) if weights is None else np.asarray(weights, dtype=np.float64)
    if not len(m) or not np.any(m):
        return 1.0
    low, high = _SCALE_BOUNDS
    scale = 1.0
    for _ in range(100):
        p = _sigmoid(scale * m)
        grad = -float(c @ (m * (1.0 - p)))
        hess = float(c @ (m * m * p * (1.0 - p)))
        if hess <= 1e-12:  # saturated: step towards the side the gradient points to
            new = high if grad < 0 else low
        else:
            new = scale - grad / hess
        new = min(max(new, low), high)
        if abs(new - scale) < 1e-9 * max(1.0, scale):
            scale = new
            break
        scale = new
    return 1.0 / scale


def _folds_by_tier(tiers: Sequence[str], folds: int, rng: np.random.Generator) -> np.ndarray:
    """A fold number per painting, each tier dealt out over the folds in a shuffled order."""
    fold = np.zeros(len(tiers), dtype=np.int64)
    for tier in TIERS:
        idx = np.array([i for i, t in enumerate(tiers) if t == tier], dtype=np.int64)
        rng.shuffle(idx)
        fold[idx] = np.arange(len(idx)) % folds
    return fold


def _out_of_fold_margins(X: np.ndarray, tiers: Sequence[str], *, folds: int, seed: int, l2: float,
                         max_pairs: int, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """(margins, kind-balanced weights) of the pairs within each fold of the train items,
    each scored by a model fitted on the other folds."""
    rng = np.random.default_rng(seed + 1)
    fold_of = _folds_by_tier(tiers, folds, rng)
    margins, kinds_of = [], []
    for k in range(folds):
        inside = np.flatnonzero(fold_of == k)
        outside = np.flatnonzero(fold_of != k)
        tiers_out = [tiers[i] for i in outside]
        if len(set(tiers_out)) < 2 or len(inside) < 2:
            continue
        mean, std = _standardisation(X[outside])
        Z_out = (X[outside] - mean) / std
        win, lose, c, _ = _kind_balanced_pairs(tiers_out, rng, max_pairs)
        w = _fit_weights(Z_out[win] - Z_out[lose], c, l2, iterations)
        u = ((X[inside] - mean) / std) @ w
        for kind, (kwin, klose) in _pairs_by_kind([tiers[i] for i in inside]).items():
            margins.append(u[kwin] - u[klose])
            kinds_of.extend([kind] * len(kwin))
    return (np.concatenate(margins) if margins else np.zeros(0)), _balanced_weights(kinds_of)


def _balanced_weights(kinds_of: Sequence[str]) -> np.ndarray:
    per_kind = {kind: kinds_of.count(kind) for kind in set(kinds_of)}
    return np.array([1.0 / (per_kind[kind] * len(per_kind)) for kind in kinds_of])


def _held_out_margins(model: TasteModel, held_out: Sequence[tuple[FeatureDict, str]]) -> tuple[np.ndarray, np.ndarray]:
    u = np.array([model.utility(f) for f, _ in held_out], dtype=np.float64)
    margins, kinds_of = [], []
    for kind, (win, lose) in _pairs_by_kind([t for _, t in held_out]).items():
        margins.append(u[win] - u[lose])
        kinds_of.extend([kind] * len(win))
    return (np.concatenate(margins) if margins else np.zeros(0)), _balanced_weights(kinds_of)


def _calibrated(model: TasteModel, held_out: Sequence[tuple[FeatureDict, str]], *, X: np.ndarray,
                tiers: Sequence[str], folds: int, seed: int, l2: float, max_pairs: int,
                iterations: int) -> TasteModel:
    """The model with its temperature and calibration record (see Calibration above)."""
    margins, weights = _held_out_margins(model, held_out)
    if len(margins) < MIN_CALIBRATION_PAIRS:
        return replace(model, calibration={
            "pairs": int(len(margins)), "skipped": f"fewer than {MIN_CALIBRATION_PAIRS} held-out pairs"})
    temperature = fit_temperature(margins, weights)
    calibration: dict[str, Any] = {
        "method": "temperature", "pairs": int(len(margins)),
        "log_loss_before": round(_weighted_log_loss(margins, weights), 4),
        "log_loss_after": round(_weighted_log_loss(margins / temperature, weights), 4),
    }
    if folds:
        oof, oof_weights = _out_of_fold_margins(X, tiers, folds=folds, seed=seed, l2=l2, max_pairs=max_pairs,
                                                iterations=iterations)
        if len(oof):
            calibration["out_of_fold"] = {
                "folds": folds, "pairs": int(len(oof)),
                "log_loss_before": round(_weighted_log_loss(oof, oof_weights), 4),
                "log_loss_after": round(_weighted_log_loss(oof / temperature, oof_weights), 4),
            }
    return replace(model, temperature=float(temperature), calibration=calibration)


def fit_taste_model(
    train: Sequence[tuple[FeatureDict, str]],
    *,
    held_out: Sequence[tuple[FeatureDict, str]] = (),
    seed: int = 0,
    l2: float = 0.01,
    feature_names: Sequence[str] | None = None,
    max_pairs: int = 200_000,
    iterations: int = 50,
    calibration_folds: int = CALIBRATION_FOLDS,
) -> TasteModel:
    """Fit the Bradley–Terry weights on ordered pairs of the graded `train` items, then, when
    `held_out` graded items are given, the temperature on their pairs, checked on
    `calibration_folds` folds of the train items (0: no check).

    Loss = Σ_kinds (1/K) · mean over that kind's pairs of log(1 + exp(−w·(x_win − x_lose)))
           + (l2 / 2) · |w|²  on standardised features.
    `seed` picks the pairs when there are more than `max_pairs`, and the folds.
    `feature_names` None: TASTE_FEATURE_NAMES, or FEATURE_NAMES when some item lacks the
    added ones (features measured and stored before they existed, e.g. a saved pool's file).
    """
    if not l2 > 0:
        raise ValueError("l2 must be positive (it also keeps the Newton system solvable)")
    if calibration_folds == 1 or calibration_folds < 0:
        raise ValueError("calibration_folds must be 0 (no out-of-fold check) or at least 2")
    if feature_names is None:
        measured_all = all(name in f for f, _ in train for name in TASTE_FEATURE_NAMES)
        feature_names = TASTE_FEATURE_NAMES if measured_all else FEATURE_NAMES
    names = list(feature_names)
    tiers = [t for _, t in train]
    unknown = sorted(set(tiers) - set(TIERS))
    if unknown:
        raise ValueError(f"unknown tiers {unknown}; expected {TIERS}")
    X = np.array([feature_vector(f, names) for f, _ in train], dtype=np.float64).reshape(len(train), len(names))
    mean, std = _standardisation(X)
    Z = (X - mean) / std

    win, lose, c, counts = _kind_balanced_pairs(tiers, np.random.default_rng(seed), max_pairs)
    if not counts:
        raise ValueError("need graded paintings in at least two different tiers to learn a preference")
    w = _fit_weights(Z[win] - Z[lose], c, l2, iterations)
    model = TasteModel(
        feature_names=names,
        mean=mean.tolist(),
        std=std.tolist(),
        weights=w.tolist(),
        l2=float(l2),
        pair_counts=counts,
        item_counts={t: tiers.count(t) for t in TIERS},
    )
    if not held_out:
        return model
    return _calibrated(model, held_out, X=X, tiers=tiers, folds=calibration_folds, seed=seed, l2=l2,
                       max_pairs=max_pairs, iterations=iterations)


def evaluate_taste_model(model: TasteModel, eval_items: Sequence[tuple[FeatureDict, str]]) -> dict[str, Any]:
    """Held-out figures per pair kind: the share of cross-tier pairs the model orders like
    the curator (a tie counts half) with its 95% Wilson interval, the mean log-loss
    −log P(better beats worse) of its calibrated probabilities and of the same model at
    temperature 1, the pair counts, and small_sample (fewer than SMALL_SAMPLE_PAIRS pairs).

    Returns {"love_vs_okay": {"accuracy", "interval", "log_loss", "log_loss_uncalibrated",
    "pairs", "small_sample"}, "okay_vs_reject": …, "love_vs_reject": …, "all": …,
    "reliability": reliability_bins of every pair}; where a kind has no pairs its figures are
    None and it has no interval or small_sample. "all" pools every pair (so the commonest kind weighs most).
    """
    tiers = [t for _, t in eval_items]
    u = np.array([model.utility(f) for f, _ in eval_items], dtype=np.float64)
    kinds = _pairs_by_kind(tiers)
    report: dict[str, Any] = {}
    every: list[np.ndarray] = []
    for better, worse in PAIR_KINDS:
        win, lose = kinds.get(f"{better}>{worse}", (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        margin = u[win] - u[lose]
        every.append(margin)
        report[f"{better}_vs_{worse}"] = _pair_figures(margin, model.temperature)
    report["all"] = _pair_figures(np.concatenate(every), model.temperature)
    report["reliability"] = reliability_bins(np.concatenate(every))
    return report


def reliability_bins(margins: np.ndarray, bins: int = RELIABILITY_BINS) -> list[dict[str, Any]]:
    """Predicted P against observed frequency, for pairs with `margins` = better minus worse
    calibrated utility. Each pair counts in both orders (P = sigmoid(margin), observed 1, and
    1 − P, observed 0), so the diagram is symmetric about 0.5 as the judge is. One row per
    equal-width bin of predicted P that holds any: {"low", "high", "count", "mean_predicted",
    "observed"}."""
    m = np.asarray(margins, dtype=np.float64)
    if not len(m):
        return []
    p_first = np.asarray(_sigmoid(m))
    predicted = np.concatenate([p_first, 1.0 - p_first])
    observed = np.concatenate([np.ones(len(m)), np.zeros(len(m))])
    which = np.minimum((predicted * bins).astype(np.int64), bins - 1)
    rows = []
    for b in range(bins):
        inside = which == b
        if inside.any():
            rows.append({"low": b / bins, "high": (b + 1) / bins, "count": int(inside.sum()),
                         "mean_predicted": float(predicted[inside].mean()),
                         "observed": float(observed[inside].mean())})
    return rows


def _pair_figures(margin: np.ndarray, temperature: float) -> dict[str, Any]:
    """Accuracy (with its Wilson interval) and log-loss of calibrated margins (better minus
    worse), and the log-loss the same pairs had before calibration (margins times the temperature)."""
    n = len(margin)
    if not n:
        return {"accuracy": None, "log_loss": None, "log_loss_uncalibrated": None, "pairs": 0}
    hits = float((margin > 0).sum() + 0.5 * (margin == 0).sum())
    interval = wilson_interval(hits, n)
    return {
        "accuracy": hits / n,
        "interval": [round(interval[0], 4), round(interval[1], 4)] if interval else None,
        "log_loss": float(np.logaddexp(0.0, -margin).mean()),
        "log_loss_uncalibrated": float(np.logaddexp(0.0, -margin * temperature).mean()),
        "pairs": int(n),
        "small_sample": n < SMALL_SAMPLE_PAIRS,
    }


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
