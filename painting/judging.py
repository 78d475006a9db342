"""Judge and quality-scorer factories, one instance per worker process and configuration.

The judge compares a painting with reference images, and the `taste` judge needs the pool's
trained taste model. Both belong to curation, a layer above this one, so curation hands this
layer a `ReferenceLibrary` at start-up (`CurationConfig.ready`) instead of being imported here.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from paintenv.judges import load_judge
from paintenv.probes import TasteStatus
from paintenv.quality import load_quality
from paintenv.reward import Recipe


@dataclass(frozen=True)
class PoolInfo:
    id: int
    label: str  # name:vVERSION
    subject: str  # a subject its references show (a default prompt), "" if none


class ReferenceLibrary(Protocol):
    def images(self, reference_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """The reference images, in the order asked; KeyError for an id that does not exist."""

    def taste_model(self, pool_id: int) -> tuple[str, dict]:
        """(version, params) of the pool's taste model, trained first if it has none yet."""

    def taste_status(self, pool_id: int) -> TasteStatus:
        """Whether the pool has a taste model, and its graded train split (for the probe)."""

    def pool(self, label: str) -> PoolInfo:
        """A frozen pool by `name` (latest version) or `name:VERSION`; LookupError if none."""

    def group_references(self, pool_id: int, *, count: int, key: tuple[int, ...]) -> list[int]:
        """The references one GRPO group is judged against (train split, half love, half okay)."""


_library: ReferenceLibrary | None = None
_judges: dict[tuple, object] = {}
_scorers: dict[str, object] = {}


def use_reference_library(library: ReferenceLibrary) -> None:
    global _library
    _library = library


def reference_library() -> ReferenceLibrary:
    if _library is None:
        raise RuntimeError("no reference library: the curation app registers one when Django starts")
    return _library


def judge_for(recipe: Recipe, pool_id: int | None):
    """The recipe's judge; models load once per process (a retrained taste model is a new key)."""
    if recipe.judge == "taste":
        if pool_id is None:
            raise ValueError("the taste judge needs a pool (its model is trained on the pool's grades)")
        version, params = reference_library().taste_model(pool_id)
        key: tuple = ("taste", pool_id, version)
        if key not in _judges:
            _judges[key] = load_judge("taste", params=params)
        return _judges[key]
    key = (recipe.judge, recipe.criteria)
    if key not in _judges:
        _judges[key] = load_judge(recipe.judge, criteria=recipe.criteria) if recipe.judge == "vlm" else load_judge(recipe.judge)
    return _judges[key]


def scorer_for(name: str):
    if name not in _scorers:
        _scorers[name] = load_quality(name)
    return _scorers[name]
