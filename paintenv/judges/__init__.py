"""Pairwise judges: compare(candidate_png, reference_png, *, prompt, candidate_first) -> P | None.

P is the probability that the candidate is the better watercolour (a VLM's verdict gives
0 or 1). None means the judge could not answer (infrastructure), never "the candidate lost".
Backends are chosen by short name or dotted path: `vlm` (OpenAI-compatible endpoint) and
`taste` (embedded preference model trained on the curator's grades).
"""
from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any, Protocol

BACKENDS = {
    "vlm": "paintenv.judges.vlm.VLMJudge",
    "taste": "paintenv.judges.taste.TasteJudge",
}


class Judge(Protocol):
    name: str

    def compare(
        self, candidate_png: bytes, reference_png: bytes, *, prompt: str, candidate_first: bool = True
    ) -> float | None | tuple[float | None, str]: ...  # optionally with the judge's reason


@dataclass
class OrderVerdict:
    candidate_first: bool
    p_candidate: float | None
    reason: str = ""


@dataclass
class ReferenceVerdict:
    reference_id: Any
    orders: list[OrderVerdict] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        """Mean over both orders; None if either order failed (the reference is dropped)."""
        values = [o.p_candidate for o in self.orders]
        if len(values) < 2 or any(v is None for v in values):
            return None
        return fmean(values)


@dataclass
class JudgeResult:
    score: float | None  # mean over the references that resolved; None if none did
    references: list[ReferenceVerdict]

    @property
    def dropped(self) -> int:
        return sum(1 for r in self.references if r.score is None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "dropped": self.dropped,
            "references": [
                {"reference_id": r.reference_id, "score": r.score, "orders": [asdict(o) for o in r.orders]}
                for r in self.references
            ],
        }


DEFAULT_CONCURRENCY = 8  # both orders × 4 references: one painting's calls all at once


def _one_order(judge: Judge, candidate_png: bytes, reference_png: bytes, *, prompt: str,
               candidate_first: bool) -> OrderVerdict:
    reason = ""
    try:
        outcome = judge.compare(candidate_png, reference_png, prompt=prompt, candidate_first=candidate_first)
    except Exception as exc:  # noqa: BLE001 - a judge that raises is a failed judgement
        outcome, reason = None, f"{type(exc).__name__}: {exc}"
    if isinstance(outcome, tuple):  # (p, reason) from judges that explain themselves
        outcome, reason = outcome
    return OrderVerdict(candidate_first, outcome, reason)


def judge_against_references(
    judge: Judge, candidate_png: bytes, references: list[tuple[Any, bytes]], *, prompt: str,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> JudgeResult:
    """Judge one painting against the group's references, always in both presentation orders.

    The calls run concurrently, at most `concurrency` at a time (a VLM judge spends its time
    waiting on the endpoint), or the judge's own `max_concurrency` where it has one; the
    verdicts keep the order of the references, candidate first then second. Judges must be
    thread-safe (the vlm and taste judges are).
    """
    calls = [(reference_id, reference_png, candidate_first)
             for reference_id, reference_png in references for candidate_first in (True, False)]

    def run(call: tuple[Any, bytes, bool]) -> OrderVerdict:
        _reference_id, reference_png, candidate_first = call
        return _one_order(judge, candidate_png, reference_png, prompt=prompt, candidate_first=candidate_first)

    # A judge may cap it: the taste judge is CPU-bound under the GIL, where threads only cost.
    workers = max(1, min(int(concurrency), getattr(judge, "max_concurrency", None) or len(calls), len(calls)))
    if workers == 1:
        orders = [run(call) for call in calls]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            orders = list(pool.map(run, calls))  # map keeps the calls' order
    verdicts = []
    for index, (reference_id, _png) in enumerate(references):
        verdicts.append(ReferenceVerdict(reference_id, orders=orders[2 * index:2 * index + 2]))
    resolved = [v.score for v in verdicts if v.score is not None]
    return JudgeResult(score=fmean(resolved) if resolved else None, references=verdicts)


def load_backend(name: str, table: dict[str, str], **config: Any):
    """Instantiate a backend from a short name or a dotted path `package.module.Class`."""
    path = table.get(name, name)
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(table)} or a dotted path")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load backend {name!r} ({path}): {exc}") from exc
    return cls(**config)


def load_judge(name: str, **config: Any) -> Judge:
    return load_backend(name, BACKENDS, **config)
